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

import threading
import time
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.adapter.arrangements import (
    Arrangement,
    Fixed,
    constraint_keys,
    index_keys,
    narrowed,
)
from changeflow.adapter.catalog import Catalog, CatalogState, Item
from changeflow.adapter.columnar_rows import columnar, worth_columns
from changeflow.adapter.exact_filter import exact_rows, point_path
from changeflow.adapter.group_commit import GroupCommit
from changeflow.adapter.oracle import TimestampOracle
from changeflow.adapter.plan_cache import PlanCache
from changeflow.adapter.relations import Finishing
from changeflow.adapter.resolver import decode_plan
from changeflow.adapter.rows import counted, evaluate_once, summed_rows
from changeflow.adapter.sources import ingest_source
from changeflow.adapter.summed import Copies
from changeflow.compute import plan as P
from changeflow.compute.dataflow import Dataflow, cluster_tier, maintain_view, process_only
from changeflow.config import Config
from changeflow.errors import EvalError, PlanError, StoreGone, Timeout
from changeflow.storage import Storage
from changeflow.storage.state import ShardState
from changeflow.storage.txns import TxnLog, View, reader
from changeflow.time import to_bound
from changeflow.updates import TIME

EPOCH = "EpochMilliseconds"
COLUMNAR_ROWS = 20_000  # a query reading more stored rows than this runs on Arrow columns
PROCESS_ROWS = 10_000_000  # in this process, up to this many (a few GiB of columns at most)
SPARK_ROWS = 500_000  # beyond that, or without a kernel and above this many, on Spark
ARRANGE_ROWS = 2_000_000  # an index of a shard storing more rows is not kept in memory
HISTORY_MS = 3_600_000  # how far back reads AS OF a wall-clock time may go
COMPACT_SLACK_MS = 60_000  # the host moves a since once it is this far behind (not each tick)
STORED = ("table", "source", "materialized view", "index")
Counted = dict[tuple[Any, ...], int]


class Environment:
    """One home opened by this process (see the module docstring)."""

    def __init__(self, config: Config, host_seconds: float | None = 1.0) -> None:
        self.config = config
        self.storage = Storage.open(config)
        self.catalog = Catalog(self.storage.consensus)
        self.log = TxnLog(self.storage)
        from changeflow.adapter.alter import reconcile  # a change of columns cut short

        reconcile(self)
        self.lock = threading.RLock()  # catalog changes (see the module docstring)
        self._hosting = threading.Lock()  # a leaf: the tables below
        self._item_locks: dict[str, threading.Lock] = {}
        self._stopped: set[str] = set()  # dropped items' ids (never reused): not restarted
        self.dataflows: dict[str, Dataflow] = {}
        self.started: dict[str, str] = {}  # the encoded plan each dataflow was started with
        self.arrangements: dict[tuple[str, tuple[int, ...]], Arrangement] = {}
        self.summed = Copies(self.storage)  # shards' history summed for their latest rows
        self.oracles: dict[str, TimestampOracle] = {}
        self.plans = PlanCache()  # statements' plans by text and catalog version
        self.ingested: dict[str, tuple[float, Any]] = {}  # source -> (when, its files then)
        self.committer = GroupCommit(self.log, self.oracle(EPOCH))
        # the oracle's own state catches up with the log (its reads already do: the floor)
        written = self.log.state().last_write.values()
        if written:
            self.oracle(EPOCH).apply_write(max(written))
        self.closed = threading.Event()
        self.host_error: BaseException | None = None
        self.gone: StoreGone | None = None  # the store was deleted underneath (the host stops)
        self.thread: threading.Thread | None = None
        from changeflow.adapter.temp_tables import sweep  # of processes gone
        from changeflow.adapter.txn_ddl import sweep_hidden

        sweep(self)
        sweep_hidden(self)
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
                    floor = self.log.last_commit if timeline == EPOCH else None
                    self.oracles[timeline] = TimestampOracle(
                        self.storage.consensus, timeline, floor=floor
                    )
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
                        ingest_source(self, item, force=True)
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

    def evaluate(
        self,
        plan: P.Plan,
        ts: int,
        timeout: float = 30.0,
        read: dict | None = None,
        shown: Finishing | None = None,
    ) -> Counted:
        """``plan``'s rows at ``ts``, its inputs read where they are complete at ``ts``: by the
        row operators for small inputs; when they hold more than :data:`COLUMNAR_ROWS` rows
        (stored rows, before consolidation) and the plan does more than read one input, on
        Arrow columns in this process (up to :data:`PROCESS_ROWS`); on Spark beyond, or
        where the columns have no kernel for the plan and the inputs pass :data:`SPARK_ROWS`.
        With ``shown`` (the query's ORDER BY and LIMIT), Spark returns only the rows it can
        show: the first LIMIT + OFFSET in that order.
        ``read``: the rows read for the row operators, kept there for the next plans of one
        statement (an UPDATE's old and new rows read the table once).
        """
        shards, read = plan.collections(), {} if read is None else read
        deadline = time.monotonic() + timeout
        path = point_path(self.plans, plan)  # a filter on the only input: rows picked on columns
        fixed = path.fixed
        served = read.get(("served", ts, repr(fixed)))  # this statement's, through an index
        if served is None:
            views = read.get(("views", ts, frozenset(shards)))  # the statement's, at ``ts``
            if views is None:
                views = read[("views", ts, frozenset(shards))] = self._views(plan, shards, ts)
            if views is None:
                self.make_readable(shards, ts, deadline)
            served = self._served(plan, ts, views)
        if served is not None:  # a point read through an index's arrangement
            read[("served", ts, repr(fixed))] = served
            return evaluate_once(plan, served, ts)
        stored = sum(b.rows for s in shards for b in self._state(s, views).batches)
        stored += sum(v.pending.num_rows for v in (views or {}).values() if v.pending is not None)
        if isinstance(plan, P.Get) or stored <= COLUMNAR_ROWS:
            inputs = {}
            for s in shards:  # one shard at ``ts`` through one filter: the same rows
                key = (s, ts, repr(fixed))
                found = read.get(key)
                if found is None and fixed is not None and ("picked", *key) not in read:
                    updates = self.updates_until(s, ts, views)  # the only input, on columns
                    picked = read[("picked", *key)] = narrowed(updates, fixed)
                    exact = read[("exact", *key)] = picked is not updates  # by every predicate
                    if worth_columns(plan, picked):  # many: the plan runs on them as columns
                        rows = columnar(exact and path.unfiltered or plan, {s: picked})
                        if rows is not None:
                            return rows
                exact_read = exact_rows(path, read, key, ts)
                if exact_read is not None:  # the rows the filter passes: the plan without it
                    plan, inputs[s] = exact_read
                    continue
                if found is None and ("picked", *key) in read:
                    found = summed_rows(read[("picked", *key)], ts)
                inputs[s] = self.snapshot(s, ts, views, fixed) if found is None else found
                read[key] = inputs[s]
            return evaluate_once(plan, inputs, ts)
        if stored <= PROCESS_ROWS:
            found = self._evaluate_columnar(plan, shards, ts, views)
            if found is not None:
                return found
        if views is not None:  # Spark and the rows beyond read the shards themselves
            self.make_readable(shards, ts, deadline)
            views = None
        if stored > SPARK_ROWS and process_only(plan) is None:
            if shown is not None and shown.limit is not None:
                plan = P.TopK(plan, (), shown.order_by, shown.limit + shown.offset, 0)
            return self._evaluate_on_spark(plan, shards, ts)
        return evaluate_once(plan, {s: self.snapshot(s, ts, None, fixed) for s in shards}, ts)

    def _views(self, plan: P.Plan, shards: set[str], ts: int) -> dict[str, View] | None:
        """A plan reading tables alone: its tables as the write log has them at ``ts``
        without applying it (:meth:`TxnLog.view`), so a read writes nothing; None otherwise
        (the inputs are then made readable at ``ts``)."""
        state = self.catalog.load()
        items = [state.items.get(s) for s in shards]
        if not shards or any(i is None or i.kind != "table" for i in items):
            return None
        return self.log.view(shards, ts)

    def _state(self, shard: str, views: dict[str, View] | None) -> ShardState:
        """``shard``'s state as ``views`` read it (no head read again), or as it is now."""
        view = None if views is None else views.get(shard)
        if view is not None and view.state is not None:
            return view.state
        return self.storage.state(shard)

    def updates_until(self, shard: str, ts: int, views: dict[str, View] | None = None) -> pa.Table:
        """``shard``'s updates up to ``ts`` (complete there, or as ``views`` has it): the
        contents at ``ts`` once summed, the stored history kept summed for reads of the
        latest rows (:mod:`~changeflow.adapter.summed`), so not at their own times."""
        view = None if views is None else views[shard]
        if shard not in self.summed:  # not summed here past ARRANGE_ROWS stored rows
            stored = sum(b.rows for b in self._state(shard, views).batches)
            if stored > ARRANGE_ROWS:
                return self.log.updates_until(shard, ts, view)
        return self.log.updates_until(shard, ts, view, self.summed.get(shard).until)

    def _evaluate_columnar(
        self, plan: P.Plan, shards: set[str], ts: int, views: dict[str, View] | None = None
    ) -> Counted | None:
        """``plan`` on the snapshots' Arrow columns in this process; None where it has a node
        without a kernel or only the rows can tell (an overflow): Spark evaluates it then."""
        return columnar(plan, {s: self.updates_until(s, ts, views) for s in shards})

    def _served(
        self, plan: P.Plan, ts: int, views: dict[str, View] | None = None
    ) -> dict[str, Counted] | None:
        """The rows of ``plan``'s input that a filter above it can pass, found through an
        index's arrangement (:mod:`~changeflow.adapter.arrangements`), with the write log's
        ``views`` of the tables (or read where they are complete); None without one."""
        found = point_path(self.plans, plan).fixed
        if found is None:
            return None
        shard = found.shard
        view = None if views is None else views.get(shard)
        for key in index_keys(self.catalog.load(), shard):
            arrangement = None
            if all(i in found.equal for i in key):
                arrangement = self.arrangement(shard, key)
                values = tuple(found.equal[i] for i in key)
                rows = None if arrangement is None else arrangement.read(values, ts, view)
            elif len(key) == 1 and key[0] in found.ranges and _integer(plan, key[0]):
                arrangement = self.arrangement(shard, key)
                low, high = found.ranges[key[0]]
                rows = None if arrangement is None else arrangement.read_range(low, high, ts, view)
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
                on = state.items.get(item.options.get("on"))
                # the shard its reads go to: a stored item's own, else the index's
                shard = on.id if on is not None and on.kind in STORED else item.id
                for key in index_keys(state, shard):
                    wanted.add((shard, key))
            for key in constraint_keys(item):  # kept once a read made it
                if (item.id, key) in self.arrangements:
                    wanted.add((item.id, key))
        for gone in self.arrangements.keys() - wanted:
            self.arrangements.pop(gone, None)
        for shard in self.summed.shards() - state.items.keys():  # dropped
            self.summed.pop(shard)
        for shard, key in wanted:
            if self.closed.is_set():
                return
            arrangement = self.arrangement(shard, key)
            if arrangement is not None:
                arrangement.catch_up()

    def _evaluate_on_spark(self, plan: P.Plan, shards: set[str], ts: int) -> Counted:
        from changeflow.compute.spark_eval import evaluate_spark
        from changeflow.compute.spark_expr import from_spark
        from changeflow.spark import get_spark

        spark = get_spark(self.config.spark_master)
        frames = {s: self.storage.snapshot(reader(self.storage, s), ts, spark) for s in shards}
        kinds = [c.type for c in plan.schema]
        return counted(from_spark(evaluate_spark(plan, frames, ts).toArrow(), kinds))

    def snapshot(
        self,
        shard: str,
        ts: int,
        views: dict[str, View] | None = None,
        fixed: Fixed | None = None,
    ) -> Counted:
        """``shard``'s rows at ``ts`` (see :meth:`updates_until`); with ``fixed``, only
        those a filter fixing those columns can pass (:func:`narrowed`)."""
        updates = self.updates_until(shard, ts, views)
        return summed_rows(updates if fixed is None else narrowed(updates, fixed), ts)

    def changes(self, shard: str, after: int, upper: int) -> Counted | None:
        """The net changes of table ``shard`` at times in ``(after, upper)`` (the write log's
        upper is at least ``upper``); None if it has been compacted past ``after`` (they
        cannot be told)."""
        since = to_bound(self.storage.state(shard).since)
        if since is None or since > after:
            return None
        views = self.log.view({shard}, upper - 1)
        if views is not None:
            return counted(self.log.updates_after(shard, after, views[shard]))
        self.log.ready({shard}, upper - 1)
        table = self.log.updates_until(shard, upper - 1)  # at their own times
        return counted(table.filter(pc.greater(table.column(TIME), after)))

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
                        ingest_source(self, item, force=True)
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
                    item = self.catalog.load().items.get(item.id, item)  # its plan now
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
        self.started[item.id] = item.options.get("plan", "")
        return flow

    def choose_tier(self, plan: P.Plan, setting: bool | None) -> str:
        """The tier of a new dataflow: as ``setting`` (the view's CLUSTER option) says, else by
        its inputs' size against ``CHANGEFLOW_CLUSTER_ROWS`` (the tables' committed writes
        applied first: small ones wait in the write log)."""
        if setting is None:
            self.log.apply()
        chosen = cluster_tier(self.storage, plan, setting, self.config.cluster_rows)
        return "cluster" if chosen else "process"

    def stop_hosting(self, ids: Iterable[str], dropped: bool = True) -> None:
        """Close the dataflows of ``ids`` after their step in progress; ``dropped``: for good."""
        for i in ids:
            with self.item_lock(i):
                with self._hosting:
                    if dropped:
                        self._stopped.add(i)
                    flow = self.dataflows.pop(i, None)
                    if flow is not None and not dropped:  # closed before it starts again
                        flow.close()
                if flow is not None and dropped:
                    flow.close()

    def resume_hosting(self, ids: Iterable[str]) -> None:
        self._stopped.difference_update(ids)  # items a ROLLBACK put back are hosted again

    def tick(self) -> None:
        """One round of hosting: every table advanced to the oracle's read timestamp, every
        source ingested, every dataflow stepped and every sink caught up. The catalog is read
        under :attr:`lock`; each item is then stepped under its own lock only, so sessions
        reading other items (or tables) never wait for this round."""
        from changeflow.adapter.sinks import run_sink

        with self.lock:
            state = self.catalog.load()
            gone = self.dataflows.keys() - state.items.keys()
            # an item whose plan was rewritten (ALTER TABLE) starts again with the new one
            hosted = [i for i in state.items.values() if i.id in self.dataflows]
            moved = [i.id for i in hosted if self.started.get(i.id) != i.options["plan"]]
            flows = {
                i.id: self.dataflow(i)
                for i in state.items.values()
                if i.kind in ("materialized view", "index")
            }
        self.stop_hosting(gone)
        self.stop_hosting(moved, dropped=False)
        tables = {i.id for i in state.items.values() if i.kind == "table"}
        oracle = self.oracle(EPOCH)
        oracle.apply_write(int(time.time() * 1000))
        now = oracle.read_ts()  # time moves by itself: idle tables and mz_now() follow the clock
        if tables:
            self.log.ready(tables, now, tidy=True)
        self.allow_compaction(state, now - HISTORY_MS, COMPACT_SLACK_MS)
        for item in state.items.values():
            if self.closed.is_set():
                return
            with self.item_lock(item.id):
                if item.kind == "source":
                    ingest_source(self, item)
                elif item.id in flows and self.dataflows.get(item.id) is flows[item.id]:
                    try:
                        flows[item.id].step()
                    except EvalError as e:  # the view's reads report it; the others go on
                        self.host_error = e
                elif item.kind == "sink" and item.id not in self._stopped:
                    run_sink(self, item)
        self._keep_arrangements(state)

    def allow_compaction(self, state: CatalogState, before: int, slack: int = 0) -> None:
        """Let the wall-clock items' shards compact up to ``before``: reads AS OF an older time
        are refused from then on (the adapter keeps :data:`HISTORY_MS` of history). A since
        less than ``slack`` behind stays (each move is a consensus write the commits of
        sessions queue behind)."""
        shards = set(self.storage.shards())
        for item in state.items.values():
            if item.shard is None or item.timeline != EPOCH or item.id not in shards:
                continue
            cap = reader(self.storage, item.id)
            since = to_bound(cap.frontier)
            if since is not None and since < before - slack:
                cap.downgrade(before)

    def store_gone(self) -> StoreGone | None:
        """Why the store this environment opened is gone (as the host found, or now); None
        while it is there."""
        if self.gone is None:
            try:
                self.storage.check_present()
            except StoreGone as e:
                self.gone = e
        return self.gone

    def _host(self, seconds: float) -> None:
        while not self.closed.wait(seconds):
            if self.store_gone() is not None:  # nothing written now is kept: the host stops
                return
            try:
                self.tick()
            except Exception as e:  # noqa: BLE001 — kept for the status page; the host goes on
                self.host_error = e

    def close(self) -> None:
        self.closed.set()
        if self.thread is not None:
            self.thread.join(timeout=30)
        self.committer.close()
        with self.lock:
            self.stop_hosting(list(self.dataflows), dropped=False)
            self.storage.close()


def _integer(plan: P.Plan, column: int) -> bool:
    """Is column ``column`` of ``plan``'s only input an integer?"""
    get = next(p for p in gets(plan))
    return get.schema[column].type.integer


def gets(plan: P.Plan) -> list[P.Get]:
    """The Get nodes of ``plan`` (an input read twice is there twice)."""
    own = [plan] if isinstance(plan, P.Get) else []
    return own + [g for p in plan.inputs() for g in gets(p)]
