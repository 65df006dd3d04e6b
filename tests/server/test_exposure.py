"""A server that can face a network: file access needs a role and an allowed folder, listening
beyond loopback needs passwords (or --insecure), and credentials never leak."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from postgres_server import database_for_test
from test_status import status_url

import changeflow
from changeflow.cdc.files import write_messages
from changeflow.cdc.writer import CdcWriter
from changeflow.time import Antichain
from changeflow.updates import canonical_json


def _serve(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``changeflow serve`` that is expected to refuse to start."""
    cmd = [sys.executable, "-m", "changeflow.cli", "serve", "--home", str(home), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def _cdc(folder: Path) -> Path:
    """A CDC v2 folder holding the row {"a": 1} at time 0, complete up to 1."""
    messages = CdcWriter().write([(canonical_json({"a": 1}), 0, 1)], Antichain([1]))
    write_messages(folder, list(messages), "jsonl", prefix="step")
    return folder


def _passwords(tmp_path: Path) -> Path:
    path = tmp_path / "passwords"
    path.write_text(
        "root:r00t\nreader:r\nwriter:w\nplain:p\n"
        "[roles]\nroot: superuser\nreader: pg_read_server_files\nwriter: pg_write_server_files\n"
    )
    return path


def test_listening_beyond_loopback_needs_passwords_or_insecure(tmp_path: Path) -> None:
    bare = _serve(tmp_path / "h", "--listen", "0.0.0.0:0", "--http", "off")
    assert bare.returncode == 1
    assert bare.stderr.startswith("error: --listen 0.0.0.0:0 accepts clients beyond"), bare.stderr
    assert "--password-file" in bare.stderr and "--insecure" in bare.stderr
    assert "Traceback" not in bare.stderr
    page = _serve(
        tmp_path / "h",
        *("--listen", "0.0.0.0:0", "--password-file", str(_passwords(tmp_path))),
        *("--http", "0.0.0.0:0"),
    )
    assert page.returncode == 1
    assert "the status page has no authentication" in page.stderr, page.stderr


def test_beyond_loopback_with_passwords_or_insecure_starts(start_server, tmp_path: Path) -> None:
    # conftest's start() listens on 127.0.0.1; a later --listen wins with click
    protected = start_server(
        "--password-file", str(_passwords(tmp_path)), "--listen", "0.0.0.0:0", "--http", "off"
    )
    with protected.connect(user="plain", password="p") as c:
        assert c.execute("SELECT 1").fetchone() == (1,)
    insecure = start_server("--listen", "0.0.0.0:0", "--http", "0.0.0.0:0", "--insecure")
    with insecure.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_server_files_need_a_role_and_an_allowed_folder(start_server, tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    inside = _cdc(allowed / "cdc")
    outside = _cdc(tmp_path / "elsewhere")
    server = start_server(
        *("--password-file", str(_passwords(tmp_path))),
        *("--allow-path", str(allowed), "--http", "off"),
    )
    columns = "FORMAT JSON (a int)"

    def refused(user: str, sql: str, says: str) -> None:
        with server.connect(user=user, password=user[0] if user != "root" else "r00t") as c:
            with pytest.raises(psycopg.Error) as e:
                c.execute(sql)
            assert e.value.sqlstate == "42501", e.value
            assert says in str(e.value), e.value

    refused("plain", f"CREATE SOURCE s1 FROM CDC '{inside}' {columns}", "pg_read_server_files")
    refused("writer", f"CREATE SOURCE s1 FROM CDC '{inside}' {columns}", "pg_read_server_files")
    refused("root", "CREATE SOURCE s1 FROM CDC '/etc' FORMAT JSON (a int)", "--allow-path")
    refused("reader", f"CREATE SOURCE s1 FROM CDC '{outside}' {columns}", "outside the folders")
    # a path that climbs out of the allowed folder is outside it
    refused("reader", f"CREATE SOURCE s1 FROM CDC '{allowed}/../elsewhere' {columns}", "outside")
    with server.connect(user="reader", password="r") as c:
        c.execute(f"CREATE SOURCE s1 FROM CDC '{inside}' {columns}")
        assert c.execute("SELECT a FROM s1").fetchall() == [(1,)]

    sink = f"'sqlite:{allowed}/out.sqlite' KEY (a)"
    refused("reader", f"CREATE SINK k1 FROM s1 INTO {sink}", "pg_write_server_files")
    refused("plain", f"CREATE SINK k1 FROM s1 INTO {sink}", "pg_write_server_files")
    anywhere = tmp_path / "anywhere.sqlite"
    refused("writer", f"CREATE SINK k1 FROM s1 INTO 'sqlite:{anywhere}' KEY (a)", "--allow-path")
    assert not anywhere.exists()
    with server.connect(user="writer", password="w") as c:
        c.execute(f"CREATE SINK k1 FROM s1 INTO {sink}")
    with server.connect(user="root", password="r00t") as c:
        assert c.pgconn.parameter_status(b"is_superuser") == b"on"
        c.execute(f"CREATE SINK k2 FROM s1 INTO 'sqlite:{allowed}/two.sqlite' KEY (a)")
    with server.connect(user="plain", password="p") as c:
        assert c.pgconn.parameter_status(b"is_superuser") == b"off"
    assert (allowed / "out.sqlite").exists() and (allowed / "two.sqlite").exists()


def test_the_default_allowed_folder_is_the_home(start_server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = start_server("--http", "off", home=home)
    _cdc(home / "feeds" / "a")
    outside = _cdc(tmp_path / "outside")
    with server.connect() as c:  # trust: a superuser, still only within the home
        with pytest.raises(psycopg.Error) as e:
            c.execute(f"CREATE SOURCE s FROM CDC '{outside}' FORMAT JSON (a int)")
        assert e.value.sqlstate == "42501"
        c.execute(f"CREATE SOURCE s FROM CDC '{home}/feeds/a' FORMAT JSON (a int)")
        assert c.execute("SELECT a FROM s").fetchall() == [(1,)]


def test_the_embedded_api_keeps_full_access(tmp_path: Path) -> None:
    outside = _cdc(tmp_path / "outside")
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        conn.execute(f"CREATE SOURCE s FROM CDC '{outside}' FORMAT JSON (a int)")
        assert conn.execute("SELECT a FROM s").fetchall() == [(1,)]
    finally:
        conn.close()


SECRET = "SeCrEt-pw-42"


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.read().decode()


@pytest.mark.postgres
def test_a_sink_password_never_shows(start_server, tmp_path: Path, postgres_url: str) -> None:
    """The password of a sink's URL is in no answer, page, metric, error or log line."""
    url = urlsplit(database_for_test(postgres_url, "secret"))
    user = url.username or "postgres"
    with_secret = url._replace(netloc=f"{user}:{SECRET}@{url.hostname}:{url.port}").geturl()
    closed = f"postgresql://{user}:{SECRET}@127.0.0.1:1/nowhere"
    server = start_server("--http", "127.0.0.1:0")
    page = status_url(server)
    seen: list[str] = []
    with server.connect() as c:
        c.execute("CREATE TABLE pay (id int NOT NULL, v int)")
        c.execute("INSERT INTO pay VALUES (1, 2)")
        c.execute(f"CREATE SINK pay_out FROM pay INTO '{with_secret}' KEY (id)")
        for sql in ("SHOW CREATE SINK pay_out", "SHOW SINKS"):
            seen.append(repr(c.execute(sql).fetchall()))
        assert "***" in seen[0] and user in seen[0], seen[0]
        with pytest.raises(psycopg.Error) as e:
            c.execute(f"CREATE SINK nowhere FROM pay INTO '{closed}' KEY (id)")
        seen.append(str(e.value))
        with pytest.raises(psycopg.Error) as e:  # a statement the server cannot parse
            c.execute(f"CREATE SINK bad FROM pay INTO '{closed}' KEY id")
        seen.append(str(e.value))
    deadline = time.monotonic() + 60
    while "pay_out" not in fetch(page + "status.json"):  # the page samples every second
        assert time.monotonic() < deadline
        time.sleep(0.2)
    seen += [fetch(page + path) for path in ("", "status.json", "metrics")]
    assert "***" in seen[-2], seen[-2]
    embedded = changeflow.connect(tmp_path / "embedded", host_seconds=0)
    try:
        embedded.execute("CREATE TABLE t (id int NOT NULL)")
        with pytest.raises(changeflow.Error) as e:
            embedded.execute(f"CREATE SINK s FROM t INTO '{closed}' KEY (id)")
        seen.append(str(e.value))
    finally:
        embedded.close()
    assert server.stop() == 0
    seen.append(server.stderr())
    for text in seen:
        assert SECRET not in text, text


def test_silent_sockets_hold_no_slot_and_a_superuser_keeps_one(
    start_server, tmp_path: Path
) -> None:
    """Connections that send nothing hold no client slot and are closed after 10 s, not 60;
    the last slot of --max-clients is a superuser's (53300 for anyone else)."""
    server = start_server(
        *("--password-file", str(_passwords(tmp_path)), "--http", "off"),
        *("--max-clients", "3", "--reserved-connections", "1"),
    )
    silent = [socket.create_connection((server.host, server.port)) for _ in range(5)]
    opened = time.monotonic()
    try:
        first = server.connect(user="plain", password="p")
        second = server.connect(user="writer", password="w")
        with pytest.raises(psycopg.OperationalError) as e:
            server.connect(user="reader", password="r")
        assert "reserved for roles with the SUPERUSER attribute" in str(e.value)
        root = server.connect(user="root", password="r00t")
        assert root.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(psycopg.OperationalError) as e:
            server.connect(user="root", password="r00t")
        assert "too many clients already" in str(e.value)
        for conn in (first, second, root):
            conn.close()
        for sock in silent:
            sock.settimeout(40)
            assert sock.recv(1) == b""  # closed by the server
        assert time.monotonic() - opened < 30
    finally:
        for sock in silent:
            sock.close()
