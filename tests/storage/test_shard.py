"""The shard state machine against the reference pTVC, and its errors, leases and tokens."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.errors import (
    CapabilityError,
    ConsensusUnavailable,
    FrontierViolation,
    InvalidInput,
    InvalidTime,
    Timeout,
    UpperMismatch,
)
from changeflow.storage import Storage, WriteCapability
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import SqliteConsensus, VersionedData
from changeflow.time import Antichain

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])


class Clock:
    """A wall clock the test moves by hand, to expire leases without waiting."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def open_storage(root: Path, clock: Clock | None = None, lease: float = 60.0) -> Storage:
    consensus = SqliteConsensus(root / "consensus.sqlite")
    return Storage(consensus, Blob(str(root / "blob")), lease, clock=clock or time.time)


def contents(table: pa.Table) -> dict[tuple, int]:
    data = [c for c in table.column_names if not c.startswith("_")]
    out: dict[tuple, int] = {}
    for row in table.to_pylist():
        key = tuple(row[c] for c in data)
        assert key not in out, f"snapshot is not consolidated: {key} twice"
        out[key] = row["_diff"]
    return out


def summed(table: pa.Table, as_of: int) -> dict[tuple, int]:
    """The contents of a snapshot's updates (a multiset: a row may come more than once), each
    row of which must be in the contents, at ``as_of``."""
    data = [c for c in table.column_names if not c.startswith("_")]
    out: dict[tuple, int] = {}
    for row in table.to_pylist():
        assert row["_time"] == as_of
        key = tuple(row[c] for c in data)
        out[key] = out.get(key, 0) + row["_diff"]
    assert all(out.values()), f"rows not in the contents: {out}"
    return out


@pytest.fixture
def storage(tmp_path: Path) -> Storage:
    return open_storage(tmp_path)


# -- against the reference model ------------------------------------------------------------

keys = st.sampled_from(["a", "b", "c", "d"])
updates = st.lists(
    st.tuples(st.tuples(keys, st.integers(0, 2)), st.integers(0, 5), st.integers(-2, 2))
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), updates, st.integers(1, 4)),
        st.tuples(st.just("since"), st.integers(0, 3)),
        st.tuples(st.just("compact")),
        st.tuples(st.just("read"), st.integers(0, 20)),
    ),
    max_size=12,
)


@settings(max_examples=60)
@given(ops=ops)
def test_shard_reads_like_the_reference(tmp_path_factory: pytest.TempPathFactory, ops) -> None:
    storage = open_storage(tmp_path_factory.mktemp("shard"))
    read, write = storage.create("t", SCHEMA)
    ref = PTVC.empty(0, "t")
    for op in ops:
        upper = ref.upper.elements[0]
        since = ref.since.elements[0]
        if op[0] == "append":
            _, raw, width = op
            batch = [(d, upper + t % width, r) for d, t, r in raw if r]
            storage.append(write, batch, upper + width)
            ref.append([(d, t, r) for d, t, r in batch], Antichain([upper + width]))
        elif op[0] == "since":
            new_since = min(since + op[1], upper)
            storage.downgrade(read, new_since)
            ref.compact(Antichain([new_since]))
        elif op[0] == "compact":
            storage.compact("t")
        elif since < upper:
            as_of = since + op[1] % (upper - since)
            assert contents(storage.snapshot_table(read, as_of)) == ref.read(as_of)
            assert summed(read.snapshot_updates(as_of), as_of) == ref.read(as_of)
        assert storage.state("t").since == ref.since
        assert storage.state("t").upper == ref.upper
    storage.compact("t")
    state = storage.state("t")
    assert len(state.batches) <= 1
    for as_of in range(since_of(ref), upper_of(ref)):
        assert contents(storage.snapshot_table(read, as_of)) == ref.read(as_of)
        assert summed(read.snapshot_updates(as_of), as_of) == ref.read(as_of)


def since_of(ref: PTVC) -> int:
    return ref.since.elements[0]


def upper_of(ref: PTVC) -> int:
    return ref.upper.elements[0]


@settings(max_examples=30)
@given(steps=st.lists(st.tuples(updates, st.integers(1, 3)), max_size=8), start=st.integers(0, 3))
def test_subscription_replays_the_history(tmp_path_factory, steps, start) -> None:
    storage = open_storage(tmp_path_factory.mktemp("sub"))
    read, write = storage.create("t", SCHEMA)
    ref = PTVC.empty(0, "t")
    storage.append(write, [(("s", 0), 0, 1)], start + 1)
    ref.append([(("s", 0), 0, 1)], Antichain([start + 1]))
    for raw, width in steps:
        upper = upper_of(ref)
        batch = [(d, upper + t % width, r) for d, t, r in raw if r]
        storage.append(write, batch, upper + width)
        ref.append(batch, Antichain([upper + width]))
    storage.append(write, [], Antichain())  # seal: the subscription ends
    storage.downgrade(read, start)
    replay: list = []
    seen_upper = None
    for table, upper in storage.subscribe_at(read, timeout=5):
        for row in table.to_pylist():
            assert row["_time"] >= start and (seen_upper is None or row["_time"] >= seen_upper)
            replay.append(((row["key"], row["value"]), row["_time"], row["_diff"]))
        seen_upper = upper.elements[0] if upper else None
        if seen_upper is not None:
            mine = PTVC.empty(start, "replay")
            mine.append(replay, Antichain([seen_upper]))
            for t in range(start, seen_upper):
                assert mine.read(t) == ref.read(t)
    assert seen_upper is None


# -- frontiers, capabilities and leases -----------------------------------------------------


def test_compare_and_append_and_downgrades(storage: Storage) -> None:
    read, write = storage.create("t", SCHEMA)
    other = storage.clone(write)
    storage.append(write, [(("a", 1), 0, 1)], 3)
    assert write.frontier == Antichain([3])
    with pytest.raises(UpperMismatch) as e:
        storage.append(other, [(("b", 1), 1, 1)], 4)
    assert e.value.expected == Antichain([0]) and e.value.current == Antichain([3])
    storage.downgrade(other, 3)
    storage.append(other, [(("b", 1), 3, 1)], 4)
    with pytest.raises(FrontierViolation, match="back"):
        storage.downgrade(read, 0) or storage.downgrade(other, 2)
    storage.downgrade(read, 2)
    with pytest.raises(FrontierViolation, match="back"):
        storage.downgrade(read, 1)
    assert storage.state("t").since == Antichain([2])
    with pytest.raises(FrontierViolation, match=r"cannot read as of 1"):
        storage.snapshot_table(read, 1)
    with pytest.raises(FrontierViolation, match=r"cannot read as of 4"):
        storage.snapshot_table(read, 4)
    assert contents(storage.snapshot_table(read, 3)) == {("a", 1): 1, ("b", 1): 1}


def test_since_is_the_meet_of_live_leases(tmp_path: Path) -> None:
    clock = Clock()
    storage = open_storage(tmp_path, clock, lease=10)
    r1, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], 10)
    r2 = storage.clone(r1)
    storage.downgrade(r1, 2)
    storage.downgrade(r2, 6)
    assert storage.state("t").since == Antichain([2])
    clock.now += 8
    storage.heartbeat(r2)
    clock.now += 8  # r1 has expired, r2 lives on
    with pytest.raises(CapabilityError, match="expired"):
        storage.snapshot_table(r1, 5)
    with pytest.raises(CapabilityError, match="expired"):
        storage.heartbeat(r1)
    storage.heartbeat(r2)
    assert storage.state("t").since == Antichain([6])
    assert "r1" not in storage.state("t").readers
    clock.now += 100  # every lease expires: since stays where it was
    r3, w3 = storage.acquire_capabilities("t")
    assert r3.frontier == Antichain([6]) and w3.frontier == Antichain([10])
    assert contents(storage.snapshot_table(r3, 7)) == {("a", 1): 1}


def test_drop_and_acquire(storage: Storage) -> None:
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], 5)
    storage.drop(write)
    with pytest.raises(CapabilityError, match="dropped"):
        storage.append(write, [], 6)
    storage.downgrade(read, Antichain())  # the last reader gives up everything
    r, w = storage.acquire_capabilities("t")
    assert r.frontier == Antichain() and w.frontier == Antichain([5])
    with pytest.raises(FrontierViolation):
        storage.snapshot_table(r, 5)
    storage.compact("t")
    assert storage.state("t").rows == 0


def test_global_ids_are_never_reused(storage: Storage) -> None:
    storage.create("a", SCHEMA)
    first = storage.state("a").id
    storage.drop_shard("a")
    with pytest.raises(InvalidInput, match="no shard named 'a'"):
        storage.state("a")  # its id, known from before, names a dropped shard
    storage.create("a", SCHEMA)
    assert storage.state("a").id != first
    with pytest.raises(InvalidInput, match="exists"):
        storage.create("a", SCHEMA)
    with pytest.raises(InvalidInput, match="no shard named 'zzz'"):
        storage.state("zzz")


def test_a_name_dropped_and_bound_again_elsewhere_reads_the_new_shard(tmp_path: Path) -> None:
    """A process that knew a name's shard reads the shard bound to it later by another."""
    one, other = open_storage(tmp_path), open_storage(tmp_path)
    one.create("a", SCHEMA)
    first = one.state("a").id
    other.drop_shard("a")
    with pytest.raises(InvalidInput, match="no shard named 'a'"):
        one.state("a")
    other.create("a", SCHEMA)
    assert one.state("a").id == other.state("a").id != first


# -- bad input leaves the shard unchanged ---------------------------------------------------


def bad_inputs(storage: Storage):
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], 2)
    _, foreign = storage.create("u", SCHEMA)
    return read, write, foreign


@pytest.mark.parametrize(
    "case, error, message",
    [
        ("wrong width", InvalidInput, "2 columns"),
        ("wrong type", InvalidInput, "schema"),
        ("frame columns", InvalidInput, "missing"),
        ("negative time", InvalidTime, "negative"),
        ("float time", InvalidTime, "int times"),
        ("huge time", InvalidTime, "outside 0 <= t < 2"),
        ("huge upper", InvalidTime, "outside 0 <= t < 2"),
        ("below frontier", FrontierViolation, "time 1 is before the write frontier"),
        ("at new upper", FrontierViolation, "time 5 is at or beyond the new upper"),
        ("upper not beyond", FrontierViolation, "must be beyond"),
        ("foreign capability", CapabilityError, "not a capability of shard 't'"),
        ("read capability", CapabilityError, "expected a WriteCapability"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(storage, case, error, message) -> None:
    read, write, foreign = bad_inputs(storage)
    before = storage.state("t")
    blobs = storage.blob.list()
    attempt = {
        "wrong width": lambda: storage.append(write, [(("a",), 2, 1)], 5),
        "wrong type": lambda: storage.append(write, [(("a", "x"), 2, 1)], 5),
        "frame columns": lambda: storage.append(write, pa.table({"key": ["a"], "_time": [2]}), 5),
        "negative time": lambda: storage.append(
            write, pa.table({"key": ["a"], "value": [1], "_time": [-1], "_diff": [1]}), 5
        ),
        "float time": lambda: storage.append(write, [(("a", 1), 2.5, 1)], 5),
        "huge time": lambda: storage.append(write, [(("a", 1), 2**63, 1)], 5),
        "huge upper": lambda: storage.append(write, [], 2**63),
        "below frontier": lambda: storage.append(write, [(("a", 1), 1, 1)], 5),
        "at new upper": lambda: storage.append(write, [(("a", 1), 5, 1)], 5),
        "upper not beyond": lambda: storage.append(write, [], 2),
        "foreign capability": lambda: storage.append(
            WriteCapability(storage.machine, write.shard, "t", foreign.id, write.frontier), [], 5
        ),
        "read capability": lambda: storage.append(read, [], 5),
    }[case]
    with pytest.raises(error, match=message):
        attempt()
    assert storage.state("t") == before
    assert storage.blob.list() == blobs


def test_bad_schema_and_names(storage: Storage) -> None:
    with pytest.raises(InvalidInput, match="reserve"):
        storage.create("x", pa.schema([("_time", pa.int64())]))
    with pytest.raises(InvalidInput, match="at least one"):
        storage.create("x", pa.schema([]))
    with pytest.raises(InvalidInput, match="shard name"):
        storage.create("a/b", SCHEMA)
    assert storage.shards() == []


# -- idempotency after an indeterminate error -------------------------------------------------


class LosesReplies(SqliteConsensus):
    """Consensus whose next compare-and-set succeeds but whose reply is lost."""

    lose_next = False

    def compare_and_set(self, key: str, expected: int | None, new: VersionedData) -> bool:
        written = super().compare_and_set(key, expected, new)
        if self.lose_next:
            self.lose_next = False
            raise ConsensusUnavailable("connection lost after the write")
        return written


def test_a_retried_append_applies_once(tmp_path: Path) -> None:
    consensus = LosesReplies(tmp_path / "c.sqlite")
    storage = Storage(consensus, Blob(str(tmp_path / "blob")))
    read, write = storage.create("t", SCHEMA)
    consensus.lose_next = True
    storage.append(write, [(("a", 1), 0, 1)], 1)  # retried inside with the same token
    assert contents(storage.snapshot_table(read, 0)) == {("a", 1): 1}
    # The caller's own retry with the same token after an error also applies once: the
    # retry comes from a capability that did not see the first attempt's reply.
    retry = storage.clone(write)
    storage.append(write, [(("b", 1), 1, 1)], 2, token="t-1")
    assert retry.frontier == Antichain([1])
    storage.append(retry, [(("b", 1), 1, 1)], 2, token="t-1")
    assert retry.frontier == Antichain([2])
    assert contents(storage.snapshot_table(read, 1)) == {("a", 1): 1, ("b", 1): 1}
    assert len(storage.state("t").batches) == 2


# -- compaction and garbage -------------------------------------------------------------------


def test_cancelling_updates_compact_to_a_handful(storage: Storage) -> None:
    read, write = storage.create("t", SCHEMA)
    n = 1_000_000
    times = pa.array(range(n), pa.int64())
    pairs = pc.shift_right(times, 1)  # t = 2k inserts row k, t = 2k + 1 retracts it
    keys = pc.cast(pc.bit_wise_and(pairs, 1023), pa.string())
    diffs = pc.subtract(1, pc.multiply(pc.bit_wise_and(times, 1), 2))
    for start in range(0, n, 100_000):
        sl = slice(start, start + 100_000)
        frame = pa.table(
            {
                "key": keys[sl],
                "value": pa.compute.shift_right(times[sl], 1),
                "_time": times[sl],
                "_diff": diffs[sl],
            }
        )
        storage.append(write, frame, start + 100_000)
    assert storage.state("t").rows == n
    storage.downgrade(read, n)
    assert storage.state("t").since == Antichain([n])
    before, after = storage.compact("t")
    assert (before, after) == (n, 0)
    storage.append(write, [(("z", 1), n, 1)], n + 1)
    assert storage.state("t").rows == 1
    assert contents(storage.snapshot_table(read, n)) == {("z", 1): 1}
    assert storage.collect_garbage("t", grace_seconds=0) == 10
    assert len(storage.blob.list()) == 1


def test_garbage_waits_for_the_grace(tmp_path: Path) -> None:
    clock = Clock()
    storage = open_storage(tmp_path, clock, lease=600)
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], 1)
    storage.append(write, [(("b", 1), 1, 1)], 2)
    storage.downgrade(read, 1)
    storage.compact("t")
    assert len(storage.blob.list()) == 3
    assert storage.collect_garbage("t", grace_seconds=60) == 0
    clock.now += 61
    assert storage.collect_garbage("t", grace_seconds=60) == 2
    assert contents(storage.snapshot_table(read, 1)) == {("a", 1): 1, ("b", 1): 1}


def test_an_unsummed_snapshot_keeps_rows_apart_unless_a_diff_cancels(storage: Storage) -> None:
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1), (("a", 1), 1, 2), (("b", 1), 1, 1)], 3)
    table, upper = storage.subscribe_at(read, summed=False).next(1)
    assert upper == Antichain([1]) and summed(table, 0) == {("a", 1): 1}
    storage.downgrade(read, 2)
    table, _ = storage.subscribe_at(read, summed=False).next(1)
    assert table.num_rows == 3 and summed(table, 2) == {("a", 1): 3, ("b", 1): 1}
    storage.append(write, [(("b", 1), 3, -1)], 5)
    storage.downgrade(read, 4)
    table, _ = storage.subscribe_at(read, summed=False).next(1)
    assert contents(table) == {("a", 1): 3} and summed(table, 4) == {("a", 1): 3}


def test_a_subscription_never_delivers_an_update_twice(storage: Storage) -> None:
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 10, 1)], 50)
    storage.append(write, [(("b", 1), 60, 1)], 90)
    subscription = storage.subscribe_at(read)
    subscription.next(1), subscription.next(1)  # a at 10, then b at 60: progress 90
    storage.append(write, [(("c", 1), 95, 1)], 100)
    storage.downgrade(read, 89)  # as far as a subscriber at 90 may go
    storage.compact("t")
    table, upper = subscription.next(1)
    assert [(r["key"], r["_time"]) for r in table.to_pylist()] == [("c", 95)]
    storage.append(write, [], 101)
    storage.downgrade(read, 101)  # beyond what was delivered: since passes the subscription
    storage.compact("t")
    with pytest.raises(FrontierViolation, match="hold the read capability at 99 or earlier"):
        subscription.next(1)


def test_a_subscription_that_waits_too_long_is_a_timeout(storage: Storage) -> None:
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], 1)
    steps = iter(storage.subscribe_at(read, timeout=0.1, poll=0.01))
    next(steps)  # the snapshot
    with pytest.raises(Timeout, match="nothing new was appended within 0.1 s"):
        next(steps)


def test_reading_a_closed_shard_beyond_every_time_is_a_time_error(storage: Storage) -> None:
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], Antichain())
    with pytest.raises(InvalidTime, match="as_of 99999999999999999999 is outside"):
        storage.snapshot_table(read, 99999999999999999999)
    with pytest.raises(InvalidTime, match="as_of must be an int time"):
        storage.snapshot_table(read, 1.5)


def test_evolve_keeps_drops_and_appends_columns(tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1), (("b", 2), 0, 1)], 1)
    wider = SCHEMA.append(pa.field("extra", pa.string()))
    storage.evolve("t", wider)
    storage.append(write, [(("c", 3, "x"), 1, 1)], 2)
    assert contents(storage.snapshot_table(read, 1)) == {
        ("a", 1, None): 1,
        ("b", 2, None): 1,
        ("c", 3, "x"): 1,
    }
    storage.evolve("t", pa.schema([wider.field("key"), wider.field("extra")]))
    storage.close()
    storage = open_storage(tmp_path)  # the schema is durable
    read, _ = storage.acquire_capabilities("t")
    want = {("a", None): 1, ("b", None): 1, ("c", "x"): 1}
    assert contents(storage.snapshot_table(read, 1)) == want
    with pytest.raises(InvalidInput, match="cannot change its type"):
        storage.evolve("t", pa.schema([("key", pa.int64())]))
    with pytest.raises(InvalidInput, match="at least one"):
        storage.evolve("t", pa.schema([]))
