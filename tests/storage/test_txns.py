"""Multi-shard transactions (the write log): commits are atomic across shards, applied once by
any process, and refused when stale or when a guarded commit's shards moved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.config import Config
from changeflow.failpoints import ENV, EXIT_CODE
from changeflow.storage import Storage
from changeflow.storage.txns import (
    KEY,
    WRITER,
    LogState,
    Moved,
    SerializationFailure,
    StaleTimestamp,
    TxnLog,
    reader,
)

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def open_storage(home: Path) -> Storage:
    return Storage.open(Config.load(home=str(home)))


def make_table(storage: Storage, name: str) -> None:
    read, _ = storage.create(name, SCHEMA, "EpochMilliseconds", writer=WRITER)
    storage.register_reader(name, WRITER, "test")
    storage.drop(read)


def contents(storage: Storage, shard: str, ts: int) -> list[tuple]:
    table = reader(storage, shard).snapshot_table(ts)
    return sorted(zip(table.column("k").to_pylist(), table.column("v").to_pylist(), strict=True))


@pytest.fixture
def storage(tmp_path: Path):
    s = open_storage(tmp_path / "home")
    make_table(s, "a")
    make_table(s, "b")
    yield s
    s.close()


def test_a_commit_writes_every_table_at_one_timestamp(storage: Storage) -> None:
    log = TxnLog(storage)
    log.commit(frames(log, {"a": [((1, "x"), 1)], "b": [((2, "y"), 1), ((3, "z"), 1)]}), ts=10)
    assert log.state().upper == 11 and len(log.state().pending) == 1
    log.ready({"a", "b"}, 10)
    assert contents(storage, "a", 10) == [(1, "x")]
    assert contents(storage, "b", 10) == [(2, "y"), (3, "z")]
    assert len(log.state().pending) == 1  # applied; the next commit forgets it
    assert log.commit(frames(log, {"a": [((4, "w"), 1)]})) == 11  # at the log's upper
    assert [e["ts"] for e in log.state().pending] == [11]
    log.ready({"a", "b"}, 11, tidy=True)
    assert contents(storage, "a", 11) == [(1, "x"), (4, "w")]
    assert log.state().pending == []
    assert not storage.blob.list("adapter-txns")


def test_a_commit_without_a_timestamp_takes_one_in_its_compare_and_set(storage: Storage) -> None:
    log = TxnLog(storage)
    assert log.commit(frames(log, {"a": [((1, "x"), 1)]}), floor=100) == 100
    assert log.commit(frames(log, {"a": [((2, "y"), 1)]}), floor=50) == 101  # past the upper
    log.ready({"a"}, 500)  # a reader moved the upper: later commits land after it
    assert log.commit(frames(log, {"b": [((3, "z"), 1)]}), floor=50) == 501
    assert contents(storage, "a", 500) == [(1, "x"), (2, "y")]


def test_a_stale_timestamp_is_refused(storage: Storage) -> None:
    log = TxnLog(storage)
    log.ready({"a"}, 20)
    with pytest.raises(StaleTimestamp):
        log.commit(frames(log, {"a": [((1, "x"), 1)]}), ts=20)
    log.commit(frames(log, {"a": [((1, "x"), 1)]}), ts=21)


def test_read_then_write_is_refused_when_its_inputs_changed(storage: Storage) -> None:
    log = TxnLog(storage)
    log.commit(frames(log, {"a": [((1, "x"), 1)]}), ts=5)
    with pytest.raises(SerializationFailure) as caught:
        log.commit(
            frames(log, {"b": [((1, "x"), 1)]}), ts=6, read_ts=4, read_shards=frozenset({"a"})
        )
    assert caught.value.fields["sqlstate"] == "40001"
    log.commit(frames(log, {"b": [((1, "x"), 1)]}), ts=6, read_ts=5, read_shards=frozenset({"a"}))


def test_bad_rows_are_refused_before_anything_is_written(storage: Storage) -> None:
    log = TxnLog(storage)
    with pytest.raises(Exception, match="k"):
        frames(log, {"a": [((None, "x"), 1)]})
    assert log.state().pending == [] and log.state().upper == 0


@pytest.mark.parametrize("point", ["txns.before_commit", "txns.partly_applied"])
def test_a_crash_leaves_the_commit_whole_or_absent(tmp_path: Path, point: str) -> None:
    home = tmp_path / "home"
    s = open_storage(home)
    make_table(s, "a")
    make_table(s, "b")
    s.close()
    script = (
        "from changeflow.storage.txns import TxnLog\n"
        "from changeflow.config import Config\n"
        "from changeflow.storage import Storage\n"
        f"s = Storage.open(Config.load(home={str(home)!r}))\n"
        "log = TxnLog(s)\n"
        "rows = {'a': [((1, 'x'), 1)], 'b': [((2, 'y'), 1)]}\n"
        "log.commit({s: log.frame(s, r) for s, r in rows.items()}, ts=7)\n"
        "log.ready({'a', 'b'}, 7)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env={**_env(), ENV: point})
    assert done.returncode == EXIT_CODE
    s = open_storage(home)
    try:
        TxnLog(s).ready({"a", "b"}, 8)
        got = (contents(s, "a", 8), contents(s, "b", 8))
        committed = point != "txns.before_commit"
        assert got == (([(1, "x")], [(2, "y")]) if committed else ([], []))
        TxnLog(s).ready({"a", "b"}, 9)  # applying again changes nothing
        assert (contents(s, "a", 9), contents(s, "b", 9)) == got
    finally:
        s.close()


def frames(log: TxnLog, rows: dict) -> dict:
    return {shard: log.frame(shard, r) for shard, r in rows.items()}


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_a_guarded_commit_is_refused_when_its_shards_moved(storage: Storage) -> None:
    log = TxnLog(storage)
    log.commit(frames(log, {"a": [((1, "x"), 1)]}), ts=5)
    with pytest.raises(Moved) as caught:
        log.commit(frames(log, {"b": [((1, "x"), 1)]}), ts=6, guard={"a": 4, "b": 4})
    assert (caught.value.upper, caught.value.moved) == (6, {"a"})
    assert log.state().upper == 6 and "b" not in log.state().last_write  # nothing written
    log.commit(frames(log, {"b": [((1, "x"), 1)]}), ts=6, guard={"a": 5, "b": 4})
    assert log.state().last_write == {"a": 5, "b": 6}


BIG = "x" * 5000  # a value that makes a write too large to ride in the log entry (a blob)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.tuples(
                st.just("commit"),
                st.sampled_from(["a", "b", "ab"]),
                st.integers(0, 3),
                st.booleans(),
            ),
            st.tuples(st.just("apply"), st.booleans()),
            st.tuples(st.just("read"), st.integers(0, 3), st.integers(0, 6)),
        ),
        max_size=12,
    )
)
def test_a_view_reads_what_ready_makes_readable(tmp_path_factory, ops: list) -> None:
    """Reading a table through :meth:`TxnLog.view` (the shard below its upper plus the log's
    pending writes, nothing written) gives what :meth:`TxnLog.ready` and a snapshot give,
    whatever was applied before (by this log or another process's), inline or in blobs; so do
    its updates after a time (:meth:`TxnLog.updates_after`)."""
    s = open_storage(tmp_path_factory.mktemp("view") / "home")
    try:
        make_table(s, "a")
        make_table(s, "b")
        log, other, k = TxnLog(s), TxnLog(s), 0
        for op in ops:
            if op[0] == "commit":
                _, tables, rows, big = op
                writes = {}
                for t in tables:
                    writes[t] = [((k + i, BIG if big else f"v{k + i}"), 1) for i in range(rows)]
                    if k and rows:
                        writes[t].append(((k - 1, f"v{k - 1}"), -1))  # a retraction too
                    k += rows + 1
                log.commit(frames(log, writes))
            elif op[0] == "apply":
                (log if op[1] else other).apply()
            else:
                ts = max(0, log.state().upper - 1) + op[1]
                views = log.view({"a", "b"}, ts)
                assert views is not None
                seen = {t: _rows(log.updates_until(t, ts, views[t]), ts) for t in "ab"}
                after = ts - 1 - op[2]
                since = {t: _rows(log.updates_after(t, after, views[t]), ts) for t in "ab"}
                other.ready({"a", "b"}, ts)
                assert seen == {t: _rows(log.updates_until(t, ts), ts) for t in "ab"}
                assert since == {
                    t: _rows(_after(log.updates_until(t, ts), after), ts) for t in "ab"
                }
    finally:
        s.close()


def _after(updates: pa.Table, after: int) -> pa.Table:
    import pyarrow.compute as pc

    return updates.filter(pc.greater(updates.column("_time"), after))


def _rows(updates: pa.Table, ts: int) -> list[tuple]:
    from changeflow.storage.frames import consolidate

    table = consolidate(updates, ts)
    return sorted(
        zip(*(table.column(n).to_pylist() for n in ("k", "v", "_diff")), strict=True),
        key=repr,
    )


def test_a_view_builds_on_the_one_before(storage: Storage) -> None:
    """A view of a table whose pending writes grew since the last one adds the new writes to
    the writes it made then (each decoded once), and gives what a fresh log's view gives."""
    log = TxnLog(storage)
    seen = []
    for k in range(4):
        ts = log.commit(frames(log, {"a": [((k, f"v{k}"), 1)], "b": [((k, None), 1)]}))
        views = log.view({"a"}, ts)
        fresh = TxnLog(storage).view({"a"}, ts)
        assert views is not None and fresh is not None
        seen.append(sorted(log.updates_until("a", ts, views["a"]).column("k").to_pylist()))
        assert seen[-1] == sorted(log.updates_until("a", ts, fresh["a"]).column("k").to_pylist())
    assert seen == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]
    assert log.pending == 4  # nothing applied: each view built on the one before


def test_the_log_names_the_spooled_writes_a_commit_carried(storage: Storage) -> None:
    """A commit carrying other processes' spooled writes names them with its timestamp in the
    same compare-and-set; the names outlive the entry's application and any number of later
    commits, until a holder of the turn finds their files gone from the spool."""
    log = TxnLog(storage)
    at = log.commit(frames(log, {"a": [((1, "x"), 1)]}), ts=5, carried=("w1", "w2"))
    assert log.state().carried == {"w1": at, "w2": at}
    log.ready({"a"}, at, tidy=True)  # applied and forgotten: the names stay
    log.commit(frames(log, {"b": [((2, "y"), 1)]}))
    assert log.state().carried == {"w1": at, "w2": at}
    for i in range(100):  # w1's file is left (its carrier was killed): its name stays
        spooled = frozenset({"w1", f"x{i}"})
        log.commit(frames(log, {"a": [((10 + i, "z"), 1)]}), carried=(f"x{i}",), spooled=spooled)
    assert log.state().carried == {"w1": at, "x99": log.state().upper - 1}
    log.commit(frames(log, {"b": [((3, "y"), 1)]}), spooled=frozenset())
    assert log.state().carried == {}


def test_the_logs_old_versions_are_deleted_off_the_commit_path(storage: Storage) -> None:
    """Every 64th commit asks for the log's older versions to go; a thread of the consensus
    deletes them (all asked for are done when it closes), never the head."""
    log = TxnLog(storage)
    for i in range(150):
        log.commit(frames(log, {"a": [((i, "x"), 1)]}))
    head = storage.consensus.head(KEY)
    storage.consensus.close()  # the truncations asked for are done
    kept = storage.consensus.scan(KEY)
    assert head is not None and kept[-1] == head
    assert len(kept) <= 64


def test_a_log_state_reads_back_as_written_with_its_entries_encoded_once() -> None:
    """Entries kept from one state to the next reuse their JSON; an entry equal in time but
    another object (another process's, read back) is encoded afresh, never taken for one
    encoded before."""
    ours = {"ts": 7, "writes": {"s1": "inline:AAAA"}}
    first = LogState(8, [{"ts": 5, "writes": {"s1": "blobs/x.arrow"}}, ours], {"s1": 7}, {"a": 3})
    assert LogState.from_bytes(first.to_bytes()) == first
    second = LogState(9, [ours, {"ts": 8, "writes": {"s2": "inline:BBBB"}}], {"s1": 7, "s2": 8})
    assert LogState.from_bytes(second.to_bytes()) == second
    theirs = LogState(9, [{"ts": 7, "writes": {"s3": "inline:CCCC"}}])
    assert LogState.from_bytes(theirs.to_bytes()) == theirs
    assert LogState.from_bytes(LogState().to_bytes()) == LogState()
