"""The extended query protocol message by message: Parse, Bind, Describe, Execute with a row
limit (PortalSuspended), Close, Sync, Flush; errors skip to Sync; EmptyQueryResponse."""

from __future__ import annotations

import socket
import struct

import psycopg
import pytest
from serve_clients import message, packet, raw, send, until_ready


def _parse(name: bytes, query: bytes, oids: list[int]) -> bytes:
    return name + b"\0" + query + b"\0" + struct.pack(f"!h{len(oids)}i", len(oids), *oids)


def _bind(portal: bytes, stmt: bytes, values: list[bytes], formats: list[int]) -> bytes:
    body = portal + b"\0" + stmt + b"\0" + struct.pack(f"!h{len(formats)}h", len(formats), *formats)
    body += struct.pack("!h", len(values))
    for v in values:
        body += struct.pack("!i", len(v)) + v
    return body + struct.pack("!h", 0)


def _execute(portal: bytes, limit: int) -> bytes:
    return portal + b"\0" + struct.pack("!i", limit)


def test_row_limit_suspends_the_portal(server, table_name: str) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (a int)")
        c.execute(f"INSERT INTO {table_name} VALUES (1), (2), (3), (4), (5)")
    sock = raw(server)
    query = f"SELECT a FROM {table_name} WHERE a > $1 ORDER BY a".encode()
    send(sock, b"P", _parse(b"s1", query, [23]))
    send(sock, b"B", _bind(b"p1", b"s1", [struct.pack("!i", 1)], [1]))
    send(sock, b"D", b"Pp1\0")
    send(sock, b"E", _execute(b"p1", 2))
    send(sock, b"H")
    kinds = [message(sock)[0] for _ in range(6)]
    assert kinds == [b"1", b"2", b"T", b"D", b"D", b"s"]
    send(sock, b"E", _execute(b"p1", 0))
    send(sock, b"C", b"Pp1\0")
    send(sock, b"S")
    got = until_ready(sock)
    assert [k for k, _ in got] == [b"D", b"D", b"C", b"3", b"Z"]
    assert got[0][1][-1:] == b"4" and got[2][1] == b"SELECT 2\0"
    # the named statement stays; describing it gives the parameter and row types
    send(sock, b"D", b"Ss1\0")
    send(sock, b"S")
    got = until_ready(sock)
    assert [k for k, _ in got] == [b"t", b"T", b"Z"]
    assert got[0][1] == struct.pack("!hi", 1, 23)
    sock.close()


def test_an_error_skips_to_sync(server) -> None:
    sock = raw(server)
    send(sock, b"P", _parse(b"", b"SELECT nope", []))
    send(sock, b"B", _bind(b"", b"", [], []))
    send(sock, b"E", _execute(b"", 0))
    send(sock, b"S")
    got = until_ready(sock)
    assert [k for k, _ in got] == [b"1", b"2", b"E", b"Z"]
    assert b"C42703\0" in got[2][1]
    send(sock, b"P", _parse(b"", b"", []))
    send(sock, b"B", _bind(b"", b"", [], []))
    send(sock, b"E", _execute(b"", 0))
    send(sock, b"S")
    assert [k for k, _ in until_ready(sock)] == [b"1", b"2", b"I", b"Z"]
    send(sock, b"Q", b"\0")
    assert [k for k, _ in until_ready(sock)] == [b"I", b"Z"]
    send(sock, b"P", _parse(b"", b"SELECT 1; SELECT 2", []))
    send(sock, b"S")
    got = until_ready(sock)
    assert [k for k, _ in got] == [b"E", b"Z"] and b"C42601\0" in got[0][1]
    sock.close()


def test_empty_query_and_notices(conn: psycopg.Connection) -> None:
    assert conn.pgconn.exec_(b"").status == psycopg.pq.ExecStatus.EMPTY_QUERY
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.sqlstate or ""))
    conn.execute("BEGIN")
    conn.execute("BEGIN")
    conn.execute("COMMIT")
    conn.execute("COMMIT")
    assert notices == ["25001", "25P01"]


def _executed(sock: socket.socket, statement: bytes) -> list[bytes]:
    """Parse, Bind and Execute ``statement``, then Flush (no Sync): the kinds of the three
    answers."""
    send(sock, b"P", _parse(b"", statement, []))
    send(sock, b"B", _bind(b"", b"", [], []))
    send(sock, b"E", _execute(b"", 0))
    send(sock, b"H")
    return [message(sock)[0] for _ in range(3)]


@pytest.mark.postgres
def test_a_commit_failing_at_sync_answers_as_postgresql_does(
    server, postgres_url: str, table_name: str
) -> None:
    """The implicit transaction of an UPDATE sent before Sync commits at Sync; when that commit
    fails (40001: a concurrent commit changed the row it read) the error follows the UPDATE's
    CommandComplete and precedes ReadyForQuery (idle: nothing of it written), as PostgreSQL
    answers a commit failing at Sync (a deferred key's violation), and the connection goes on."""
    from urllib.parse import urlsplit

    from postgres_server import create_database

    t = table_name
    pg_url = create_database(postgres_url, f"sync_{t}")
    with psycopg.connect(pg_url, autocommit=True) as pg:
        pg.execute(f"CREATE TABLE {t} (k int UNIQUE DEFERRABLE INITIALLY DEFERRED, v int)")
        pg.execute(f"INSERT INTO {t} VALUES (1, 0)")
    where = urlsplit(pg_url)
    theirs_sock = socket.create_connection((where.hostname, where.port), timeout=60)
    startup = b"user\0" + str(where.username).encode() + b"\0database\0" + where.path[1:].encode()
    theirs_sock.sendall(packet(196608, startup + b"\0\0"))
    while message(theirs_sock)[0] != b"Z":
        pass
    theirs = _executed(theirs_sock, f"INSERT INTO {t} VALUES (1, 1)".encode())
    send(theirs_sock, b"S")
    theirs_end = until_ready(theirs_sock)
    theirs_sock.close()

    with server.connect() as c:
        c.execute(f"CREATE TABLE {t} (k int PRIMARY KEY, v int)")
        c.execute(f"INSERT INTO {t} VALUES (1, 0)")
        sock = raw(server)
        ours = _executed(sock, f"UPDATE {t} SET v = v + 1 WHERE k = 1".encode())
        c.execute(f"UPDATE {t} SET v = v + 10 WHERE k = 1")  # commits first
        send(sock, b"S")
        ours_end = until_ready(sock)
        send(sock, b"Q", f"SELECT v FROM {t}\0".encode())
        after = until_ready(sock)
        sock.close()
        assert c.execute(f"SELECT v FROM {t}").fetchall() == [(10,)]
    assert theirs == ours == [b"1", b"2", b"C"]
    assert [k for k, _ in theirs_end] == [k for k, _ in ours_end] == [b"E", b"Z"]
    assert b"C23505\0" in theirs_end[0][1] and b"C40001\0" in ours_end[0][1]
    assert theirs_end[1][1] == ours_end[1][1] == b"I"
    assert [k for k, _ in after] == [b"T", b"D", b"C", b"Z"]
