"""Faults: garbage and truncated messages, clients that vanish mid-query, cancel requests and
a huge result. After each, the server answers the next client."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time

import psycopg
import pytest
from psycopg import errors
from serve_clients import closed_after, message, packet, raw, recv_exact


def _still_serves(server) -> None:
    with server.connect() as c:
        assert c.execute("SELECT 'alive'").fetchone() == ("alive",)


def test_ssl_and_gssenc_requests_without_tls(server) -> None:
    sock = raw(server, startup=False)
    sock.sendall(packet(80877103))
    assert recv_exact(sock, 1) == b"N"
    sock.sendall(packet(80877104))
    assert recv_exact(sock, 1) == b"N"
    sock.sendall(packet(196608, b"user\0raw\0\0"))
    kinds = []
    while not kinds or kinds[-1] != b"Z":
        kinds.append(message(sock)[0])
    assert kinds[0] == b"R" and b"K" in kinds and b"S" in kinds
    sock.sendall(b"X\0\0\0\4")
    assert closed_after(sock) == []


@pytest.mark.parametrize(
    "garbage",
    [
        b"\0\0\x27\x11" + os.urandom(60),  # random bytes after too long a length
        b"\xff\xff\xff\xff" + os.urandom(16),  # a negative length
        packet(0x00020000, b"user\0raw\0\0"),  # protocol 2
    ],
)
def test_garbage_before_startup(server, garbage: bytes) -> None:
    sock = raw(server, startup=False)
    sock.sendall(garbage)
    kinds = closed_after(sock)
    assert kinds in ([], [b"E"])
    _still_serves(server)


@pytest.mark.parametrize(
    "garbage",
    [
        b"Q\xff\xff\xff\xf0",  # a message length that is no length
        b"?\0\0\0\4",  # an unknown message type
        b"P\0\0\0\x08abc\0",  # Parse without its query and parameter fields
        b"\x01\0\0\0\xc8" + os.urandom(196),  # random bytes of a type no message has
    ],
)
def test_garbage_after_startup(server, garbage: bytes) -> None:
    sock = raw(server)
    sock.sendall(garbage)
    kinds = closed_after(sock)
    assert set(kinds) <= {b"E", b"1", b"2", b"C", b"Z", b"n", b"T", b"D", b"I", b"N"}
    _still_serves(server)


def test_truncated_message_then_gone(server) -> None:
    sock = raw(server)
    sock.sendall(b"Q\0\0\0\x64SELECT")  # promises 100 bytes, sends 6
    sock.close()
    sock = raw(server, startup=False)
    sock.sendall(struct.pack("!i", 200) + b"\0\3\0\0user")  # a truncated startup packet
    sock.close()
    _still_serves(server)


def test_client_killed_mid_query(server, table_name: str) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (a int)")
        c.execute(f"INSERT INTO {table_name} VALUES (1)")
    child = textwrap.dedent(
        f"""
        import psycopg, sys
        c = psycopg.connect({server.dsn()!r}, autocommit=True)
        with c.cursor().copy("COPY (SUBSCRIBE {table_name}) TO STDOUT") as copy:
            for row in copy.rows():
                print("streaming", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "streaming"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # a raw client vanishing while its query's result is being sent
    sock = raw(server)
    sock.sendall(b"Q" + struct.pack("!i", 4 + 29) + f"SELECT * FROM {table_name};\0".encode())
    sock.close()
    _still_serves(server)
    with server.connect() as c:
        c.execute(f"INSERT INTO {table_name} VALUES (2)")
        assert c.execute(f"SELECT count(*) FROM {table_name}").fetchone() == (2,)


def test_cancel_a_waiting_fetch(server, table_name: str) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (a int)")
        c.execute("BEGIN")
        c.execute(f"DECLARE w CURSOR FOR SUBSCRIBE {table_name}")
        timer = threading.Timer(0.5, c.cancel)
        timer.start()
        start = time.monotonic()
        with pytest.raises(errors.QueryCanceled):
            c.execute("FETCH ALL w")  # waits for rows that never come
        assert time.monotonic() - start < 10
        c.execute("ROLLBACK")
        assert c.execute("SELECT 3").fetchone() == (3,)


def test_huge_result_is_streamed(server, table_name: str) -> None:
    """90,000 rows (a cross join) in text, binary and COPY; a client that stops reading."""
    n = 300
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (a int, b text)")
        with c.cursor().copy(f"COPY {table_name} FROM STDIN") as copy:
            copy.write(b"".join(b"%d\tvalue number %d\n" % (i, i) for i in range(n)))
        query = f"SELECT x.a, y.a AS a2, x.b FROM {table_name} x, {table_name} y"
        total = 0
        with c.cursor().copy(f"COPY ({query}) TO STDOUT") as copy:
            for _ in copy.rows():
                total += 1
        assert total == n * n
        with c.cursor(name="huge", withhold=True) as cur:  # (autocommit: as PostgreSQL)
            cur.itersize = 20_000
            cur.execute(query)
            assert sum(1 for _ in cur) == n * n
    # a client that asks for it all and reads only the start
    sock = raw(server)
    text = f"{query};\0".encode()
    sock.sendall(b"Q" + struct.pack("!i", 4 + len(text)) + text)
    recv_exact(sock, 4096)
    sock.close()
    _still_serves(server)


def test_bad_parameters_are_errors_not_disconnects(conn: psycopg.Connection) -> None:
    pg = conn.pgconn
    res = pg.exec_params(b"SELECT $1::integer", [b"12x"], [23])
    assert res.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"22P02"
    res = pg.exec_params(b"SELECT $1", [b"\x00\x01"], [1700], [1])  # a numeric too short
    assert res.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"22P03"
    res = pg.exec_params(b"SELECT $1", [b"abc"], [600], [1])  # point: no binary decoding
    assert res.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"0A000"
    assert conn.execute("SELECT %s::text", ("fine",)).fetchone() == ("fine",)
