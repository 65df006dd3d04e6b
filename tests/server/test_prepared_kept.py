"""What a prepared statement keeps between its Binds and Describes (a plain INSERT's target
table's columns, a statement's ParameterDescription and RowDescription) is kept per catalog
version: a table changed by another connection meanwhile is looked up again, so the next
Bind or Describe sees it as PostgreSQL would."""

from __future__ import annotations

import struct

from serve_clients import raw, send, until_ready


def test_a_prepared_insert_sees_a_column_added_meanwhile(server, table_name: str) -> None:
    with server.connect() as a, server.connect() as b:
        a.prepare_threshold = 0  # prepared at its first run: its Binds collect rows
        b.execute(f"CREATE TABLE {table_name} (id int, name text)")
        for i in range(3):
            a.execute(f"INSERT INTO {table_name} VALUES (%s, %s)", (i, f"n{i}"))
        b.execute(f"ALTER TABLE {table_name} ADD COLUMN w int DEFAULT 7")
        a.execute(f"INSERT INTO {table_name} VALUES (%s, %s)", (3, "n3"))  # w: its DEFAULT
        b.execute(f"ALTER TABLE {table_name} ADD COLUMN z int NOT NULL DEFAULT 5")
        a.execute(f"INSERT INTO {table_name} VALUES (%s, %s)", (4, "n4"))
        got = b.execute(f"SELECT id, name, w, z FROM {table_name} ORDER BY id").fetchall()
        assert got == [(0, "n0", 7, 5), (1, "n1", 7, 5), (2, "n2", 7, 5), (3, "n3", 7, 5)] + [
            (4, "n4", 7, 5)
        ]
        b.execute(f"DROP TABLE {table_name}")


def _parse(name: bytes, query: bytes, oids: list[int]) -> bytes:
    return name + b"\0" + query + b"\0" + struct.pack(f"!h{len(oids)}i", len(oids), *oids)


def _described(sock, name: bytes) -> tuple[bytes, bytes]:
    """A Describe of statement ``name``: its ParameterDescription and RowDescription."""
    send(sock, b"D", b"S" + name + b"\0")
    send(sock, b"S")
    got = until_ready(sock)
    assert [k for k, _ in got] == [b"t", b"T", b"Z"], got
    return got[0][1], got[1][1]


def test_a_described_statement_is_described_again_after_a_catalog_change(
    server, table_name: str
) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (a int, b text)")
    sock = raw(server)
    send(sock, b"P", _parse(b"s1", f"SELECT * FROM {table_name} WHERE a = $1".encode(), [0]))
    send(sock, b"S")
    assert [k for k, _ in until_ready(sock)] == [b"1", b"Z"]
    params, row = _described(sock, b"s1")
    assert params == struct.pack("!hi", 1, 23)  # int4, from the column compared with
    assert struct.unpack("!h", row[:2]) == (2,)
    assert _described(sock, b"s1") == (params, row)  # the same again
    with server.connect() as c:
        c.execute(f"ALTER TABLE {table_name} ADD COLUMN c bigint")
    again = _described(sock, b"s1")
    assert again[0] == params and struct.unpack("!h", again[1][:2]) == (3,)
    assert b"c\0" in again[1]
    with server.connect() as c:  # dropped and made again with another type: its own
        c.execute(f"DROP TABLE {table_name}")
        c.execute(f"CREATE TABLE {table_name} (a text, b text)")
    send(sock, b"P", _parse(b"s2", f"SELECT * FROM {table_name} WHERE a = $1".encode(), [0]))
    send(sock, b"S")
    until_ready(sock)
    assert _described(sock, b"s2")[0] == struct.pack("!hi", 1, 25)  # text
    sock.close()
