"""Exactly once under faults, for every driver: crashes of the runtime and of the driver at each
step of the protocol, stalls, and a zombie instance.

Each case materializes the first half of a history of inserts, updates and deletes, appends the
second half, runs the materialization with a fault, then runs it again without one, and checks
that the target equals the collection at its final frontier: nothing lost, nothing twice. The
runtime crashes in a child process (``changeflow.failpoints``); the driver crashes as its own
process under the Subprocess transport (``python -m changeflow.materialize.faults``).
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from changeflow.errors import FencedOff, ProtocolViolation
from changeflow.failpoints import ENV, EXIT_CODE
from changeflow.materialize.drivers import DRIVERS, open_driver
from changeflow.materialize.faults import EVENTS, DriverCrash, FaultyDriver
from changeflow.materialize.recovery import RecoveryLog
from changeflow.materialize.runtime import Materialization, driver_class, materialize
from changeflow.materialize.transport import InProcess, Subprocess
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.int64())])
SHARD = "t"  # the shard, and the target's table, folder or file stem
MAX_ROWS = 4  # about one time per transaction: three transactions per half of the history
SPLIT = 3  # the first half is times [0, SPLIT)
RUNTIME_POINTS = (
    "runtime.after_open",
    "runtime.during_loads",
    "runtime.before_start_commit",
    "runtime.after_start_commit",
    "runtime.before_log_commit",
    "runtime.after_log_commit",
    "runtime.during_acknowledge",
)
STALLS = ("during_acknowledge", "before_start_commit")

#: every driver, by the kind of target this suite makes for it
KINDS = {
    "sqlite": "SqliteDriver",
    "postgres": "PostgresDriver",
    "files": "FilesDriver",
    "kv": "KvDriver",
    "jsonl": "JsonlDriver",
}
TRANSACTIONAL = ("sqlite", "postgres", "files")  # a sum is exactly once through these
AUTHORITATIVE = ("sqlite", "postgres")  # also the targets of delta updates as a change table


# -- the collection ------------------------------------------------------------------------------

Row = tuple[int, str, int]
Update = tuple[Row, int, int]


def history() -> list[tuple[list[Update], int]]:
    """``(updates, new upper)`` per time: inserts, updates (retract and insert), deletes, and a
    key inserted again after its delete."""
    rng = random.Random(20240601)
    rows: dict[int, Row] = {}
    steps: list[tuple[list[Update], int]] = []

    def put(k: int, t: int, batch: list[Update]) -> None:
        if k in rows:
            batch.append((rows[k], t, -1))
        rows[k] = (k, f"k{k}@{t}", rng.randint(-50, 100))
        batch.append((rows[k], t, 1))

    def delete(k: int, t: int, batch: list[Update]) -> None:
        batch.append((rows.pop(k), t, -1))

    plan = [
        ([0, 1, 2, 3], []),
        ([0, 4], [1]),
        ([2, 4, 5], []),
        ([1, 3], [0]),
        ([1, 6], [5]),
        ([3, 7], [2]),
    ]
    for t, (puts, deletes) in enumerate(plan):
        batch: list[Update] = []
        for k in deletes:
            delete(k, t, batch)
        for k in puts:
            put(k, t, batch)
        steps.append((batch, t + 1))
    return steps


HISTORY = history()
FINAL = HISTORY[-1][1]  # the shard's upper at the end


def expected(storage: Storage, reduction: str) -> dict[int, tuple[str, int]]:
    """The collection at its final frontier, as the target must hold it: ``k -> (s, v)``.

    lastWriteWins (and delta, folded): the one row of each key. sum: ``v`` summed over the
    key's rows (0 once they are all gone, the document stays), ``s`` from the key's last
    insert.
    """
    read, write = storage.acquire_capabilities(SHARD)
    snapshot = storage.snapshot_table(read, FINAL - 1).to_pylist()
    storage.drop(read)
    storage.drop(write)
    if reduction in ("lww", "delta"):
        assert all(r["_diff"] == 1 for r in snapshot)
        out = {r["k"]: (r["s"], r["v"]) for r in snapshot}
        assert len(out) == len(snapshot)
        return out
    last = {row[0]: row[1] for batch, _ in HISTORY for row, _, diff in batch if diff > 0}
    sums = dict.fromkeys(last, 0)
    for r in snapshot:
        sums[r["k"]] += r["v"] * r["_diff"]
    return {k: (last[k], sums[k]) for k in last}


# -- targets -------------------------------------------------------------------------------------


@dataclass
class Target:
    kind: str
    url: str
    path: Path | None = None  # the folder or file of a local target
    delta: bool = False  # a SQL change table: every change a row with _time and _diff

    def read(self) -> dict[int, tuple[str, int]]:
        """What the target holds: ``k -> (s, v)``; for jsonl and a change table, its deltas
        folded in order."""
        rows: list[tuple[int, str, int]]
        if self.delta:
            net: dict[tuple[int, str, int], int] = {}
            for k, s, v, _, diff in self.changes():
                net[k, s, v] = net.get((k, s, v), 0) + diff
            assert set(net.values()) <= {0, 1}, net
            rows = [row for row, n in net.items() if n]
        elif self.kind == "sqlite":
            with sqlite3.connect(self.path) as db:
                rows = db.execute(f'SELECT k, s, v FROM "{SHARD}"').fetchall()
        elif self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.url) as conn:
                rows = conn.execute(f'SELECT k, s, v FROM "{SHARD}"').fetchall()
        elif self.kind == "files":
            from changeflow.materialize.drivers.files import FilesDriver

            table = FilesDriver.read_table(self.path, SHARD).to_pylist()
            rows = [(r["k"], r["s"], r["v"]) for r in table]
        elif self.kind == "kv":
            entries = [json.loads(f.read_text()) for f in (self.path / SHARD).glob("*.json")]
            assert all(e["key"] == [e["doc"]["k"]] for e in entries)
            rows = [(e["doc"]["k"], e["doc"]["s"], e["doc"]["v"]) for e in entries]
        else:
            folded: dict[int, tuple[str, int]] = {}
            for docs in self.deltas().values():
                for doc in docs:
                    if doc.get("_deleted"):
                        folded.pop(doc["k"], None)
                    else:
                        folded[doc["k"]] = (doc["s"], doc["v"])
            return folded
        out = {k: (s, v) for k, s, v in rows}
        assert len(out) == len(rows), f"a key is stored twice: {sorted(rows)}"
        return out

    def changes(self) -> list[tuple[int, str, int, int, int]]:
        """A change table's rows ``(k, s, v, _time, _diff)``, sorted."""
        statement = f'SELECT k, s, v, _time, _diff FROM "{SHARD}"'
        if self.kind == "sqlite":
            with sqlite3.connect(self.path) as db:
                return sorted(db.execute(statement).fetchall())
        import psycopg

        with psycopg.connect(self.url) as conn:
            return sorted(conn.execute(statement).fetchall())

    def deltas(self) -> dict[str, list[dict[str, Any]]]:
        """jsonl: the delta documents of each transaction's file, in order of the files."""
        assert self.path is not None
        files = sorted((self.path / SHARD).glob("*.jsonl"))
        return {f.name: [json.loads(line) for line in f.read_text().splitlines()] for f in files}


def make_target(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Target:
    if kind == "postgres":
        from postgres_server import database_for_test

        server = request.getfixturevalue("postgres_url")
        return Target(kind, database_for_test(server, request.node.name))
    path = tmp_path / ("target.sqlite" if kind == "sqlite" else f"{kind}-target")
    return Target(kind, f"{kind}:{path}", path)


# -- one materialization, its shard and its recovery log -----------------------------------------


@dataclass
class Setup:
    storage: Storage
    consensus: str
    blob: str
    log: Path
    spec: Materialization

    @classmethod
    def make(cls, tmp_path: Path, target: Target, reduction: str) -> Setup:
        consensus, blob = f"sqlite:{tmp_path / 'consensus.sqlite'}", str(tmp_path / "blob")
        storage = Storage(open_consensus(consensus), Blob(blob))
        storage.create(SHARD, SCHEMA)
        reductions = {"v": "sum"} if reduction == "sum" else {}
        target.delta = reduction == "delta"
        spec = Materialization(
            "m", SHARD, target.url, ("k",), reductions, target.delta, max_rows=MAX_ROWS
        )
        return cls(storage, consensus, blob, tmp_path / "recovery.sqlite", spec)

    def append(self, lower: int, upper: int) -> None:
        """Append the history's times ``[lower, upper)``, one append per time."""
        _, write = self.storage.acquire_capabilities(SHARD)
        for batch, new_upper in HISTORY[lower:upper]:
            self.storage.append(write, batch, new_upper)
        self.storage.drop(write)

    def run(self, **kwargs: Any) -> Any:
        return materialize(self.storage, self.spec, recovery_log=self.log, **kwargs)

    def first_half(self) -> None:
        """Materialize the first half cleanly, then append the second half."""
        self.append(0, SPLIT)
        self.run()
        self.append(SPLIT, len(HISTORY))

    def checkpoint(self) -> dict[str, Any] | None:
        log = RecoveryLog(self.log)
        try:
            return log.load(self.spec.name)[0]
        finally:
            log.close()


def check(setup: Setup, target: Target, reduction: str, frontier: list[int] | None = None) -> None:
    """The target equals the collection at its final frontier."""
    want = expected(setup.storage, reduction)
    assert target.read() == want
    if target.delta:  # every change once, at its time
        changes = [(*row, t, d) for batch, _ in HISTORY for row, t, d in batch]
        assert target.changes() == sorted(changes)
    checkpoint = setup.checkpoint()
    assert checkpoint is not None
    assert checkpoint["frontier"] == ([FINAL] if frontier is None else frontier)


# -- the fault matrix ----------------------------------------------------------------------------

RUNTIME_CHILD = """
import json, sys
from pathlib import Path
from changeflow.materialize.runtime import Materialization, driver_class, materialize
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
consensus, blob, log, spec = sys.argv[1:5]
spec = json.loads(spec)
spec["key"] = tuple(spec["key"])
storage = Storage(open_consensus(consensus), Blob(blob))
materialize(storage, Materialization(**spec), recovery_log=Path(log))
"""


def crash_runtime(setup: Setup, point: str) -> None:
    """Run the materialization in a child process that dies at ``point``."""
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            RUNTIME_CHILD,
            setup.consensus,
            setup.blob,
            str(setup.log),
            json.dumps(asdict(setup.spec)),
        ],
        env={**_env(), ENV: point},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == EXIT_CODE, child.stderr


def faulty_driver(target: Target, *args: str) -> Subprocess:
    """The target's driver as its own process, with a fault."""
    return Subprocess(
        [sys.executable, "-m", "changeflow.materialize.faults", target.url, *args], env=_env()
    )


def crash_driver(setup: Setup, target: Target, event: str) -> None:
    """Run the materialization with a driver process that dies at ``event``: the second time
    it gets there in the session (the first, for Open)."""
    occurrence = "1" if event == "after_open" else "2"
    transport = faulty_driver(target, event, "--occurrence", occurrence)
    with pytest.raises(ProtocolViolation, match=rf"exited \({EXIT_CODE}\)"):
        setup.run(transport=transport)


def stall_driver(setup: Setup, target: Target, event: str) -> None:
    """Run the materialization with a driver process that sleeps at every ``event``."""
    transport = faulty_driver(target, "--stall-at", event, "--stall-seconds", "0.1")
    progress = setup.run(transport=transport)
    assert progress.frontier == Antichain([FINAL])


FAULTS = (
    [("runtime", p) for p in RUNTIME_POINTS]
    + [("crash", e) for e in EVENTS]
    + [("stall", e) for e in STALLS]
)


def upserts(kind: str, reduction: str) -> bool:
    """lastWriteWins into a store that upserts by key: the runtime sends no Load."""
    return reduction == "lww" and kind in AUTHORITATIVE


def cases() -> list[Any]:
    out = []
    combos = [(k, "lww") for k in KINDS] + [(k, "sum") for k in TRANSACTIONAL]
    combos += [(k, "delta") for k in AUTHORITATIVE]
    for kind, reduction in combos:
        marks = [pytest.mark.postgres] if kind == "postgres" else []
        for fault, at in FAULTS:
            unloaded = kind == "jsonl" or reduction == "delta" or upserts(kind, reduction)
            if unloaded and at == "during_load":
                continue  # a push-only driver, delta updates and upserts by key never load
            name = f"{kind}-{reduction}-{fault}-{at.removeprefix('runtime.')}"
            out.append(pytest.param(kind, reduction, fault, at, marks=marks, id=name))
    return out


@pytest.mark.parametrize("kind, reduction, fault, at", cases())
def test_exactly_once_after_a_fault(
    kind: str,
    reduction: str,
    fault: str,
    at: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    jsonl_reference: Callable[[], dict[str, list[dict[str, Any]]]],
) -> None:
    target = make_target(kind, tmp_path, request)
    setup = Setup.make(tmp_path, target, reduction)
    setup.first_half()
    if fault == "runtime":
        crash_runtime(setup, at)
    elif fault == "crash":
        crash_driver(setup, target, at)
    else:
        stall_driver(setup, target, at)
    setup.run()  # recover: the same materialization again, to completion
    check(setup, target, reduction)
    if kind == "jsonl":  # each transaction's deltas once: as in a run without faults
        assert target.deltas() == jsonl_reference()
    setup.run()  # a run with nothing new changes nothing
    check(setup, target, reduction)


@pytest.fixture(scope="module")
def jsonl_reference(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[], dict[str, list[dict[str, Any]]]]:
    """The jsonl files of a run without faults (made when first asked for)."""
    made: list[dict[str, list[dict[str, Any]]]] = []

    def get() -> dict[str, list[dict[str, Any]]]:
        if not made:
            tmp = tmp_path_factory.mktemp("jsonl-reference")
            target = Target("jsonl", f"jsonl:{tmp / 'target'}", tmp / "target")
            setup = Setup.make(tmp, target, "lww")
            setup.first_half()
            setup.run()
            made.append(target.deltas())
        return made[0]

    return get


def test_the_suite_covers_every_driver_and_knows_its_traits() -> None:
    classes = {name for _, name in DRIVERS.values()}
    assert classes == set(KINDS.values())
    for kind in KINDS:
        url = "postgresql://x" if kind == "postgres" else f"{kind}:x"
        cls = driver_class(url)
        assert cls.__name__ == KINDS[kind]
        assert cls.authoritative == (kind in AUTHORITATIVE), kind
        assert cls.at_least_once == (kind == "kv"), kind
        assert cls.delta_only == (kind == "jsonl"), kind
        assert cls.upserts == (kind in AUTHORITATIVE), kind


@pytest.mark.parametrize(
    "kind",
    [pytest.param(k, marks=[pytest.mark.postgres] if k == "postgres" else []) for k in KINDS],
)
def test_the_last_transaction_of_a_closed_shard_is_acknowledged_after_a_crash(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The runtime dies after the log commit of the transaction that reaches ``[]``: the next
    run has nothing to read, but must still tell the driver that the transaction committed."""
    target = make_target(kind, tmp_path, request)
    setup = Setup.make(tmp_path, target, "lww")
    setup.spec = replace(setup.spec, max_rows=100)  # the second half in one transaction
    setup.append(0, SPLIT)
    setup.run()
    _, write = setup.storage.acquire_capabilities(SHARD)
    for batch, new_upper in HISTORY[SPLIT:]:
        setup.storage.append(write, batch, new_upper if new_upper < FINAL else Antichain())
    crash_runtime(setup, "runtime.after_log_commit")
    assert setup.checkpoint()["frontier"] == []
    setup.run()
    check(setup, target, "lww", frontier=[])


# -- in-process crashes, a zombie ----------------------------------------------------------------


@pytest.mark.parametrize("event", EVENTS)
def test_an_in_process_driver_crash_is_raised_and_recovered(event: str, tmp_path: Path) -> None:
    target = make_target("files", tmp_path, None)  # type: ignore[arg-type]
    setup = Setup.make(tmp_path, target, "sum")
    setup.first_half()
    driver = FaultyDriver(
        open_driver(target.url), event, occurrence=1 if event == "after_open" else 2
    )
    with pytest.raises(DriverCrash, match=event.replace("_", " ")):
        setup.run(transport=InProcess(driver))
    setup.run()
    check(setup, target, "sum")


class Paused(FaultyDriver):
    """A driver that waits at ``stall_at`` until it is released."""

    def __init__(self, inner: Any, at: str) -> None:
        super().__init__(inner, None, stall_at=at)
        self.paused, self.released = threading.Event(), threading.Event()

    def stall(self, name: str) -> None:
        self.paused.set()
        assert self.released.wait(120), "never released"


ZOMBIES = [
    ("sqlite", "lww"),
    ("sqlite", "sum"),
    pytest.param("postgres", "lww", marks=pytest.mark.postgres),
    pytest.param("postgres", "sum", marks=pytest.mark.postgres),
    ("files", "sum"),
    ("jsonl", "lww"),
    ("sqlite", "delta"),
    pytest.param("postgres", "delta", marks=pytest.mark.postgres),
]


@pytest.mark.parametrize("kind, reduction", ZOMBIES)
def test_a_zombie_cannot_commit_after_a_newer_instance_opened(
    kind: str,
    reduction: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    jsonl_reference: Callable[[], dict[str, list[dict[str, Any]]]],
) -> None:
    """Authoritative drivers fence a zombie off in their store, the others by the recovery
    log. (Not kv: its stores land as they arrive, before any commit can be refused.)"""
    target = make_target(kind, tmp_path, request)
    setup = Setup.make(tmp_path, target, reduction)
    setup.first_half()

    # Instance A opens, loads and stores its first transaction, and pauses before StartCommit.
    zombie = Paused(open_driver(target.url), "before_start_commit")
    errors: list[BaseException] = []

    def run_a() -> None:
        storage = Storage(open_consensus(setup.consensus), Blob(setup.blob))
        try:
            materialize(storage, setup.spec, recovery_log=setup.log, transport=InProcess(zombie))
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            errors.append(e)
        finally:
            storage.close()

    a = threading.Thread(target=run_a)
    a.start()
    assert zombie.paused.wait(60), errors
    # Instance B opens (fencing A off) and completes.
    setup.run()
    check(setup, target, reduction)
    # A goes on: its commit is refused, and the target is still the collection.
    zombie.released.set()
    a.join(60)
    assert not a.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], FencedOff), errors
    check(setup, target, reduction)
    if kind == "jsonl":
        assert target.deltas() == jsonl_reference()
    setup.run()  # and the next session finds the target as B left it
    check(setup, target, reduction)


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != ENV}


@pytest.mark.parametrize("kind", ["sqlite", "files"])
def test_a_zombie_between_transactions_learns_it_was_fenced(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Instance A follows the shard and stops between two transactions; B takes the name over,
    catches up and moves the hold (and the shard's since) on. A's next step ends
    with FencedOff naming B's fence (not a missing reader or a moved since), and the target
    stays exact."""
    target = make_target(kind, tmp_path, request)
    setup = Setup.make(tmp_path, target, "sum")
    setup.append(0, SPLIT)
    first_read = setup.storage.state(SHARD).upper
    paused, released = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def between(progress: Any) -> None:  # once all that A read first is committed
        if not paused.is_set() and progress.frontier == first_read:
            paused.set()
            assert released.wait(120), "never released"

    def run_a() -> None:
        storage = Storage(open_consensus(setup.consensus), Blob(setup.blob))
        try:
            materialize(
                storage,
                setup.spec,
                recovery_log=setup.log,
                follow=True,
                idle_timeout=20,
                on_progress=between,
            )
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            errors.append(e)
        finally:
            storage.close()

    a = threading.Thread(target=run_a)
    a.start()
    assert paused.wait(60), errors
    setup.append(SPLIT, len(HISTORY))
    # an hour later (the appends' leases expired), B fences A off, catches up and moves the
    # hold, and with it the shard's since, to its checkpoint
    wall = setup.storage.clock
    setup.storage.clock = lambda: wall() + 3600
    setup.run()
    check(setup, target, "sum")
    released.set()
    a.join(120)
    assert not a.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], FencedOff), errors
    assert "a newer instance" in str(errors[0]) and "fence 2" in str(errors[0]), errors
    check(setup, target, "sum")
    setup.run()
    check(setup, target, "sum")
