"""A throwaway PostgreSQL server for tests and benchmarks.

The server lives in a temporary folder (data dir and unix socket), listens on a free port of
127.0.0.1 with trust authentication, runs without fsync, and is stopped and removed on exit.
PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` system user.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["create_database", "throwaway_postgres"]

_INSTALL_HINT = "install PostgreSQL (apt-get install postgresql) so that initdb and pg_ctl exist"


def _bindir() -> Path:
    """The folder of initdb and pg_ctl: ``pg_config --bindir``, else PATH."""
    try:
        out = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=True
        ).stdout.strip()
        if out and (Path(out) / "initdb").exists() and (Path(out) / "pg_ctl").exists():
            return Path(out)
    except (OSError, subprocess.CalledProcessError):
        pass
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    raise RuntimeError(f"PostgreSQL server binaries not found: {_INSTALL_HINT}")


def _free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list[str], as_postgres: bool) -> None:
    """Run a server binary (as ``postgres`` if needed); raise with its output if it fails."""
    if as_postgres:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed with exit code {proc.returncode}:\n{proc.stdout}{proc.stderr}"
        )


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """Start a fresh PostgreSQL server; yield ``postgresql://postgres@127.0.0.1:PORT/postgres``."""
    bindir = _bindir()
    as_postgres = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="changeflow-pg-"))
    data, sockets, log = root / "data", root / "sockets", root / "server.log"
    sockets.mkdir()
    if as_postgres:
        try:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(sockets, "postgres", "postgres")
        except LookupError:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(
                f"running as root, but there is no 'postgres' system user: {_INSTALL_HINT}"
            ) from None
    try:
        initdb = [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
        _run([*initdb, "-E", "UTF8", "--no-sync"], as_postgres)
        for attempt in range(3):  # the free port may be taken before the server binds it
            port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -c port={port} "
                f"-c unix_socket_directories={sockets} -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c shared_buffers=16MB -c max_connections=100"
            )
            pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options]
            try:
                _run([*pg_ctl, "-w", "-t", "60", "start"], as_postgres)
                break
            except RuntimeError as e:
                if attempt == 2:
                    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                    raise RuntimeError(f"{e}\nserver log:\n{tail}") from None
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        try:
            if (data / "postmaster.pid").exists():  # also after a start that timed out
                stop = [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
                _run(stop, as_postgres)
        finally:
            shutil.rmtree(root, ignore_errors=True)


def create_database(url: str, name: str) -> str:
    """Create the fresh database ``name`` on the server of ``url``; return its URL."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return urlsplit(url)._replace(path=f"/{name}").geturl()


def database_for_test(url: str, test_name: str) -> str:
    """A fresh database named after a test (and made unique); its URL."""
    test = re.sub(r"[^a-z0-9]+", "_", test_name.lower())[:30]
    return create_database(url, f"t_{test}_{uuid.uuid4().hex[:12]}")
