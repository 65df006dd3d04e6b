"""A row updated many times: a read of the table's latest rows reads its live versions and a
bounded number of recent updates, not the row's whole history (``adapter.summed``), and
answers as the stored updates do, at the latest timestamp and at a transaction's earlier one."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.adapter.summed import FOLD_ROWS
from changeflow.config import Config
from changeflow.storage.frames import consolidate
from changeflow.storage.txns import reader

UPDATES = FOLD_ROWS + 200  # each a retraction and an insertion: over twice FOLD_ROWS


def _rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=repr)


def _shard(env: Environment, name: str) -> str:
    return next(i.id for i in env.catalog.load().items.values() if i.name.endswith(name))


def test_a_point_read_after_many_updates_of_one_row_reads_a_bounded_number(
    env: Environment,
) -> None:
    s, old = Session(env), Session(env)
    s.execute("CREATE TABLE hot (k int NOT NULL, v int)")
    s.execute("INSERT INTO hot VALUES (0, 0), (1, 0), (2, 0)")
    old.execute("BEGIN")
    assert old.execute("SELECT v FROM hot WHERE k = 0")[-1].rows == [(0,)]
    for i in range(UPDATES):
        s.execute("UPDATE hot SET v = v + 1 WHERE k = 0")
        if i % 100 == 0:
            env.tick()  # the host applies the write log to the shard
    shard = _shard(env, "hot")
    ts = env.read_ts("EpochMilliseconds", {shard})
    env.make_readable({shard}, ts, float("inf"))
    stored = reader(env.storage, shard).updates_until(ts)
    assert stored.num_rows > 2 * UPDATES  # the shard keeps the history
    read = env.updates_until(shard, ts)
    assert read.num_rows <= 3 + 2 * FOLD_ROWS  # live rows and the updates since last summed
    # the same rows (consolidate orders them by time only: rows of one time in input order)
    assert _rows(consolidate(read, ts)) == _rows(consolidate(stored, ts))
    assert s.execute("SELECT k, v FROM hot WHERE k = 0")[-1].rows == [(0, UPDATES)]
    assert sorted(s.execute("SELECT k, v FROM hot")[-1].rows) == [(0, UPDATES), (1, 0), (2, 0)]
    assert old.execute("SELECT v FROM hot WHERE k = 0")[-1].rows == [(0,)]  # its snapshot
    old.execute("COMMIT")
    s.execute("UPDATE hot SET v = v + 1 WHERE k = 0")
    assert s.execute("SELECT v FROM hot WHERE k = 0")[-1].rows == [(UPDATES + 1,)]


def test_a_change_of_columns_sums_the_table_again(env: Environment) -> None:
    s = Session(env)
    s.execute("CREATE TABLE altered (k int NOT NULL, v int)")
    s.execute("INSERT INTO altered VALUES (0, 0)")
    s.execute("UPDATE altered SET v = 1 WHERE k = 0")
    assert s.execute("SELECT * FROM altered WHERE k = 0")[-1].rows == [(0, 1)]
    s.execute("ALTER TABLE altered ADD COLUMN w text")
    s.execute("UPDATE altered SET w = 'x' WHERE k = 0")
    assert s.execute("SELECT * FROM altered WHERE k = 0")[-1].rows == [(0, 1, "x")]
    shard = _shard(env, "altered")
    assert shard in env.summed
    s.execute("DROP TABLE altered")
    env.tick()
    assert shard not in env.summed  # forgotten with the table


def test_summed_copies_are_bounded_in_total_least_recently_read_dropped_first(
    tmp_path: Path,
) -> None:
    own = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    try:
        s = Session(own)
        rows = ", ".join(f"({k}, {k % 7})" for k in range(300))
        for name in ("a", "b", "c"):
            s.execute(f"CREATE TABLE {name} (k int NOT NULL, v int)")
            s.execute(f"INSERT INTO {name} VALUES {rows}")
        own.tick()  # the host applies the write log to the shards
        a, b, c = (_shard(own, name) for name in ("a", "b", "c"))
        expected = [(300, sum(k % 7 for k in range(300)))]

        def read(name: str) -> None:
            assert s.execute(f"SELECT count(*), sum(v) FROM {name}")[-1].rows == expected

        read("a")
        one = own.summed.get(a).nbytes
        assert one > 0
        own.summed.limit = 2 * one + one // 2  # room for two of the three
        read("b")
        read("c")
        assert a not in own.summed and {b, c} <= own.summed.shards()
        assert own.summed.kept_bytes() <= own.summed.limit
        read("a")  # summed again; b is now the least recently read
        assert b not in own.summed and {a, c} <= own.summed.shards()
        read("c")
        read("b")  # a goes: c was read after it
        assert a not in own.summed and {b, c} <= own.summed.shards()
        own.summed.limit = one // 2  # no part fits: each read's is used, then dropped
        read("a")
        read("b")
        assert own.summed.kept_bytes() == 0 and not own.summed.shards() & {a, b, c}
        s.execute("UPDATE a SET v = v + 1 WHERE k = 0")
        assert s.execute("SELECT v FROM a WHERE k = 0")[-1].rows == [(1,)]
    finally:
        own.close()
