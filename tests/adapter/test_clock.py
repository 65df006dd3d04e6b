"""Time moves by itself: with no write at all, the host's tick moves the read timestamp with
the wall clock, so a temporal filter retires rows as their time passes (in a query and in a
materialized view) and an idle table's frontier follows the clock."""

from __future__ import annotations

import time
from pathlib import Path

from changeflow.adapter.environment import EPOCH, Environment
from changeflow.adapter.session import Session
from changeflow.config import Config
from changeflow.time import to_bound


def rows(session: Session, sql: str) -> list[tuple]:
    return sorted(session.execute(sql)[-1].rows)


def test_rows_retire_as_the_clock_passes_without_a_write(tmp_path: Path) -> None:
    env = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    try:
        s = Session(env)
        s.execute("CREATE TABLE events (id int, until bigint)")
        s.execute("CREATE MATERIALIZED VIEW live AS SELECT id FROM events WHERE mz_now() <= until")
        soon = int(time.time() * 1000) + 1500
        s.execute(f"INSERT INTO events VALUES (1, {soon}), (2, {soon + 10**9})")
        query = "SELECT id FROM events WHERE mz_now() <= until"
        assert rows(s, query) == rows(s, "SELECT id FROM live") == [(1,), (2,)]
        table = env.catalog.load().by_name("events")
        assert table is not None
        before = to_bound(env.storage.state(table.id).upper)
        while time.time() * 1000 <= soon + 50:
            time.sleep(0.1)
        env.tick()  # no write since: only the clock moved
        assert env.oracle(EPOCH).read_ts() > soon
        assert rows(s, query) == rows(s, "SELECT id FROM live") == [(2,)]
        assert to_bound(env.storage.state(table.id).upper) > max(before or 0, soon)
    finally:
        env.close()


def test_a_commit_whose_process_died_before_the_oracle_heard_is_read_after_a_restart(
    tmp_path: Path,
) -> None:
    """The log holds the commit (durable), the oracle never heard of it (the process was
    killed between the two): a process that opens the home reads it at once, so a read never
    shows less than what a sink may already have delivered from the shard."""
    config = Config.load(home=str(tmp_path / "home"))
    env = Environment(config, host_seconds=None)
    Session(env).execute("CREATE TABLE t (v int)")
    table = env.catalog.load().by_name("t")
    assert table is not None
    frame = env.log.frame(table.id, [((1,), 1)])
    ts = env.log.commit({table.id: frame}, floor=env.oracle(EPOCH).read_ts() + 60_000)
    env.log.apply(tidy=True)  # a reader applied it to the shard; then the process died
    env.close()
    again = Environment(config, host_seconds=None)
    try:
        assert again.oracle(EPOCH).read_ts() >= ts
        assert rows(Session(again), "SELECT v FROM t") == [(1,)]
    finally:
        again.close()
