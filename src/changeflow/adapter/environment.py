"""An open home: its storage, catalog, write log and timestamp oracles, and the dataflows,
sources and sinks this process hosts while the home is open.

Every item that holds data has a shard named by its GlobalId. To read at a timestamp, the
environment makes each input readable there first: a table's pending commits are applied and
its upper moved past the timestamp (:mod:`~changeflow.storage.txns`); a source ingests the CDC
files that arrived; a materialized view or index has its inputs made readable and its dataflow
stepped until its output is complete at the timestamp. A read never answers from a stale
version: it waits (up to a timeout) instead.

A background thread (the host) does the same every second for every item, so views, indexes
and sinks keep up while nobody reads. Locks, always taken in this order: ``lock`` serialises
catalog changes (DDL) with the host's look at the catalog, never held while anything steps;
one lock per item (:meth:`Environment.item_lock`) serialises the steps of a dataflow, the
ingests of a source and the runs of a sink, so a read waits only for the items it reads; a
small leaf lock guards the table of hosted dataflows. Reads of tables take no lock at all.
Other processes coordinate through consensus.
"""

from __future__ import annotations

import base64
import pickle
import threading
import time
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.adapter.arrangements import Arrangement, index_keys, point
from changeflow.adapter.catalog import Catalog, CatalogState, Item
from changeflow.adapter.constraints import Unique
from changeflow.adapter.group_commit import GroupCommit
from changeflow.adapter.oracle import TimestampOracle
from changeflow.adapter.relations import Relation
from changeflow.compute import plan as P
from changeflow.compute.dataflow import Dataflow, cluster_tier, maintain_view, process_only
from changeflow.compute.operators import Inputs, build
from changeflow.compute.types import NUMERIC, Column, Schema, sql_type
from changeflow.compute.values import stored_values
from changeflow.config import Config
from changeflow.errors import PlanError, Timeout
from changeflow.storage import Storage
from changeflow.storage.ingest import Folder, ingest, ingest_spark
from changeflow.storage.txns import TxnLog, reader
from changeflow.time import to_bound
from changeflow.updates import DIFF, TIME

EPOCH = "EpochMilliseconds"
COLUMNAR_ROWS = 20_000  # a query reading more stored rows than this runs on Arrow columns
PROCESS_ROWS = 10_000_000  # in this process, up to this many (a few GiB of columns at most)
SPARK_ROWS = 500_000  # beyond that, or without a kernel and above this many, on Spark
ARRANGE_ROWS = 2_000_000  # an index of a shard storing more rows is not kept in memory
HISTORY_MS = 3_600_000  # how far back reads AS OF a wall-clock time may go
STORED = ("table", "source", "materialized view", "index")
QUERYABLE = ("table", "source", "view", "materialized view")
Counted = dict[tuple[Any, ...], int]


def schema_of(item: Item) -> Schema:
    """An item's columns as a plan reads them (numeric ones with the scale they show)."""
    scales = item.options.get("scales") or [None] * len(item.columns)
    return tuple(
        Column(n, sql_type(t), nullable, scale)
        for (n, t, nullable), scale in zip(item.columns, scales, strict=True)
    )


def columns_of(schema: Schema) -> tuple[tuple[str, str, bool], ...]:
    return tuple((c.name, c.type.name, c.nullable) for c in schema)


def scales_of(schema: Schema) -> list[int | None]:
    """The scales of a schema's columns, as an item keeps them in its options."""
    return [c.scale for c in schema]


def encode_plan(plan: P.Plan) -> str:
    return base64.b64encode(pickle.dumps(plan)).decode()


def decode_plan(text: str) -> P.Plan:
    return pickle.loads(base64.b64decode(text))


class CatalogResolver:
    """Names of one catalog version as the SQL planner sees them; an index on a view serves
    reads of that view."""

    def __init__(self, state: CatalogState) -> None:
        self.state = state

    def relation(self, name: str) -> Relation:
        item = self.state.by_name(name)
        if item is None or item.kind not in QUERYABLE:
            raise PlanError(f'relation "{name}" does not exist', sqlstate="42P01")
        unique = tuple(Unique.from_json(u) for u in item.options.get("unique") or [])
        plan = self.plan(item)
        return Relation(item.name, item.kind, plan, item.timeline, defaults(item), unique)

    def plan(self, item: Item) -> P.Plan:
        """The plan that reads ``item``: its shard, or an index's, or a view's own plan."""
        if item.kind in ("table", "source", "materialized view"):
            return P.Get(item.id, schema_of(item))
        index = next(
            (
                i
                for i in self.state.items.values()
                if i.kind == "index" and i.options.get("on") == item.id
            ),
            None,
        )
        if index is not None:
            return P.Get(index.id, schema_of(index))
        return decode_plan(item.options["plan"])


def defaults(item: Item) -> tuple[str | None, ...]:
    return tuple(item.options.get("defaults") or (None,) * len(item.columns))


class Environment:
    """One home opened by this process (see the module docstring)."""

    def __init__(self, config: Config, host_seconds: float | None = 1.0) -> None:
        self.config = config
        self.storage = Storage.open(config)
        self.catalog = Catalog(self.storage.consensus)
        self.log = TxnLog(self.storage)
        self.lock = threading.RLock()  # catalog changes (see the module docstring)
        self._hosting = threading.Lock()  # a leaf: the tables below
        self._item_locks: dict[str, threading.Lock] = {}
        self._stopped: set[str] = set()  # dropped items' ids (never reused): not restarted
        self.dataflows: dict[str, Dataflow] = {}
        self.arrangements: dict[tuple[str, tuple[int, ...]], Arrangement] = {}
        self.oracles: dict[str, TimestampOracle] = {}
        self.ingested: dict[str, tuple[float, Any]] = {}  # source -> (when, its files then)
        self.folders: dict[str, Folder] = {}  # source -> the files its ingests retired
        self.committer = GroupCommit(self.log, self.oracle(EPOCH))
        # a commit in the log whose process died before telling the oracle is visible now
        written = self.log.state().last_write.values()
        if written:
            self.oracle(EPOCH).apply_write(max(written))
        self.closed = threading.Event()
        self.host_error: BaseException | None = None
        self.thread: threading.Thread | None = None
        if host_seconds:
            self.thread = threading.Thread(
                target=self._host, args=(host_seconds,), name="changeflow-host", daemon=True
            )
            self.thread.start()

    # -- timestamps --------------------------------------------------------------------------

    def oracle(self, timeline: str) -> TimestampOracle:
        oracle = self.oracles.get(timeline)
        if oracle is None:
            with self._hosting:
                if timeline not in self.oracles:
                    self.oracles[timeline] = TimestampOracle(self.storage.consensus, timeline)
                oracle = self.oracles[timeline]
        return oracle

    def item_lock(self, item_id: str) -> threading.Lock:
        """The lock that serialises the steps of one dataflow, source or sink."""
        lock = self._item_locks.get(item_id)
        if lock is None:
            with self._hosting:
                lock = self._item_locks.setdefault(item_id, threading.Lock())
        return lock

    def read_ts(self, timeline: str, shards: Iterable[str]) -> int:
        """The timestamp a query of ``shards`` in ``timeline`` reads at: for wall-clock
        timelines the oracle's read timestamp (every acknowledged write is visible); for a
        source's own timeline the latest time its data is complete at."""
        oracle = self.oracle(timeline)
        if timeline != EPOCH:
            state = self.catalog.load()
            open_, closed = [], []
            for shard in self.stored_inputs(state, shards):
                item = state.items[shard]
                if item.kind == "source":
                    with self.item_lock(item.id):
                        self.ingest(item, force=True)
                upper = to_bound(self.storage.state(shard).upper)
                if upper is None:
                    closed.append(self.last_time(shard))
                else:
                    open_.append(upper - 1)
            # complete below the open inputs' uppers; closed inputs are complete at every time
            latest = min(open_) if open_ else max(closed, default=-1)
            if latest >= 0:
                oracle.advance_to(latest)
        return oracle.read_ts()

    def last_time(self, shard: str) -> int:
        """The latest time of a closed shard's data (where its contents last changed)."""
        state = self.storage.state(shard)
        last = [b for b in state.batches if b.rows][-1:]
        if not last:
            lowers = [to_bound(b.lower) for b in state.batches]
            return max([x for x in lowers if x is not None], default=0)
        times = self.storage.machine.read(state, last).column(TIME)
        return max(pc.max(times).as_py(), to_bound(last[0].lower) or 0)

    def stored_inputs(self, state: CatalogState, shards: Iterable[str]) -> set[str]:
        """The tables and sources that ``shards`` read, through views and indexes."""
        out: set[str] = set()
        for shard in shards:
            item = state.items.get(shard)
            if item is None:
                continue
            if item.kind in ("table", "source"):
                out.add(shard)
            else:
                out |= self.stored_inputs(state, decode_plan(item.options["plan"]).collections())
        return out

    # -- reading -----------------------------------------------------------------------------

    def evaluate(self, plan: P.Plan, ts: int, timeout: float = 30.0) -> Counted:
        """``plan``'s rows at ``ts``, its inputs read where they are complete at ``ts``: by the
        row operators for small inputs; when they hold more than :data:`COLUMNAR_ROWS` rows
        (stored rows, before consolidation) and the plan does more than read one input, on
        Arrow columns in this process (up to :data:`PROCESS_ROWS`); on Spark beyond, or
        where the columns have no kernel for the plan and the inputs pass :data:`SPARK_ROWS`.
        """
        shards = plan.collections()
        self.make_readable(shards, ts, time.monotonic() + timeout)
        served = self._served(plan, ts)
        if served is not None:  # a point read through an index's arrangement
            return evaluate_once(plan, served, ts)
        stored = sum(b.rows for s in shards for b in self.storage.state(s).batches)
        if isinstance(plan, P.Get) or stored <= COLUMNAR_ROWS:
            return evaluate_once(plan, {s: self.snapshot(s, ts) for s in shards}, ts)
        if stored <= PROCESS_ROWS:
            found = self._evaluate_columnar(plan, shards, ts)
            if found is not None:
                return found
        if stored > SPARK_ROWS and process_only(plan) is None:
            return self._evaluate_on_spark(plan, shards, ts)
        return evaluate_once(plan, {s: self.snapshot(s, ts) for s in shards}, ts)

    def _evaluate_columnar(self, plan: P.Plan, shards: set[str], ts: int) -> Counted | None:
        """``plan`` on the snapshots' Arrow columns in this process; None where it has a node
        without a kernel or only the rows can tell (an overflow): Spark evaluates it then."""
        from changeflow.compute.arrow_eval import Unsupported, check, evaluate_arrow
        from changeflow.compute.values import python_values

        try:
            check(plan)
            tables = {s: reader(self.storage, s).updates_until(ts) for s in shards}
            rel = evaluate_arrow(plan, tables)
        except Unsupported:
            return None
        columns = []
        for column, kind in zip(rel.columns, rel.kinds, strict=True):
            values = python_values(column)
            if kind == NUMERIC and getattr(column.type, "scale", 0) >= NUMERIC.arrow.scale:
                # from unconstrained numerics: without storage's zeros, as the rows read them
                values = [v if v is None else plain(v) for v in values]
            columns.append(values)
        rows = zip(*columns, strict=True) if columns else [()] * len(rel)
        out: Counted = {}
        for row, diff in zip(rows, rel.counts.to_pylist(), strict=True):
            out[row] = out.get(row, 0) + diff
        return {r: c for r, c in out.items() if c}

    def _served(self, plan: P.Plan, ts: int) -> dict[str, Counted] | None:
        """The rows of ``plan``'s input that a filter above it can pass, found through an
        index's arrangement (:mod:`~changeflow.adapter.arrangements`); None without one."""
        found = point(plan)
        if found is None:
            return None
        shard = found.shard
        for key in index_keys(self.catalog.load(), shard):
            arrangement = None
            if all(i in found.equal for i in key):
                arrangement = self.arrangement(shard, key)
                values = tuple(found.equal[i] for i in key)
                rows = None if arrangement is None else arrangement.read(values, ts)
            elif len(key) == 1 and key[0] in found.ranges and _integer(plan, key[0]):
                arrangement = self.arrangement(shard, key)
                low, high = found.ranges[key[0]]
                rows = None if arrangement is None else arrangement.read_range(low, high, ts)
            else:
                continue
            if rows is not None:
                return {shard: rows}
        return None

    def arrangement(self, shard: str, key: tuple[int, ...]) -> Arrangement | None:
        """The arrangement of ``shard`` by ``key``, made if need be; None for a shard too
        large to keep in this process's memory (:data:`ARRANGE_ROWS` stored rows)."""
        found = self.arrangements.get((shard, key))
        if found is None:
            if sum(b.rows for b in self.storage.state(shard).batches) > ARRANGE_ROWS:
                return None
            with self._hosting:
                found = self.arrangements.setdefault((shard, key), Arrangement(self, shard, key))
        return found

    def _keep_arrangements(self, state: CatalogState) -> None:
        """Build or move forward the arrangement of every index (the host's part)."""
        wanted = set()
        for item in state.items.values():
            if item.kind == "index" and item.options.get("tier") != "cluster":
                for shard in (item.id, item.options.get("on")):
                    for key in index_keys(state, shard) if shard else ():
                        wanted.add((shard, key))
        for gone in self.arrangements.keys() - wanted:
            self.arrangements.pop(gone, None)
        for shard, key in wanted:
            if self.closed.is_set():
                return
            arrangement = self.arrangement(shard, key)
            if arrangement is not None:
                arrangement.catch_up()

    def _evaluate_on_spark(self, plan: P.Plan, shards: set[str], ts: int) -> Counted:
        from changeflow.compute.spark_eval import evaluate_spark
        from changeflow.spark import get_spark

        spark = get_spark(self.config.spark_master)
        frames = {s: self.storage.snapshot(reader(self.storage, s), ts, spark) for s in shards}
        return counted(evaluate_spark(plan, frames, ts).toArrow())

    def snapshot(self, shard: str, ts: int) -> Counted:
        table = reader(self.storage, shard).snapshot_table(ts)
        return counted(table)

    def changes(self, shard: str, after: int, upper: int) -> Counted | None:
        """The net changes of ``shard`` at times in ``(after, upper)`` (its upper is at least
        ``upper``); None if it has been compacted past ``after`` (they cannot be told)."""
        state = self.storage.state(shard)
        since = to_bound(state.since)
        if since is None or since > after:
            return None
        return counted(reader(self.storage, shard).updates(state, after + 1, upper))

    def make_readable(self, shards: Iterable[str], ts: int, deadline: float) -> None:
        """Wait until each shard of ``shards`` is complete at ``ts`` (see the module doc)."""
        state = self.catalog.load()
        shards = set(shards)
        missing = shards - state.items.keys()
        if missing:
            raise PlanError(
                f"{', '.join(sorted(missing))} was dropped while it was being read",
                sqlstate="42P01",
            )
        tables = {s for s in shards if state.items[s].kind == "table"}
        if tables:
            self.log.ready(tables, ts)
        for shard in sorted(shards - tables):
            item = state.items[shard]
            if item.kind != "source":
                self.make_readable(decode_plan(item.options["plan"]).collections(), ts, deadline)
            while not self._complete(shard, ts):
                flow = None if item.kind == "source" else self.dataflow(item)
                with self.item_lock(shard):  # waits only for this item's step in progress
                    if self._complete(shard, ts):
                        break
                    if flow is None:
                        self.ingest(item, force=True)
                    elif self.dataflows.get(shard) is flow:  # not closed meanwhile
                        flow.step(timeout=0.05)
                if self._complete(shard, ts):
                    break
                if time.monotonic() > deadline:
                    upper = to_bound(self.storage.state(shard).upper)
                    raise Timeout(
                        f'{item.kind} "{item.name}" is not complete at {ts} yet (its data is '
                        f"complete below {upper}); its inputs have not advanced that far",
                        sqlstate="57014",
                    )
                if item.kind == "source":
                    time.sleep(0.2)

    def _complete(self, shard: str, ts: int) -> bool:
        upper = to_bound(self.storage.state(shard).upper)
        return upper is None or upper > ts

    # -- hosting -----------------------------------------------------------------------------

    def dataflow(self, item: Item) -> Dataflow:
        """The dataflow of a materialized view or index, started in this process if needed."""
        flow = self.dataflows.get(item.id)
        if flow is None:
            with self._hosting:
                flow = self.dataflows.get(item.id)
                if flow is None:
                    if item.id in self._stopped:
                        raise PlanError(
                            f'{item.kind} "{item.name}" was dropped while it was being read',
                            sqlstate="42P01",
                        )
                    flow = self._start(item, decode_plan(item.options["plan"]))
        return flow

    def start_dataflow(self, item: Item, plan: P.Plan) -> Dataflow:
        """Install the dataflow of a materialized view or index on the tier its item names
        (``cluster``: its arrangements on the Spark executors; else in this process)."""
        with self._hosting:
            return self._start(item, plan)

    def _start(self, item: Item, plan: P.Plan) -> Dataflow:
        spark = None
        if item.options.get("tier") == "cluster":
            from changeflow.spark import get_spark

            spark = get_spark(self.config.spark_master)
        flow = maintain_view(self.storage, item.id, plan, item.id, spark, cluster=spark is not None)
        self.dataflows[item.id] = flow
        return flow

    def choose_tier(self, plan: P.Plan, setting: bool | None) -> str:
        """The tier of a new dataflow: as ``setting`` (the view's CLUSTER option) says, else by
        its inputs' size against ``CHANGEFLOW_CLUSTER_ROWS`` (the tables' committed writes
        applied first: small ones wait in the write log)."""
        if setting is None:
            self.log.apply()
        chosen = cluster_tier(self.storage, plan, setting, self.config.cluster_rows)
        return "cluster" if chosen else "process"

    def ingest(self, item: Item, force: bool = False) -> None:
        """Append the source's newly arrived CDC files (at most once a second unless forced;
        nothing is decoded while the folder's files are those it held last time)."""
        from changeflow.cdc.files import list_files

        now, path = time.monotonic(), item.options["path"]
        last, seen = self.ingested.get(item.id, (0.0, None))
        if not force and now - last < 1.0:
            return
        try:
            files = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in list_files([path])]
        except OSError:
            files = None  # changing under us: decode
        if files is not None and files == seen:
            self.ingested[item.id] = (now, seen)
            return
        fmt, folder = item.options.get("format"), self.folders.setdefault(item.id, Folder())
        if files and sum(size for _, size, _ in files) >= self.config.spark_ingest_bytes:
            from changeflow.spark import get_spark

            spark = get_spark(self.config.spark_master)
            ingest_spark(self.storage, item.id, [path], fmt, spark, folder)  # on the executors
        else:
            ingest(self.storage, item.id, [path], fmt, folder=folder)
        self.ingested[item.id] = (now, files)

    def stop_hosting(self, ids: Iterable[str], dropped: bool = True) -> None:
        """Close the dataflows of ``ids`` once their step in progress ends; ``dropped`` ones
        are never started again by this environment."""
        for i in ids:
            with self.item_lock(i):
                with self._hosting:
                    if dropped:
                        self._stopped.add(i)
                    flow = self.dataflows.pop(i, None)
                if flow is not None:
                    flow.close()

    def tick(self) -> None:
        """One round of hosting: every table advanced to the oracle's read timestamp, every
        source ingested, every dataflow stepped and every sink caught up. The catalog is read
        under :attr:`lock`; each item is then stepped under its own lock only, so sessions
        reading other items (or tables) never wait for this round."""
        from changeflow.adapter.sinks import run_sink

        with self.lock:
            state = self.catalog.load()
            gone = self.dataflows.keys() - state.items.keys()
            flows = {
                i.id: self.dataflow(i)
                for i in state.items.values()
                if i.kind in ("materialized view", "index")
            }
        self.stop_hosting(gone)
        tables = {i.id for i in state.items.values() if i.kind == "table"}
        oracle = self.oracle(EPOCH)
        oracle.apply_write(int(time.time() * 1000))
        now = oracle.read_ts()  # time moves by itself: idle tables and mz_now() follow the clock
        if tables:
            self.log.ready(tables, now, tidy=True)
        self.allow_compaction(state, now - HISTORY_MS)
        for item in state.items.values():
            if self.closed.is_set():
                return
            with self.item_lock(item.id):
                if item.kind == "source":
                    self.ingest(item)
                elif item.id in flows and self.dataflows.get(item.id) is flows[item.id]:
                    flows[item.id].step()
                elif item.kind == "sink" and item.id not in self._stopped:
                    run_sink(self, item)
        self._keep_arrangements(state)

    def allow_compaction(self, state: CatalogState, before: int) -> None:
        """Let the wall-clock items' shards compact up to ``before``: reads AS OF an older time
        are refused from then on (the adapter keeps :data:`HISTORY_MS` of history)."""
        shards = set(self.storage.shards())
        for item in state.items.values():
            if item.shard is None or item.timeline != EPOCH or item.id not in shards:
                continue
            cap = reader(self.storage, item.id)
            since = to_bound(cap.frontier)
            if since is not None and since < before:
                cap.downgrade(before)

    def _host(self, seconds: float) -> None:
        while not self.closed.wait(seconds):
            try:
                self.tick()
            except Exception as e:  # noqa: BLE001 — kept for the status page; the host goes on
                self.host_error = e

    def close(self) -> None:
        self.closed.set()
        if self.thread is not None:
            self.thread.join(timeout=30)
        with self.lock:
            self.stop_hosting(list(self.dataflows), dropped=False)
            self.storage.close()


def _integer(plan: P.Plan, column: int) -> bool:
    """Is column ``column`` of ``plan``'s only input an integer?"""
    get = next(p for p in _gets(plan))
    return get.schema[column].type.integer


def _gets(plan: P.Plan) -> list[P.Get]:
    own = [plan] if isinstance(plan, P.Get) else []
    return own + [g for p in plan.inputs() for g in _gets(p)]


def evaluate_once(plan: P.Plan, inputs: dict[str, Counted], ts: int) -> Counted:
    """``plan``'s rows at ``ts`` from its inputs' contents there, computed by the dataflow
    operators in one step (hash joins and grouped state, where the reference evaluator, the
    oracle they are tested against, joins by the product of its inputs)."""
    sources = Inputs()
    root = build(plan, sources, at=ts)
    for name in sources.names():
        sources.feed(name, [(row, ts, count) for row, count in inputs[name].items()])
    out: Counted = {}
    for row, t, diff in root.step(ts + 1):
        if t <= ts:  # a temporal filter also emits the rows' future retractions
            out[row] = out.get(row, 0) + diff
    return {r: c for r, c in out.items() if c}


def counted(table: pa.Table) -> Counted:
    """An update frame's rows with their summed diffs (zeros left out)."""
    names = [n for n in table.column_names if n not in (TIME, DIFF)]
    columns = [_plain(table.column(n)) for n in names]
    out: Counted = {}
    for row, diff in zip(zip(*columns, strict=True), table.column(DIFF).to_pylist(), strict=True):
        out[row] = out.get(row, 0) + diff
    return {r: c for r, c in out.items() if c}


def triples(table: pa.Table) -> list[tuple[tuple[Any, ...], int, int]]:
    """An update frame's ``(row, time, diff)`` triples, values as :func:`counted` gives them."""
    names = [n for n in table.column_names if n not in (TIME, DIFF)]
    rows = zip(*(_plain(table.column(n)) for n in names), strict=True)
    times, diffs = table.column(TIME).to_pylist(), table.column(DIFF).to_pylist()
    return list(zip(rows, times, diffs, strict=True))


def _plain(column: pa.ChunkedArray) -> list[Any]:
    """A column's values; numerics without the trailing zeros of storage's fixed scale (a
    stored 5.0000000000 reads as 5, as the query computed it), except a column declared
    ``numeric(p, s)``, whose values have its scale, as PostgreSQL's do (1470.10)."""
    values = stored_values(column.to_pylist(), column.type)
    if not pa.types.is_decimal(column.type) or column.type != NUMERIC.arrow:
        return values
    return [v if v is None else plain(v) for v in values]


def plain(value: Decimal) -> Decimal:
    """``value`` without trailing zeros after the point (and no exponent)."""
    if value == value.to_integral_value():
        return value.quantize(Decimal(1))
    return value.normalize()
