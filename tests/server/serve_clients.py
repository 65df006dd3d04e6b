"""Running the real psql client (from the machine's PostgreSQL binaries) in tests."""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
from pathlib import Path
from typing import Any

import psycopg


def _psql() -> str | None:
    try:
        bindir = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return shutil.which("psql")
    path = Path(bindir) / "psql"
    return str(path) if path.exists() else shutil.which("psql")


PSQL = _psql()


def psql(
    server: Any,
    *args: str,
    password: str | None = None,
    user: str = "tester",
    input: str | None = None,  # noqa: A002 (subprocess's name)
) -> subprocess.CompletedProcess[str]:
    """Run psql against ``server`` with ``args`` (and ``input`` on its stdin); its output and
    exit status."""
    assert PSQL is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env |= {"PGCONNECT_TIMEOUT": "10", "PSQLRC": "/dev/null"}
    if password is not None:
        env["PGPASSWORD"] = password
    cmd = [PSQL, "-X", "-w", "-h", server.host, "-p", str(server.port), "-U", user]
    cmd += ["-d", "materialize", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, input=input)


# -- raw protocol ---------------------------------------------------------------------------


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes (EOFError if the server closes first)."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def message(sock: socket.socket) -> tuple[bytes, bytes]:
    """One backend message: its type and body."""
    head = recv_exact(sock, 5)
    return head[:1], recv_exact(sock, struct.unpack("!i", head[1:])[0] - 4)


def packet(code: int, body: bytes = b"") -> bytes:
    """A startup-phase packet."""
    return struct.pack("!ii", len(body) + 8, code) + body


def raw(server: Any, startup: bool = True) -> socket.socket:
    """A plain socket to ``server``, past startup unless told otherwise."""
    sock = socket.create_connection((server.host, server.port), timeout=20)
    if startup:
        sock.sendall(packet(196608, b"user\0raw\0database\0materialize\0\0"))
        while message(sock)[0] != b"Z":
            pass
    return sock


def closed_after(sock: socket.socket) -> list[bytes]:
    """The kinds of the messages the server sends before it closes the connection."""
    kinds = []
    try:
        while True:
            kind, _ = message(sock)
            kinds.append(kind)
    except (EOFError, ConnectionResetError):
        return kinds
    finally:
        sock.close()


def send(sock: socket.socket, kind: bytes, body: bytes = b"") -> None:
    """Send one frontend message."""
    sock.sendall(kind + struct.pack("!i", len(body) + 4) + body)


def until_ready(sock: socket.socket) -> list[tuple[bytes, bytes]]:
    """The messages up to and including ReadyForQuery."""
    out = []
    while not out or out[-1][0] != b"Z":
        out.append(message(sock))
    return out


def notices_of(conn: psycopg.Connection, sql: str) -> list[tuple]:
    """The notices (severity, SQLSTATE, message, detail) ``sql`` makes on ``conn``."""
    heard: list[tuple] = []

    def handler(d: psycopg.errors.Diagnostic) -> None:
        heard.append((d.severity_nonlocalized, d.sqlstate, d.message_primary, d.message_detail))

    conn.add_notice_handler(handler)
    try:
        conn.execute(sql)
    finally:
        conn.remove_notice_handler(handler)
    return heard
