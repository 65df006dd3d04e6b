"""The host thread does not hold up reads and writes of items it is not working on: while its
tick is stuck in a sink whose target is locked, sessions write and read tables and views."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.config import Config


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()``'s value, run in a thread; an assertion error if it takes longer."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 — handed to the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still waiting after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def rows(session: Session, sql: str) -> list[tuple[Any, ...]]:
    return session.execute(sql)[-1].rows


def test_reads_and_writes_do_not_wait_for_a_stuck_sink(tmp_path: Path) -> None:
    env = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    try:
        s = Session(env)
        target = tmp_path / "out.sqlite"
        s.execute(
            "CREATE TABLE a (k int NOT NULL); CREATE TABLE b (k int NOT NULL);"
            "CREATE MATERIALIZED VIEW a_count AS SELECT count(*) AS n FROM a;"
            f"CREATE SINK b_out FROM b INTO 'sqlite:{target}' KEY (k);"
            "INSERT INTO b VALUES (1)"
        )
        sink = env.catalog.load().by_name("b_out")
        assert sink is not None
        blocker = sqlite3.connect(target, isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")  # the sink's next write waits on this lock
        tick = threading.Thread(target=env.tick, daemon=True)
        tick.start()
        deadline = time.monotonic() + 60
        while not env.item_lock(sink.id).locked():  # the host is in the sink's run now
            assert tick.is_alive() and time.monotonic() < deadline
            time.sleep(0.01)

        within(20, lambda: s.execute("INSERT INTO a VALUES (1), (2)"))
        assert within(20, lambda: rows(s, "SELECT count(*) FROM a")) == [(2,)]
        assert within(20, lambda: rows(s, "SELECT n FROM a_count")) == [(2,)]
        within(20, lambda: s.execute("INSERT INTO b VALUES (2)"))
        assert within(20, lambda: rows(s, "SELECT k FROM b ORDER BY k")) == [(1,), (2,)]
        assert tick.is_alive(), "the sink was not held up: the test proves nothing"

        blocker.execute("ROLLBACK")
        blocker.close()
        tick.join(60)
        assert not tick.is_alive()
        env.tick()
        with sqlite3.connect(target) as db:
            assert sorted(db.execute("SELECT k FROM b_out").fetchall()) == [(1,), (2,)]
    finally:
        env.close()
