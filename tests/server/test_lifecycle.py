"""Stopping: SIGTERM ends the server cleanly (exit 0) while clients are connected, one of them
waiting in a FETCH; a restart on the same home has every acknowledged write (SIGKILL under
load: test_load.py). A home deleted underneath stops the server by itself, and a stop that
cannot finish (a statement stuck, holding the catalog lock) is forced after --stop-seconds."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time

import psycopg
import pytest

from changeflow.failpoints import HANG


def test_sigterm_stops_cleanly_and_restart_keeps_acknowledged_writes(start_server) -> None:
    server = start_server("--max-clients", "2")
    acknowledged = 0
    with server.connect() as c:
        c.execute("CREATE TABLE kept (a int NOT NULL, b text)")
        c.execute("CREATE MATERIALIZED VIEW kept_count AS SELECT count(*) AS n FROM kept")
        for i in range(30):
            c.execute("INSERT INTO kept VALUES (%s, %s)", (i, f"row {i}"))
            acknowledged += 1
        with c.transaction():
            for i in range(30, 40):
                c.execute("INSERT INTO kept VALUES (%s, %s)", (i, f"row {i}"))
        acknowledged += 10
    idle = server.connect()
    waiting = server.connect()
    with pytest.raises(psycopg.OperationalError) as refused:  # a third client at once
        server.connect()
    assert "too many clients" in str(refused.value)
    waiting.execute("BEGIN")
    waiting.execute("DECLARE w CURSOR FOR SUBSCRIBE (SELECT * FROM kept WHERE a < 0)")
    outcome: list[BaseException | None] = []

    def fetch() -> None:
        try:
            waiting.execute("FETCH ALL w")
            outcome.append(None)
        except psycopg.Error as e:
            outcome.append(e)

    thread = threading.Thread(target=fetch)
    thread.start()
    time.sleep(0.5)
    start = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - start < 30
    thread.join(10)
    assert outcome and isinstance(outcome[0], psycopg.OperationalError)
    with pytest.raises(psycopg.OperationalError):
        idle.execute("SELECT 1")
    idle.close()
    waiting.close()
    assert "Traceback" not in server.stderr()

    again = start_server(home=server.home)
    with again.connect() as c:
        assert c.execute("SELECT count(*), min(a), max(a) FROM kept").fetchone() == (40, 0, 39)
        assert c.execute("SELECT n FROM kept_count").fetchone() == (acknowledged,)
    assert again.stop() == 0


def test_a_home_deleted_underneath_stops_the_server_with_a_clear_error(start_server) -> None:
    server = start_server()
    with server.connect() as c:
        c.execute("CREATE TABLE doomed (a int)")
        c.execute("INSERT INTO doomed VALUES (1)")
    shutil.rmtree(server.home)
    assert server.proc.wait(120) == 1  # by itself: the host finds the store gone
    log = server.stderr()
    assert "error: the store this process opened is gone" in log and "Traceback" not in log


def test_sigterm_stops_a_server_whose_home_was_deleted(start_server) -> None:
    server = start_server()
    with server.connect() as c:
        c.execute("CREATE TABLE doomed (a int)")
    idle = server.connect()
    shutil.rmtree(server.home)
    assert server.stop(timeout=120) == 1
    idle.close()
    log = server.stderr()
    assert "error: the store this process opened is gone" in log and "Traceback" not in log


def _stuck(server) -> tuple[psycopg.Connection, threading.Thread]:  # noqa: ANN001
    """A client whose CREATE TABLE waits for good at a failpoint, holding the catalog lock
    (closing the home needs it), once the server says it got there."""
    stuck = server.connect()
    thread = threading.Thread(target=_run_until_gone, args=(stuck,), daemon=True)
    thread.start()
    while "failpoint ddl.before_catalog: waiting" not in server.stderr():
        assert server.proc.poll() is None, server.stderr()
        time.sleep(0.05)
    return stuck, thread


def _run_until_gone(conn: psycopg.Connection) -> None:
    with contextlib.suppress(psycopg.Error):
        conn.execute("CREATE TABLE stuck (a int)")


def test_a_stop_that_cannot_finish_is_forced_when_the_home_is_deleted(
    start_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HANG, "ddl.before_catalog")
    server = start_server("--stop-seconds", "1")
    stuck, thread = _stuck(server)
    shutil.rmtree(server.home)
    assert server.proc.wait(120) == 1  # by itself, though the statement never ends
    log = server.stderr()
    assert "stopped by force: the stop did not finish within 1 s" in log
    assert "error: the store this process opened is gone" in log and "Traceback" not in log
    thread.join(30)
    assert not thread.is_alive()  # the client saw the connection end
    stuck.close()
