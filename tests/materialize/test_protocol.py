"""Protocol messages, the driver runner's and the runtime's order checks, and reductions."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

from changeflow.errors import InvalidInput, ProtocolViolation, Timeout
from changeflow.materialize.driver import Driver, Runner
from changeflow.materialize.faults import FaultyDriver
from changeflow.materialize.protocol import (
    Acknowledge,
    Acknowledged,
    Binding,
    DriverState,
    Flush,
    Flushed,
    Load,
    Loaded,
    Open,
    Opened,
    StartCommit,
    StartedCommit,
    Store,
    decode,
    encode,
    merge_patch,
)
from changeflow.materialize.recovery import RecoveryLog
from changeflow.materialize.reductions import Reducer
from changeflow.materialize.runtime import Materialization, Runtime
from changeflow.materialize.transport import InProcess, Subprocess
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import SqliteConsensus

BINDING = Binding("t", ("k", "v"), ("int64", "string"), ("k",))
MESSAGES = [
    Open("m", (BINDING,), {"url": "sqlite:x"}, 0, 7, {"staged": {"t": "f1"}}),
    Acknowledge(),
    Load(0, (1,)),
    Flush(),
    Store(0, (1,), {"k": 1, "v": "a"}, exists=True),
    Store(0, (2,), None, exists=True, delete=True),
    StartCommit({"frontier": [5]}),
    Opened({"frontier": [3]}),
    Opened(None),
    Acknowledged(DriverState({"a": 1}, merge_patch=True)),
    Loaded(0, (1,), {"k": 1, "v": "a"}),
    Flushed(),
    StartedCommit(DriverState({"staged": None})),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_messages_round_trip_as_json_lines(message) -> None:
    line = encode(message)
    assert "\n" not in line
    assert decode(line) == message


@pytest.mark.parametrize("line", ["", "[]", '{"nope": {}}', '{"load": {"binding": 0}}', "{"])
def test_a_bad_line_is_a_protocol_violation(line: str) -> None:
    with pytest.raises(ProtocolViolation, match="not a materialization message"):
        decode(line)


def test_merge_patch_follows_rfc_7396() -> None:
    assert merge_patch({"a": "b", "c": {"d": "e", "f": "g"}}, {"a": "z", "c": {"f": None}}) == {
        "a": "z",
        "c": {"d": "e"},
    }
    assert merge_patch({"a": [1]}, {"a": [2]}) == {"a": [2]}
    assert merge_patch([1], {"a": 1}) == {"a": 1}
    assert merge_patch({"a": 1}, "x") == "x"


class Memory(Driver):
    """A dict as the target: the smallest real driver, for the runtime's sequencing."""

    def __init__(self, table: dict | None = None) -> None:
        self.table = {} if table is None else table
        self.staged: list[Store] = []

    def open(self, request: Open) -> None:
        return None

    def load(self, binding, keys):
        return [(k, self.table[k]) for k in keys if k in self.table]

    def store(self, request: Store) -> None:
        self.staged.append(request)

    def start_commit(self, runtime_checkpoint):
        for s in self.staged:
            if s.delete:
                self.table.pop(s.key)
            else:
                assert (s.key in self.table) == s.exists
                self.table[s.key] = s.doc
        self.staged.clear()
        return DriverState({"commits": len(self.table)}, merge_patch=True)


def test_the_runner_refuses_requests_out_of_order() -> None:
    runner = Runner(Memory())
    with pytest.raises(ProtocolViolation, match="acknowledge arrived in the open phase"):
        runner.handle(Acknowledge())
    runner.handle(MESSAGES[0])
    with pytest.raises(ProtocolViolation, match="store arrived in the acknowledge phase"):
        runner.handle(Store(0, (1,), {}, exists=False))
    runner.handle(Acknowledge())
    with pytest.raises(ProtocolViolation, match="start_commit arrived in the load phase"):
        runner.handle(StartCommit({}))


class Recording(InProcess):
    """The in-process transport, keeping the order of every message both ways."""

    def __init__(self, driver: Driver, misbehave: dict | None = None) -> None:
        super().__init__(driver)
        self.seen: list[str] = []
        self.misbehave = misbehave or {}

    def send(self, message) -> None:
        self.seen.append(type(message).__name__)
        super().send(message)

    def receive(self, timeout=None):
        message = super().receive(timeout)
        message = self.misbehave.get(type(message).__name__, message)
        self.seen.append(type(message).__name__)
        return message


@pytest.fixture
def storage(tmp_path: Path) -> Storage:
    storage = Storage(SqliteConsensus(tmp_path / "c.sqlite"), Blob(str(tmp_path / "blob")))
    _, write = storage.create("t", pa.schema([("k", pa.int64()), ("v", pa.string())]))
    storage.append(write, [((1, "a"), 0, 1), ((2, "b"), 0, 1)], 1)
    storage.append(write, [((1, "a"), 1, -1), ((1, "z"), 1, 1), ((2, "b"), 2, -1)], 3)
    storage.append(write, [((3, "c"), 3, 1)], 4)
    return storage


def run(storage: Storage, tmp_path: Path, transport: InProcess, **spec) -> Runtime:
    log = RecoveryLog(tmp_path / "log.sqlite")
    materialization = Materialization("m", "t", "sqlite:unused", ("k",), **spec)
    runtime = Runtime(storage, materialization, transport, log, kind=Memory)
    runtime.run(follow=False, idle_timeout=None)
    return runtime


def test_the_runtime_follows_the_sequence_and_resumes(storage, tmp_path) -> None:
    table: dict = {}
    transport = Recording(Memory(table))
    run(storage, tmp_path, transport)
    assert table == {(1,): {"k": 1, "v": "z"}, (3,): {"k": 3, "v": "c"}}
    seen = " ".join(transport.seen)
    # One batch of loads goes out before Acknowledged comes back; Flush only after it.
    assert seen.startswith(
        "Open Opened Acknowledge LoadBatch Acknowledged Flush LoadedBatch Flushed StoreBatch"
    )
    assert seen.count("StartCommit") == 2 and seen.endswith("Acknowledge Acknowledged")
    assert "Flush" not in seen.split("Acknowledged")[0]
    log = RecoveryLog(tmp_path / "log.sqlite")
    assert log.load("m") == ({"frontier": [4], "lower": [1]}, {"commits": 2})

    _, write = storage.acquire_capabilities("t")
    storage.append(write, [((3, "c"), 4, -1)], 5)
    again = Recording(Memory(table))
    run(storage, tmp_path, again)
    assert table == {(1,): {"k": 1, "v": "z"}}
    assert again.seen.count("StartCommit") == 1  # only what is new


def test_the_runtime_refuses_responses_out_of_order(storage, tmp_path) -> None:
    transport = Recording(Memory(), misbehave={"Acknowledged": Flushed()})
    with pytest.raises(ProtocolViolation, match="flushed arrived in the acknowledge phase"):
        run(storage, tmp_path, transport)


def test_more_than_one_row_per_key_is_an_error_naming_the_key(tmp_path) -> None:
    storage = Storage(SqliteConsensus(tmp_path / "c.sqlite"), Blob(str(tmp_path / "blob")))
    _, write = storage.create("t", pa.schema([("k", pa.int64()), ("v", pa.string())]))
    storage.append(write, [((7, "a"), 0, 1), ((7, "b"), 0, 1)], 1)
    with pytest.raises(InvalidInput, match=r"key \(k=7\) has 2 rows at frontier \[1\]"):
        run(storage, tmp_path, InProcess(Memory()))


def reduce(reducer: Reducer, changes: list, loaded: list | None) -> list[dict]:
    """The rows ``reducer`` stores for ``changes`` (``(row, diff)`` in order) over ``loaded``
    (the stored rows, None: not loaded)."""
    names = reducer.schema.names
    frame = pa.Table.from_pylist(
        [{**dict(zip(names, row, strict=True)), "_time": 0, "_diff": d} for row, d in changes],
        schema=reducer.schema.append(pa.field("_time", pa.int64())).append(
            pa.field("_diff", pa.int64())
        ),
    )
    stored = None if loaded is None else pa.Table.from_pylist(loaded, schema=reducer.schema)
    return reducer.reduce(reducer.changes(frame), stored, "at frontier [1]").to_pylist()


def test_reductions() -> None:
    schema = pa.schema(
        [("k", pa.int64()), ("n", pa.int64()), ("tags", pa.string()), ("note", pa.string())]
    )
    sums = Reducer(schema, ("k",), {"n": "sum", "tags": "merge"})
    loaded = [{"k": 1, "n": 10, "tags": '{"a": 1}', "note": "old"}]
    changes = [((1, 5, '{"b": 2}', "new"), 1), ((1, 3, "{}", "gone"), -1)]
    assert reduce(sums, changes, loaded) == [
        {
            "k": 1,
            "n": 12,
            "tags": '{"a":1,"b":2}',
            "note": "new",
            "_exists": True,
            "_deleted": False,
        }
    ]
    two = pa.schema([("k", pa.int64()), ("v", pa.string())])
    delta = Reducer(two, ("k",), delta=True)
    assert reduce(delta, [((1, "a"), -1), ((1, "b"), 1)], None) == [
        {"k": 1, "v": "b", "_exists": None, "_deleted": False}
    ]
    assert reduce(delta, [((1, "a"), -1)], None) == [
        {"k": 1, "v": None, "_exists": None, "_deleted": True}
    ]
    with pytest.raises(InvalidInput, match="unknown reduction 'max'"):
        Reducer(schema, ("k",), {"n": "max"})
    with pytest.raises(InvalidInput, match="no column 'zz'"):
        Reducer(schema, ("zz",))


def fold(changes: list, loaded: dict) -> dict:
    """The reference of lastWriteWins, a key at a time: the stored rows plus the changes."""
    state: dict = {}
    for k, row in loaded.items():
        state.setdefault(k, {})[row] = 1
    for row, d in changes:
        counts = state.setdefault(row[0], {})
        counts[row] = counts.get(row, 0) + d
    out = {}
    for k, counts in state.items():
        rows = {r: n for r, n in counts.items() if n}
        assert all(n == 1 for n in rows.values()) and len(rows) <= 1
        out[k] = next(iter(rows), None)
    return out


@pytest.mark.parametrize("seed", range(30))
def test_last_write_wins_over_a_whole_transaction_matches_a_key_at_a_time(seed: int) -> None:
    """Random upserts, deletes and no-ops (a row inserted and retracted) over stored rows:
    with the stored rows loaded, or not (the store upserts), the rows to store leave the
    target as the reference does."""
    import random

    rng = random.Random(seed)
    stored = {k: (k, f"s{k}") for k in range(10) if rng.random() < 0.5}
    current, changes = dict(stored), []
    for _ in range(rng.randint(0, 25)):
        k = rng.randrange(12)
        if k in current and rng.random() < 0.3:
            changes.append((current.pop(k), -1))
        else:
            if k in current:
                changes.append((current[k], -1))
            current[k] = (k, f"v{rng.randrange(4)}")
            changes.append((current[k], 1))
    expected = {k: row for k, row in fold(changes, stored).items() if row is not None}
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    reducer = Reducer(schema, ("k",))
    for loaded in (None, [{"k": k, "v": v} for k, v in stored.values()]):
        target = {k: row for k, row in stored.items()}
        for r in reduce(reducer, changes, loaded):
            if r["_deleted"]:
                target.pop(r["k"], None)
            else:
                if loaded is not None:
                    assert r["_exists"] is (r["k"] in stored)
                elif r["_exists"] is False:  # an insert: the store refuses a key it holds
                    assert r["k"] not in stored
                target[r["k"]] = (r["k"], r["v"])
        assert target == expected


def test_a_key_with_two_rows_is_refused_without_a_load() -> None:
    reducer = Reducer(pa.schema([("k", pa.int64()), ("v", pa.string())]), ("k",))
    with pytest.raises(InvalidInput, match=r"key \(k=7\) has 2 rows at frontier \[1\]"):
        reduce(reducer, [((7, "a"), 1), ((6, "x"), 1), ((7, "b"), 1)], None)
    with pytest.raises(InvalidInput, match=r"key \(k=7\) has 2 rows"):
        reduce(reducer, [((7, "a"), 2)], None)
    with pytest.raises(InvalidInput, match="retracts a row the target does not hold"):
        reduce(reducer, [((7, "a"), -1)], [{"k": 7, "v": "b"}])


def test_batches_travel_as_arrow_ipc_with_their_types() -> None:
    import datetime
    import io
    from decimal import Decimal

    from changeflow.materialize.protocol import (
        LoadBatch,
        LoadedBatch,
        StoreBatch,
        read_message,
        to_bytes,
    )

    rows = pa.table(
        {
            "k": pa.array([1, 2], pa.int64()),
            "at": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None], pa.timestamp("us")),
            "amount": pa.array([Decimal("1.10"), Decimal("-3.00")], pa.decimal128(10, 2)),
        }
    )
    messages = [LoadBatch(0, rows.select(["k"])), LoadedBatch(0, rows), StoreBatch(1, rows)]
    stream = io.BytesIO(b"".join(to_bytes(m) for m in [*messages, Flush()]))
    assert [read_message(stream) for _ in range(4)] == [*messages, Flush()]
    assert read_message(stream) is None
    with pytest.raises(ProtocolViolation, match="a damaged store_batch message"):
        read_message(io.BytesIO(to_bytes(StoreBatch(0, rows))[:-5]))


def test_a_driver_that_does_not_answer_is_a_timeout() -> None:
    transport = Subprocess([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(Timeout, match="did not answer within 0.2 s"):
            transport.receive(timeout=0.2)
    finally:
        transport.process.kill()
        transport.close()


def test_an_unknown_fault_event_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="unknown driver event 'nowhere'"):
        FaultyDriver(Memory(), "nowhere")
