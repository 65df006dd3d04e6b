"""Dataflows: a plan maintained over input shards into an output shard (MaintainView).

:func:`maintain_view` checks the plan against its inputs and output (their shards and schemas)
before anything is installed, then returns a :class:`Dataflow`. A dataflow

- holds each input's since with a registered reader (``dataflow:NAME``), never further ahead
  than the output's since, so inputs can compact as the output does and a restart can always
  read its inputs where the output begins;
- hydrates as of the output's since (for a new output, the inputs' latest since): the inputs'
  snapshots go through the operators as one step;
- then steps: each input's subscription delivers its next updates, and the operators turn the
  updates below the meet of the inputs' uppers into the output's updates;
- writes through :class:`~changeflow.compute.sink.SelfCorrectingSink`, which appends exactly
  ``desired - persisted``: a restarted dataflow, or a second replica in another process, never
  duplicates or loses an update, and the output's upper never passes the inputs' meet;
- on an evaluation error (22012…) leaves the output where it was and raises the error at every
  step until an input's data changes, then starts over from the inputs' contents at their meet
  (on the cluster tier, hydrating again): a view reports its error until the offending rows
  are gone.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN as EVEN
from decimal import Decimal
from itertools import repeat
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.expr import Cmp, Col, Expr, IsNull
from changeflow.compute.functions.base import process_call
from changeflow.compute.operators import Inputs, Operator, Reduce, build, hydrate
from changeflow.compute.recursive import has_recursive
from changeflow.compute.scale import stored_decimal
from changeflow.compute.sink import SelfCorrectingSink
from changeflow.compute.spark_real import divides_numerics, real_on_spark, sums_reals
from changeflow.compute.status import DataflowStatus, forget, report
from changeflow.compute.types import (
    BYTEA,
    INTERVAL,
    JSONB,
    TEXT,
    UUID,
    SqlType,
    arrow_schema,
    from_arrow_schema,
    rows_only,
)
from changeflow.compute.unnest import has_unnest
from changeflow.compute.values import arrow_values, python_values
from changeflow.errors import EvalError, FrontierViolation, PlanError, Timeout
from changeflow.failpoints import failpoint
from changeflow.storage import Storage
from changeflow.storage.read import ReadCapability
from changeflow.time import Antichain, Bound, show_bound, to_bound
from changeflow.updates import DIFF, TIME

HOLDER = "dataflow:{}"
REPORT_SECONDS = 1.0  # a running dataflow reports its status at most this often


@dataclass
class StepStats:
    """What a dataflow has done: steps, updates in and out, and the time its steps took."""

    steps: int = 0
    updates_in: int = 0
    updates_out: int = 0
    seconds: list[float] = field(default_factory=list)


def maintain_view(
    storage: Storage,
    name: str,
    plan: P.Plan,
    output: str,
    spark: SparkSession | None = None,
    cluster: bool = False,
) -> Dataflow:
    """Install the dataflow ``name`` that keeps shard ``output`` equal to ``plan`` over the
    shards its :class:`~changeflow.compute.plan.Get` operators name. The output shard is
    created with the plan's schema if it does not exist. Nothing is installed if a check fails.
    With ``cluster`` (and ``spark``), the dataflow runs on the cluster tier: its arrangements
    live on the executors (:mod:`changeflow.compute.cluster`). Else it runs in the process; with
    ``spark`` it hydrates in bulk on Spark, without, its operators take the inputs' snapshots
    as their first step."""
    if cluster and spark is None:
        raise PlanError(f"view {name!r}: the cluster tier needs a Spark session")
    if cluster:
        cluster_tier(storage, plan, True, 0)  # refuses a plan the cluster tier cannot run
    check_inputs(storage, plan)
    names = set(storage.shards())
    wanted = _unique_names(arrow_schema(plan.schema))
    if output in plan.collections():
        raise PlanError(f"view {name!r} cannot write to {output!r}, one of its own inputs")
    if output in names:
        have = storage.state(output).schema
        if [f.type for f in have] != [f.type for f in wanted]:
            raise PlanError(
                f"output shard {output!r} has columns ({_types(have)}), the view's plan makes "
                f"({_types(wanted)})",
                sqlstate="42804",
            )
    else:
        read, write = storage.create(output, wanted)
        # held first: the host's compaction cannot move an input's since past the output's start
        held = _hold_inputs(storage, name, plan, output).values()
        as_of = max((_since(c) for c in held), default=0)
        if as_of:  # the output begins at the as_of: nothing before it, and nothing to read there
            storage.append(write, [], as_of)
            storage.downgrade(read, Antichain([as_of]))
        storage.drop(read)
        storage.drop(write)
    failpoint("dataflow.before_start")
    if cluster:
        from changeflow.compute.cluster.dataflow import ClusterDataflow

        return ClusterDataflow(storage, name, plan, output, spark)
    return Dataflow(storage, name, plan, output, spark)


def process_only(plan: P.Plan) -> str | None:
    """Why ``plan`` is evaluated in this process only (Spark has no form for it), or None."""
    if has_unnest(plan):
        return "unnest of a column"
    nodes = [plan]
    while nodes:
        node = nodes.pop()
        nodes += node.inputs()
        exprs = [x for f in dataclasses.fields(node) for x in _expressions(getattr(node, f.name))]
        kinds = [c.type for c in node.schema if rows_only(c.type) and not _held(c.type)]
        kinds += [  # the first type of each expression Spark has no form for
            next((t for t in (x.type, *(c.type for c in x.children())) if rows_only(t)), x.type)
            for x in exprs
            if not _on_spark(x)
        ]
        if (why := next(filter(None, map(process_call, exprs)), None)) or kinds:
            return why or f"an expression of type {kinds[0]}"
        if _compares_carried(node) or sums_reals(node):
            return "array, interval or jsonb values compared, grouped, ordered or aggregated"
    return None


BYTES = (UUID, BYTEA)  # Spark holds them as binary, compared as PostgreSQL compares them
CARRIED = (INTERVAL, JSONB)  # Spark holds them as structs: carried, never compared there


def _carried(kind: SqlType) -> bool:
    """Values Spark holds but only carries, never compares: intervals, jsonb, arrays."""
    return kind in CARRIED or kind.element is not None


def _held(kind: SqlType) -> bool:
    return kind in BYTES or _carried(kind)


def _on_spark(e: Expr) -> bool:
    """Has Spark a form for ``e`` itself? It carries interval and jsonb values (and tests them
    for NULL), uuid and bytea values (and compares them, not their casts and functions), and
    arrays (never compared: Spark orders their NULL elements otherwise); reals, see spark_real."""
    if (real := real_on_spark(e)) is not None:
        return real
    if e.type in BYTES or e.type in CARRIED:
        return isinstance(e, Col)
    if any(c.type in CARRIED for c in e.children()):
        return isinstance(e, IsNull)
    if any(c.type in BYTES for c in e.children()):
        return isinstance(e, Cmp | IsNull)
    return not (isinstance(e, Cmp) and any(c.type.element is not None for c in e.children()))


def _compares_carried(node: P.Plan) -> bool:
    """Does ``node`` compare array, interval or jsonb values (which PostgreSQL compares by
    meaning: ``'1 day' = '24 hours'``; Spark by their fields) or aggregate them (but count
    them)? A top-k and a window break ties by the whole row."""
    inputs = node.inputs()
    carried = {i for i, c in enumerate(inputs[0].schema) if _carried(c.type)} if inputs else set()
    match node:
        case P.Join(equivalences=classes, inputs_=sides):
            columns = [c for side in sides for c in side.schema]
            return any(_carried(columns[i].type) for klass in classes for i in klass)
        case P.Reduce(group_by=keys, aggregates=aggs):
            counted = [a.arg for a in aggs if a.func != "count" or a.distinct]
            counted += [o.expr for a in aggs for o in a.order]
            # (below an aggregated expression a carried value is only read, never compared)
            return bool(carried & set(keys)) or any(
                e is not None and _carried(e.type) for e in counted
            )
        case P.Distinct() | P.Threshold() | P.TopK() | W.Window():
            return bool(carried)
        case P.Constant(schema=schema):  # (Spark makes array constants as its arrays)
            return any(c.type in CARRIED for c in schema)
    return False


def _expressions(value: object) -> Iterator[Expr]:
    """The expressions in a plan node's field (in tuples and aggregates; not its inputs),
    and theirs."""
    if isinstance(value, Expr):
        yield value
        yield from _expressions(value.children())
    elif isinstance(value, tuple | list):
        for v in value:
            yield from _expressions(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type | P.Plan):
        for f in dataclasses.fields(value):
            yield from _expressions(getattr(value, f.name))


def cluster_tier(storage: Storage, plan: P.Plan, setting: bool | None, threshold: int) -> bool:
    """Whether a view runs on the cluster tier: as ``setting`` says, else when its inputs hold
    ``threshold`` stored rows or more (small views keep the in-process tier's latency)."""
    what = process_only(plan) or ("WITH RECURSIVE" if has_recursive(plan) else None)
    if what is not None:
        if setting:
            raise PlanError(
                f"this view runs on the in-process tier only ({what}): CLUSTER = true "
                "is not supported for it",
                sqlstate="0A000",
            )
        return False
    if setting is not None:
        return setting
    return sum(storage.state(s).rows for s in plan.collections()) >= threshold


def check_inputs(storage: Storage, plan: P.Plan) -> None:
    """Every collection the plan reads is a shard with the schema the plan expects."""
    names = set(storage.shards())
    for get in _gets(plan):
        if get.name not in names:
            raise PlanError(f"unknown collection {get.name!r}", sqlstate="42P01")
        have = from_arrow_schema(storage.state(get.name).schema)
        stored = [TEXT if c.type.labels is not None else c.type for c in get.schema]  # enums
        if [c.type for c in have] != stored:
            shown = ", ".join(f"{c.name} {c.type}" for c in have)
            raise PlanError(
                f"collection {get.name!r} has columns ({shown}), the plan expects "
                f"({', '.join(f'{c.name} {c.type}' for c in get.schema)})",
                sqlstate="42804",
            )


def _gets(plan: P.Plan) -> list[P.Get]:
    own = [plan] if isinstance(plan, P.Get) else []
    return own + [g for child in plan.inputs() for g in _gets(child)]


def _unique_names(schema: pa.Schema) -> pa.Schema:
    """The schema with repeated column names numbered (``k``, ``k_2``; past a name another
    column has, as ``k_2`` may be): shards need unique ones."""
    taken, seen = set(schema.names), set()
    fields = []
    for f in schema:
        name, n = f.name, 2
        while name in seen or (name != f.name and name in taken):
            name, n = f"{f.name}_{n}", n + 1
        seen.add(name)
        fields.append(f if name == f.name else f.with_name(name))
    return pa.schema(fields)


def _types(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in schema)


def _hold_inputs(
    storage: Storage, name: str, plan: P.Plan, output: str
) -> dict[str, ReadCapability]:
    """The dataflow's registered readers of its inputs (resumed where they are held)."""
    reason = f"view {name!r} into {output!r} reads it from where the output is complete"
    return {
        shard: storage.register_reader(shard, HOLDER.format(name), reason)
        for shard in sorted(plan.collections())
    }


def _since(cap: ReadCapability) -> int:
    since = to_bound(cap.frontier)
    if since is None:
        raise FrontierViolation(f"input {cap.name!r} is closed to reads (since [])")
    return since


class Dataflow:
    """A running view: inputs held and subscribed, operators built, the output's sink open."""

    def __init__(
        self,
        storage: Storage,
        name: str,
        plan: P.Plan,
        output: str,
        spark: SparkSession | None = None,
    ) -> None:
        self.storage, self.name, self.plan, self.output = storage, name, plan, output
        self.stats = StepStats()
        self.holds = _hold_inputs(storage, name, plan, output)
        since = to_bound(storage.state(output).since)
        held = (to_bound(c.frontier) or 0 for c in self.holds.values())
        self.as_of = self._start_at(max([since or 0, *held]))
        for cap in self.holds.values():
            cap.downgrade(Antichain([self.as_of]))
        self.sink = SelfCorrectingSink(storage, output, as_of=self.as_of)
        self.frontier: Bound = self.as_of  # output updates below this were handed to the sink
        self.schema = storage.state(output).schema
        self.uppers: dict[str, Bound] = dict.fromkeys(self.holds, self.as_of)
        self.error: EvalError | None = None  # the error a step raised, until it is gone
        self.leased: list[ReadCapability] = []  # the inputs read from where it started over
        self._install(spark)
        self.reported = 0.0
        self._report(running=True)

    tier = "process"  # where the dataflow's arrangements live

    def _start_at(self, earliest: int) -> int:
        """The as_of: the earliest time the inputs and the output can be read from."""
        return earliest

    def _install(self, spark: SparkSession | None) -> None:
        """Build the operators and subscribe to the inputs (hydrating in bulk with Spark)."""
        self.inputs = Inputs()
        self.root: Operator = build(self.plan, self.inputs, at=self.as_of)
        bulk = (
            spark is not None
            and process_only(self.plan) is None
            and not divides_numerics(self.plan)
            and all(not c.state().upper.less_equal(self.as_of) for c in self.holds.values())
        )
        self.subscriptions = {
            s: self.storage.subscribe_at(c, timeout=None, snapshot=not bulk, summed=False)
            for s, c in self.holds.items()
        }
        if bulk:
            self._hydrate_on(spark)

    def _hydrate_on(self, spark: SparkSession) -> None:
        """Hydrate in bulk: Spark computes, from the inputs' snapshots at the as_of, the
        collection every stateful operator reads and the output, which goes to the sink as the
        first step; the subscriptions then start after the as_of."""
        from changeflow.compute.spark_eval import evaluate_spark
        from changeflow.compute.spark_expr import from_spark
        from changeflow.compute.spark_state import positional, reduce_groups

        started = time.monotonic()
        frames = {s: self.storage.snapshot(c, self.as_of, spark) for s, c in self.holds.items()}

        def frame_at(plan: P.Plan) -> DataFrame:
            return positional(evaluate_spark(plan, frames, self.as_of), len(plan.schema))

        def collection_at(plan: P.Plan) -> list[tuple[tuple[Any, ...], int]]:
            kinds = [c.type for c in plan.schema]
            return counted_rows(from_spark(frame_at(plan).toArrow(), kinds))

        def groups_at(op: Reduce) -> dict:  # a reduce's accumulators, computed on Spark
            return reduce_groups(frame_at(op.input_plans[0]), op.reduce)

        hydrate(self.root, collection_at, self.as_of, groups_at)
        known = self.root.contents()  # the root's state may tell the output: no job for it
        collection = collection_at(self.plan) if known is None else known
        contents = [(row, self.as_of, c) for row, c in collection]
        self.frontier = self.as_of + 1
        self.uppers = dict.fromkeys(self.holds, self.frontier)
        self.sink.step(self._frame(contents), Antichain([self.frontier]))
        self.stats.steps += 1
        self.stats.updates_out += len(contents)
        self.stats.seconds.append(time.monotonic() - started)

    def step(self, timeout: float = 0.0) -> bool:
        """Take what the inputs have appended (waiting up to ``timeout`` seconds for something)
        and hand the output's updates to the sink; True if the meet of the inputs moved."""
        started = time.monotonic()
        deadline = started + timeout
        if self.error is not None:
            self._retry(self.error)
        while True:
            for shard, subscription in self.subscriptions.items():
                while (got := subscription.next(0.0)) is not None:
                    updates, upper = got
                    self._take(shard, updates)
                    self.stats.updates_in += updates.num_rows
                    self.uppers[shard] = to_bound(upper)
            meet = _meet(self.uppers.values()) if self.uppers else None
            if meet is None or meet != self.frontier and _before(self.frontier, meet):
                break
            if time.monotonic() >= deadline:
                self.sink.step()
                return False
            time.sleep(0.01)
        failpoint("dataflow.before_step")
        try:
            out = self._compute(meet if meet is not None else 2**63 - 1)
        except EvalError as error:
            self.error = error
            raise
        failpoint("dataflow.after_operators")
        self.sink.step(out, Antichain() if meet is None else Antichain([meet]))
        failpoint("dataflow.after_sink")
        self.frontier = meet
        self._stepped()
        self._release_inputs()
        self.stats.steps += 1
        self.stats.updates_out += out.num_rows
        self.stats.seconds.append(time.monotonic() - started)
        if time.monotonic() - self.reported >= REPORT_SECONDS:
            self._report(running=True)
        return True

    def _retry(self, error: EvalError) -> None:
        """A failed dataflow's output stays where it was, and each step raises the error
        again, until an input's data changes: then it starts over from the inputs' contents
        at their meet less one (where the offending rows may be gone)."""
        changed = False
        for shard, subscription in self.subscriptions.items():
            while (got := subscription.next(0.0)) is not None:
                changed = changed or got[0].num_rows > 0
                self.uppers[shard] = to_bound(got[1])
        meet = _meet(self.uppers.values()) if self.uppers else None
        if not changed or meet is None:
            raise error
        self._start_over(meet - 1)

    def _start_over(self, at: int) -> None:
        """New operators that take the inputs' contents at ``at`` as their first step, and a
        new sink reading the output back from its since: it writes what differs."""
        self.sink.close()
        caps = self._lease_inputs(at)
        self.sink = SelfCorrectingSink(self.storage, self.output)
        self.inputs = Inputs()
        self.root = build(self.plan, self.inputs, at=at)
        subscribe = self.storage.subscribe_at
        self.subscriptions = {s: subscribe(c, timeout=None, summed=False) for s, c in caps.items()}
        self.frontier = at
        self.uppers = dict.fromkeys(self.holds, at)
        self.error = None

    def _lease_inputs(self, at: int) -> dict[str, ReadCapability]:
        """Holds of the inputs at ``at`` to read them from there (kept until the next start
        over or the close)."""
        for cap in self.leased:
            self.storage.drop(cap)
        caps = {s: self.storage.clone(c) for s, c in self.holds.items()}
        self.leased = list(caps.values())
        for cap in self.leased:
            self.storage.downgrade(cap, Antichain([at]))
        return caps

    def _take(self, shard: str, updates: pa.Table) -> None:
        """Take an input's appended updates for the next step."""
        self.inputs.feed_table(shard, updates)

    def _compute(self, upper: int) -> pa.Table:
        """The output's updates for the step below ``upper``, as an update frame (as columns
        throughout where every operator gives batches: stateless ones, joins (outer ones on
        their keys alone), distinct and threshold)."""
        if not self.root.columnar:
            return self._frame(self.root.step(upper))
        batch = self.root.step_batch(upper)
        table = batch.table(self.schema)
        return self._frame(batch.updates()) if table is None else table

    def _stepped(self) -> None:
        """After a step's output went to the sink (the cluster tier moves its state here)."""

    def run(self, until: int | None = None, idle_timeout: float = 30.0) -> StepStats:
        """Step until the output holds every time below ``until`` (None: until the inputs
        close), then until the sink has written it all."""
        deadline = time.monotonic() + idle_timeout
        while not _reached(self.frontier, until):
            if self.step(timeout=0.05):
                deadline = time.monotonic() + idle_timeout
            elif time.monotonic() > deadline:
                raise Timeout(
                    f"view {self.name!r}: the inputs' meet stayed at {show_bound(self.frontier)} "
                    f"for {idle_timeout} s",
                    frontier=self.frontier,
                )
        self.sink.run([], idle_timeout)
        self._release_inputs()
        return self.stats

    def state_size(self) -> int:
        """Rows held by the operators' arrangements and waiting updates."""
        return self.root.state_size()

    def close(self) -> None:
        """Stop (the inputs stay held for a restart; :func:`drop_view` releases them)."""
        self._report(running=False)
        self.sink.close()
        for cap in self.leased:
            self.storage.drop(cap)

    def status(self) -> DataflowStatus:
        """Where the dataflow is: frontiers, lag, state held and step durations."""
        return DataflowStatus(
            name=self.name,
            output=self.output,
            inputs=sorted(self.holds),
            as_of=self.as_of,
            frontier=self.frontier,
            input_uppers=dict(self.uppers),
            steps=self.stats.steps,
            updates_in=self.stats.updates_in,
            updates_out=self.stats.updates_out,
            arranged=self.state_size(),
            step_seconds=self.stats.seconds[-20:],
            plan=self.plan.explain(),
            tier=self.tier,
        )

    def _report(self, running: bool) -> None:
        status = self.status()
        status.running = running
        report(self.storage.consensus, status)
        self.reported = time.monotonic()

    def _release_inputs(self) -> None:
        """Hold the inputs where the sink holds the output (the latest time a restart can
        read back from), so they compact as the output does."""
        since = to_bound(self.sink.read_cap.frontier)
        limit = self._hold_limit()
        if since is not None and limit is not None:
            since = min(since, limit)
        for cap in [*self.holds.values(), *self.leased]:
            held = to_bound(cap.frontier)
            if since is not None and held is not None and held < since:
                cap.downgrade(Antichain([since]))

    def _hold_limit(self) -> int | None:
        """How far the inputs may be released at most (None: as far as the output)."""
        return None

    def _frame(self, updates: list) -> pa.Table:
        names = self.schema.names
        columns: list[list[Any]] = [[] for _ in names]
        times, diffs = [], []
        for row, t, d in updates:
            for i, (column, value) in enumerate(zip(columns, row, strict=True)):
                if isinstance(value, Decimal):
                    where = f"column {names[i]!r} of view {self.name!r}"
                    value = stored_decimal(value, self.schema[i].type, where, rounding=EVEN)
                column.append(value)
            times.append(t)
            diffs.append(d)
        arrays = [
            pa.array(arrow_values(c, f.type), type=f.type)
            for c, f in zip(columns, self.schema, strict=True)
        ]
        arrays += [pa.array(times, pa.int64()), pa.array(diffs, pa.int64())]
        return pa.Table.from_arrays(arrays, names=[*names, TIME, DIFF])


def drop_view(storage: Storage, name: str, plan: P.Plan) -> None:
    """Release the inputs a view's dataflow holds (its output shard stays) and delete the
    arrangements a cluster-tier dataflow kept under the blob root."""
    from changeflow.compute.cluster.checkpoint import forget_state

    for shard in sorted(plan.collections()):
        storage.release_reader(shard, HOLDER.format(name))
    forget(storage.consensus, name)
    forget_state(storage, name)


def update_rows(table: pa.Table) -> list[tuple[tuple[Any, ...], int, int]]:
    """The updates of an update frame as ``(row, time, diff)``."""
    times, diffs = table.column(TIME).to_pylist(), table.column(DIFF).to_pylist()
    return list(zip(_data_rows(table), times, diffs, strict=True))


def counted_rows(table: pa.Table) -> list[tuple[tuple[Any, ...], int]]:
    """``(row, count)`` pairs of a frame's data columns and ``_diff``."""
    return list(zip(_data_rows(table), table.column(DIFF).to_pylist(), strict=True))


def _data_rows(table: pa.Table) -> Iterable[tuple[Any, ...]]:
    data = [python_values(table.column(n)) for n in table.column_names if not n.startswith("_")]
    return zip(*data, strict=True) if data else repeat((), table.num_rows)


def _meet(uppers: Any) -> Bound:
    present = [u for u in uppers if u is not None]
    return min(present) if present else None


def _before(a: Bound, b: Bound) -> bool:
    return a is not None and (b is None or a < b)


def _reached(frontier: Bound, until: int | None) -> bool:
    return frontier is None or (until is not None and frontier >= until)
