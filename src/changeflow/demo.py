"""The main job: a change history of orders goes through CDC v2, chaos and Spark, and comes back.

Generate orders created, updated and deleted over time; write the history as CDC v2 by two
redundant writers; duplicate, reorder and re-batch the files; decode them on Spark; print the
collection at the final frontier and check it against the original, exactly. Then decode them
again as a stream and append the history, frontier by frontier, to the durable shard ``orders``,
resuming where an earlier run stopped, and check the shard exactly too. Finally materialize the
shard into table ``orders`` of ``<home>/orders.sqlite`` by ``order_id``, exactly once (a later
run finds the checkpoint done), and check the table against the collection.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pyarrow as pa
from rich.console import Console
from rich.status import Status
from rich.table import Table

from changeflow.cdc.chaos import chaos_copy
from changeflow.cdc.files import write_messages
from changeflow.cdc.writer import write_history
from changeflow.collection import read
from changeflow.config import Config
from changeflow.errors import InvalidInput
from changeflow.materialize.runtime import Materialization, Progress, materialize
from changeflow.storage import ReadCapability, Storage, WriteCapability
from changeflow.storage.ingest import IngestStats, ingest
from changeflow.time import Antichain
from changeflow.updates import DIFF, canonical_json

COLUMNS = ["order_id", "customer", "amount_cents", "status"]
Row = tuple[int, str, int, str]
Update = tuple[Row, int, int]

SHARD, TIMELINE = "orders", "counter"
SCHEMA = pa.schema(
    [
        ("order_id", pa.int64()),
        ("customer", pa.string()),
        ("amount_cents", pa.int64()),
        ("status", pa.string()),
    ]
)
Fingerprint = tuple[int, str]  # a collection's rows and the sha256 of its canonical JSON
MANIFEST = "manifest.json"  # in <home>/demo: what the last run generated there


def generate_orders(
    seed: int = 7, ticks: int = 1000, per_tick: int = 50
) -> list[tuple[list[tuple[Row, int, int]], Antichain]]:
    """A history of ``(updates, frontier)`` steps: orders created, updated and deleted.

    Linear in ``ticks * per_tick`` (up to a log factor): an order to change is picked by its
    rank among the open ones, in O(log n), never by listing them all.
    """
    rng = random.Random(seed)
    open_orders = _OpenOrders(ticks * per_tick)
    history, next_id = [], 0
    for t in range(ticks):
        updates: list[tuple[Row, int, int]] = []
        for _ in range(per_tick):
            roll = rng.random()
            if roll < 0.45 or len(open_orders) < 10:
                row = (next_id, f"c{rng.randrange(500):03d}", rng.randrange(100, 50_000), "new")
                open_orders.add(row)
                next_id += 1
                updates.append((row, t, 1))
                continue
            # randrange(n) draws exactly as choice() of n items does: the same history.
            old = open_orders.at(rng.randrange(len(open_orders)))
            if roll < 0.85:
                status = rng.choice(["paid", "shipped", "returned"])
                new = (old[0], old[1], old[2] + rng.randrange(-50, 50), status)
                updates += [(old, t, -1), (new, t, 1)]
                open_orders.replace(new)
            else:
                updates.append((old, t, -1))
                open_orders.remove(old[0])
        history.append((updates, Antichain.single(t + 1)))
    return history


class _OpenOrders:
    """Open orders by id (ids below ``capacity``, added in increasing order), with the one of
    a given rank in id order found in O(log capacity) through a Fenwick tree of open ids."""

    def __init__(self, capacity: int) -> None:
        self.rows: dict[int, Row] = {}
        self.tree = [0] * (capacity + 1)  # tree[i]: open ids in (i - lowbit(i), i], 1-based
        self.top = 1 << capacity.bit_length()

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, row: Row) -> None:
        self.rows[row[0]] = row
        self._count(row[0], 1)

    def replace(self, row: Row) -> None:
        self.rows[row[0]] = row

    def remove(self, order_id: int) -> None:
        del self.rows[order_id]
        self._count(order_id, -1)

    def at(self, rank: int) -> Row:
        """The open order with ``rank`` open orders of smaller id before it."""
        i, step, tree = 0, self.top, self.tree
        while step:  # descend: the largest i with fewer than rank + 1 open ids in [1, i]
            if i + step < len(tree) and tree[i + step] <= rank:
                i += step
                rank -= tree[i]
            step >>= 1
        return self.rows[i]  # 1-based position i + 1 is id i

    def _count(self, order_id: int, delta: int) -> None:
        i, tree = order_id + 1, self.tree
        while i < len(tree):
            tree[i] += delta
            i += i & -i


@dataclass
class _Step:
    """A running step: ``update`` changes what the spinner and the final line say."""

    what: str
    status: Status

    def update(self, what: str) -> None:
        self.what = what
        self.status.update(f"{what}…")


@contextmanager
def _step(console: Console, what: str) -> Iterator[_Step]:
    start = time.perf_counter()
    with console.status(f"{what}…") as status:
        step = _Step(what, status)
        yield step
    took = time.perf_counter() - start
    console.print(f"[green]✓[/green] {step.what} [dim]({took:.1f} s)[/dim]")


def run_demo(
    config: Config,
    ticks: int = 1000,
    per_tick: int = 50,
    seed: int = 7,
    stop_after_appends: int | None = None,
) -> bool:
    """Run the example end to end; return whether the collection, the shard and the table are
    exact.

    A home holds one history. A rerun of the same one whose files are unchanged (the manifest
    says so) and whose shard holds it to the end generates and decodes nothing: it checks the
    shard and the table against the collection's fingerprint, and materializes what remains.
    Another history in a home whose shard holds one is refused before anything is written.
    ``stop_after_appends`` (for tests) stops the job after that many appends to the shard, as
    an interruption would, and returns False.
    """
    if ticks < 1 or per_tick < 1:
        raise InvalidInput(
            f"the demo needs at least one tick and one change per tick, not --ticks {ticks} "
            f"--per-tick {per_tick}"
        )
    console = Console()
    run = Manifest(ticks, per_tick, seed)
    remembered = Manifest.read(config.home / "demo")
    storage = Storage.open(config)
    try:
        upper = storage.state(SHARD).upper if SHARD in storage.shards() else None
        if remembered and not remembered.same_history(run) and upper not in (None, Antichain([0])):
            raise InvalidInput(
                f"shard {SHARD!r} in {config.home} holds the history of {remembered.flags()}, "
                f"not of {run.flags()}; rerun with those, or use a new --home for this one"
            )
        # The same history, held by the shard to its end, from files as they were written:
        if (
            remembered
            and remembered.same_history(run)
            and upper == Antichain()
            and remembered.files == _digests(config.home / "demo")
        ):
            exact = _rerun(console, storage, config, remembered)
        else:
            exact = _run(console, storage, config, run, stop_after_appends)
    finally:
        storage.close()
    if stop_after_appends is not None:
        return exact
    from changeflow.demo_sql import run_sql_demo

    return run_sql_demo(config, console) and exact


@dataclass(frozen=True)
class Manifest:
    """What a run generated under ``<home>/demo``: its sizes and seed, the sha256 of every file
    it wrote there, and the fingerprint of the final collection (so a rerun can check the shard
    and the table without generating the history again)."""

    ticks: int
    per_tick: int
    seed: int
    files: dict[str, str] = field(default_factory=dict)
    collection: Fingerprint = (0, "")

    def same_history(self, other: Manifest) -> bool:
        return (self.ticks, self.per_tick, self.seed) == (other.ticks, other.per_tick, other.seed)

    def flags(self) -> str:
        return f"--ticks {self.ticks} --per-tick {self.per_tick} --seed {self.seed}"

    @classmethod
    def read(cls, root: Path) -> Manifest | None:
        """The manifest in ``root``; None if there is none or it is unreadable (then the run
        generates everything again, as if there were none)."""
        try:
            value = json.loads((root / MANIFEST).read_text())
            rows, digest = value.pop("collection")
            return cls(**value, collection=(rows, digest))
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def write(self, root: Path) -> None:
        """Write the manifest last, atomically: files written before it are complete."""
        temporary = root / f".{MANIFEST}.tmp"
        temporary.write_text(json.dumps(asdict(self), indent=1))
        temporary.replace(root / MANIFEST)


def fingerprint(collection: Mapping[Row, int]) -> Fingerprint:
    """``(rows, sha256)`` of a collection: equal collections, equal fingerprints."""
    rows = sorted([*row, n] for row, n in collection.items())
    return len(rows), hashlib.sha256(canonical_json(rows).encode()).hexdigest()


def _digests(root: Path) -> dict[str, str]:
    """The sha256 of every file under ``root`` but the manifest, by path relative to it."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }


def _rerun(console: Console, storage: Storage, config: Config, manifest: Manifest) -> bool:
    """Check the complete shard and materialize what remains, without generating anything."""
    console.print(
        f"[bold]nothing to generate or decode:[/bold] {config.home / 'demo'} holds the CDC files "
        f"of {manifest.flags()}, unchanged, and shard {SHARD!r} holds their history to the end"
    )
    read_cap, write_cap = _open_shard(storage)
    storage.drop(write_cap)
    try:
        exact = _check_shard(console, storage, read_cap, manifest.ticks, manifest.collection)
    finally:
        storage.drop(read_cap)
    return exact and _materialize(console, storage, config, manifest.collection)


def _run(
    console: Console,
    storage: Storage,
    config: Config,
    run: Manifest,
    stop_after_appends: int | None,
) -> bool:
    """Generate, write, mangle and decode the history; append it to the shard beyond what it
    holds; materialize it. Every stage is checked against the generated collection."""
    from changeflow.cdc.spark import read_cdc
    from changeflow.spark import get_spark

    root = config.home / "demo"
    shutil.rmtree(root, ignore_errors=True)
    writers = [root / "cdc" / "writer-a", root / "cdc" / "writer-b"]
    chaos_dir = root / "cdc-chaos"
    ticks = run.ticks

    with _step(console, f"generated {ticks} ticks of order changes"):
        history = generate_orders(run.seed, ticks, run.per_tick)
        original = [u for updates, _ in history for u in updates]
        expected = read(original, ticks)
    with _step(console, f"wrote {len(original):,} updates as CDC v2 (Parquet) by two writers"):
        for folder, batch_size in zip(writers, (1_000, 5_000), strict=True):
            messages = write_history(history, batch_size)
            write_messages(folder, messages, "parquet", COLUMNS, files=4)
    with _step(console, "duplicated, reordered and re-batched them (chaos)"):
        files = chaos_copy(writers, chaos_dir, seed=run.seed, files=32, duplication=0.5)
        replace(run, files=_digests(root), collection=fingerprint(expected)).write(root)
    with _step(console, f"started Spark ({config.spark_master})"):
        spark = get_spark(config.spark_master)
    with _step(console, f"decoded {len(files)} files on Spark"):
        frame, frontier = read_cdc(spark, [str(chaos_dir)], "parquet")
        current = frame.groupBy(*COLUMNS).sum(DIFF).withColumnRenamed(f"sum({DIFF})", "count")
        recovered = {tuple(r[c] for c in COLUMNS): r["count"] for r in current.collect()}
        recovered = {row: n for row, n in recovered.items() if n}

    _show(console, recovered, frontier)
    exact = _verdict(
        console, f"the collection decoded at frontier {frontier.to_json()}", recovered, expected
    )
    stored = _store(console, storage, chaos_dir, original, ticks, stop_after_appends)
    if not stored:
        return False
    return _materialize(console, storage, config, expected) and exact


def _verdict(
    console: Console,
    what: str,
    actual: Mapping[Row, int],
    expected: Mapping[Row, int] | Fingerprint,
) -> bool:
    """Say whether ``actual`` is exactly the collection (given as itself or its fingerprint)."""
    if isinstance(expected, Mapping):
        exact, rows = dict(actual) == dict(expected), len(expected)
    else:
        exact, rows = fingerprint(actual) == expected, expected[0]
    if exact:
        console.print(
            f"[bold green]exact:[/bold green] {what} holds the {rows:,} rows of the collection"
        )
        return True
    if isinstance(expected, Mapping):
        missing = len(expected.items() - actual.items())
        extra = len(actual.items() - expected.items())
        detail = f"{missing} rows missing, {extra} extra"
    else:
        detail = f"its {len(actual):,} rows differ from the {rows:,} rows of the collection"
    console.print(f"[bold red]mismatch:[/bold red] {what}: {detail}")
    return False


def _store(
    console: Console,
    storage: Storage,
    chaos_dir: Path,
    original: list[Update],
    ticks: int,
    stop_after: int | None,
) -> bool:
    """Append the history decoded from ``chaos_dir`` to the shard, beyond what it holds; check
    the shard against ``original`` exactly. False if stopped after ``stop_after`` appends."""
    read_cap, write_cap = _open_shard(storage)
    try:
        held = write_cap.frontier
        if held != Antichain([0]):
            _check_held(storage, read_cap, held, original, ticks)
        resuming = f" from its upper {held.to_json()}" if held != Antichain([0]) else ""
        with _step(console, f"appending the decoded history to shard {SHARD!r}") as step:

            def show(stats: IngestStats) -> None:
                step.update(
                    f"appended {_n(stats.updates, 'update')} to {SHARD!r}{resuming}: "
                    f"{_n(stats.advances, 'advance')} in {_n(stats.appends, 'append')}, up to "
                    f"{stats.upper.to_json()}"
                )
                if stats.appends == stop_after:
                    raise _Stopped

            try:
                stats = ingest(storage, SHARD, [chaos_dir], "parquet", on_progress=show)
            except _Stopped:
                return False
            if not stats.appends:
                step.update(f"shard {SHARD!r} holds the history already: nothing to append")
        state = storage.state(SHARD)
        as_of = state.upper.elements[0] - 1 if state.upper else ticks - 1
        return _check_shard(console, storage, read_cap, ticks, read(original, as_of))
    finally:
        storage.drop(read_cap)
        storage.drop(write_cap)


def _check_shard(
    console: Console,
    storage: Storage,
    read_cap: ReadCapability,
    ticks: int,
    expected: Mapping[Row, int] | Fingerprint,
) -> bool:
    """Show the shard's state and check its contents as of its last readable time."""
    state = storage.state(SHARD)
    as_of = state.upper.elements[0] - 1 if state.upper else ticks - 1
    table = storage.snapshot_table(read_cap, as_of)
    console.print(
        f"shard {SHARD!r} ({state.id}): since {state.since.to_json()}, upper "
        f"{state.upper.to_json()}, {_n(len(state.batches), 'batch')}, {_n(state.rows, 'row')}"
    )
    return _verdict(console, f"shard {SHARD!r} as of {as_of}", _rows(table), expected)


def _materialize(
    console: Console, storage: Storage, config: Config, expected: Mapping[Row, int] | Fingerprint
) -> bool:
    """Materialize the shard into table ``orders`` of ``<home>/orders.sqlite`` by order_id,
    exactly once (a run after a finished one finds the checkpoint done); check the table
    against the collection exactly."""
    path = config.home / "orders.sqlite"
    spec = Materialization(f"{SHARD}-to-sqlite", SHARD, f"sqlite:{path}", ("order_id",))
    with _step(console, f"materializing shard {SHARD!r} into {path.name}") as step:

        def show(p: Progress) -> None:
            step.update(
                f"materializing: {_n(p.updates, 'update')}, {_n(p.transactions, 'transaction')}"
                f", frontier {p.frontier.to_json()}"
            )

        done = materialize(storage, spec, recovery_log(config), on_progress=show)
        step.update(
            f"materialized {_n(done.updates, 'update')} into {path.name} in "
            f"{_n(done.transactions, 'transaction')}"
            if done.transactions
            else f"{path.name}: its checkpoint says done, nothing to materialize"
        )
    shown = f"SELECT * FROM {SHARD} ORDER BY order_id LIMIT 5"
    with closing(sqlite3.connect(path)) as db:
        first = db.execute(shown).fetchall()
        table: list[Row] = db.execute(f"SELECT {', '.join(COLUMNS)} FROM {SHARD}").fetchall()
    console.print(f"$ sqlite3 {path.name} '{shown}'")
    _show_sqlite(console, first, len(table))
    return _verdict(console, f"table {SHARD!r} in {path.name}", Counter(table), expected)


def recovery_log(config: Config) -> Path:
    """The materializations' recovery log under the home (the CLI's too)."""
    return config.home / "materialize" / "recovery.sqlite"


def _open_shard(storage: Storage) -> tuple[ReadCapability, WriteCapability]:
    """Capabilities on the shard, created empty if it does not exist yet."""
    if SHARD not in storage.shards():
        return storage.create(SHARD, SCHEMA, TIMELINE)
    state = storage.state(SHARD)
    if not state.schema.equals(SCHEMA) or state.timeline != TIMELINE:
        raise InvalidInput(
            f"shard {SHARD!r} exists with columns ({_columns(state.schema)}) on timeline "
            f"{state.timeline!r}, but the demo writes ({_columns(SCHEMA)}) on {TIMELINE!r}; "
            "use another --home"
        )
    return storage.acquire_capabilities(SHARD)


def _columns(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in schema)


def _check_held(
    storage: Storage, cap: ReadCapability, held: Antichain, original: list[Update], ticks: int
) -> None:
    """The shard must hold this run's history up to ``held``: the same seed and sizes."""
    as_of = held.elements[0] - 1 if held else ticks - 1
    if not cap.frontier.less_equal(as_of):  # since moved on; the final check still reads it
        return
    if _rows(storage.snapshot_table(cap, as_of)) == read(original, as_of):
        return
    raise InvalidInput(
        f"shard {SHARD!r} holds a different history than this run generates (as of {as_of}); "
        "run with the --seed, --ticks and --per-tick it was written with, or another --home"
    )


class _Stopped(Exception):
    """Stops the appends after as many as a test asked for."""


def _n(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 'es' if noun.endswith('ch') else 's'}"


def _rows(table: pa.Table) -> dict[Row, int]:
    """A snapshot's rows and counts."""
    columns = [table.column(c).to_pylist() for c in COLUMNS]
    return dict(zip(zip(*columns, strict=True), table.column(DIFF).to_pylist(), strict=True))


def _show_sqlite(console: Console, rows: list[Row], total: int) -> None:
    table = Table(title=f"first {len(rows)} of {total:,} rows", title_justify="left")
    for c in COLUMNS:
        table.add_column(c, justify="right" if c in ("order_id", "amount_cents") else "left")
    for row in rows:
        table.add_row(*map(str, row))
    console.print(table)


def _show(console: Console, rows: dict[Row, int], frontier: Antichain, limit: int = 10) -> None:
    table = Table(title=f"orders at frontier {frontier.to_json()} (first {limit} of {len(rows):,})")
    for c in (*COLUMNS, "count"):
        table.add_column(
            c, justify="right" if c in ("order_id", "amount_cents", "count") else "left"
        )
    for row, n in sorted(rows.items())[:limit]:
        table.add_row(*map(str, row), str(n))
    console.print(table)
    by_status: dict[str, int] = {}
    for row, n in rows.items():
        by_status[row[3]] = by_status.get(row[3], 0) + n
    console.print("by status: " + ", ".join(f"{s} {n:,}" for s, n in sorted(by_status.items())))
