"""A dataflow on the cluster tier: the same contract as the in-process one (holds, a
self-correcting sink, exact at every time), with its arrangements on the executors.

The driver keeps the plan, the frontiers, and each step's input changes as Arrow until they
become Spark frames. The output changes of a step run on Spark are written to the output by
the executors (those of a small step in the driver go to the sink from there); the state,
however large, stays in :class:`~changeflow.compute.cluster.spine.Spine` s under the blob
root (``dataflows/<name>/``), cached on the executors. Hydration reads the inputs' snapshots
on the executors and runs as a first step from empty state.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type

from changeflow.compute import plan as P
from changeflow.compute.cluster import checkpoint
from changeflow.compute.cluster import deltas as D
from changeflow.compute.cluster.background import Background
from changeflow.compute.cluster.index import indexed, prepare
from changeflow.compute.cluster.local import (
    Update,
    batch_table,
    consolidated,
    consolidated_batch,
    fit_table,
    frame_table,
    kinds,
    no_changes,
    spark_batch,
)
from changeflow.compute.cluster.node import Node, stateful_below
from changeflow.compute.cluster.spine import Spine
from changeflow.compute.dataflow import Dataflow, update_rows
from changeflow.compute.operators.batch import Batch
from changeflow.compute.sink import SelfCorrectingSink
from changeflow.compute.spark_eval import positional_frame
from changeflow.compute.spark_expr import exact_decimals, from_spark, name
from changeflow.config import Config
from changeflow.failpoints import failpoint
from changeflow.spark import session_conf, spark_errors
from changeflow.time import Antichain
from changeflow.updates import DIFF, TIME

SMALL_TOTALS = 10_000  # a reduce's totals up to this many rows are read in the driver

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class ClusterDataflow(Dataflow):
    """A view maintained on the Spark cluster (see the module docstring)."""

    tier = "cluster"

    def _install(self, spark: SparkSession | None) -> None:
        assert spark is not None
        self.spark = spark
        self.blob = self.storage.machine.blob
        # a batch's key: <prefix>/<node>/<spine>/<batch> (see checkpoint.sweep)
        self.prefix = f"{checkpoint.PREFIX.format(self.name)}/{self.incarnation}"
        # a small step's shuffle partitions, one a core: arrangements are partitioned alike
        self.parts = max(2, spark.sparkContext.defaultParallelism)
        self.nodes: list[Node] = []
        self.root = self._held(self._build(self.plan))
        self.pending: dict[str, list[pa.Table]] = {s: [] for s in self.holds}
        self.first = True  # constants appear in the first step
        self.local = False  # the last step ran in the driver (small)
        self.step_rows = Config.load().cluster_step_rows
        ready = all(not c.state().upper.less_equal(self.as_of) for c in self.holds.values())
        resume = self.resume is not None and self._load(self.resume)
        self.subscriptions = {
            s: self.storage.subscribe_at(c, timeout=None, snapshot=not (ready or resume))
            for s, c in self.holds.items()
        }
        self.resumed = bool(resume)  # from a checkpoint, without hydrating
        self._lease(force=True)
        checkpoint.sweep(self.storage, self.name)
        self.arranging = Background()  # a hydration's arrangements, written after its output
        if resume:
            self._resume()
        elif ready:
            self._hydrate()

    def _start_at(self, earliest: int) -> int:
        """Just before the checkpoint's frontier, where it can resume (see
        :mod:`~changeflow.compute.cluster.checkpoint`); else ``earliest``. The lease comes
        first: a sweep leaves the checkpoint's batches alone while it loads."""
        self.incarnation = uuid.uuid4().hex
        self.reads: list[str] | None = None  # the batches of other incarnations it reads
        self.renewed = 0.0
        checkpoint.lease(self.storage, self.name, self.incarnation, None)
        self.resume = checkpoint.load(self.storage, self.name)
        frontier = self.resume.get("frontier") if self.resume else None
        written = self.storage.state(self.output).upper
        stale = frontier is None or frontier - 1 < earliest or written.less_equal(frontier - 1)
        if stale:
            self.resume = None
            return earliest
        return frontier - 1

    def _load(self, state: dict) -> bool:
        """Take the checkpoint's spines (False if they do not fit this plan's operators)."""
        nodes = state.get("nodes", [])
        if len(nodes) != len(self.nodes):
            return False
        for node, saved in zip(self.nodes, nodes, strict=True):
            spines = [*node.spines, *(w for w in node.waiting if w is not None)]
            if len(saved) != len(spines):
                return False
            for spine, batches in zip(spines, saved, strict=True):
                spine.load(batches)
        self.first = False
        return True

    def _resume(self) -> None:
        """Start from the checkpoint: the output's contents there are the desired ones (the
        checkpoint is never ahead of the output), so the sink takes them as they are."""
        self.frontier = self.as_of + 1
        self.uppers = dict.fromkeys(self.holds, self.frontier)
        self.sink.adopt(self.frontier)

    def spine(self, where: str, width: int, timed: bool, **layout: Any) -> Spine:
        """A spine under this dataflow's prefix (``layout``: its values, ``by``, ``indexes``)."""
        prefix = f"{self.prefix}/{where}"
        return Spine(self.spark, self.blob, prefix, width, timed, parts=self.parts, **layout)

    def _build(self, plan: P.Plan) -> Node:
        return Node(plan, [self._build(p) for p in plan.inputs()], self)

    def _held(self, root: Node) -> Node:
        """``root``, under a node keeping its changes beyond each step waiting when it has
        such changes (a temporal filter above every stateful operator), so the output gets
        each change at its step and a checkpoint holds those yet to come."""
        return Node(root.plan, [root], self, hold=True) if root.late else root

    # -- steps ---------------------------------------------------------------------------------

    def _hydrate(self) -> None:
        """The inputs' snapshots at the as_of, read by the executors, as the first step."""
        started = time.monotonic()
        changes = {}
        for shard, cap in self.holds.items():
            frame = self.storage.snapshot(cap, self.as_of, self.spark, summed=False)
            width = len([c for c in frame.columns if not c.startswith("_")])
            cols = [F.col(c).alias(name(i)) for i, c in enumerate(frame.columns[:width])]
            at = F.lit(self.as_of).cast("bigint").alias(TIME)
            changes[shard] = frame.select(*cols, at, F.col(DIFF).cast("bigint").alias(DIFF))
        with spark_errors(f"view {self.name}"):
            out = self._run(changes, self.as_of + 1, at=self.as_of)  # before the sink's frontier
        self.frontier = self.as_of + 1
        self.uppers = dict.fromkeys(self.holds, self.frontier)
        self.sink.step(out, Antichain([self.frontier]))
        self.arranging = Background(self._stepped, f"view {self.name}")
        self.stats.steps += 1
        self.stats.updates_out += out.num_rows
        self.stats.seconds.append(time.monotonic() - started)

    def _take(self, shard: str, updates: pa.Table) -> None:
        if updates.num_rows:
            self.pending[shard].append(updates)

    def _compute(self, upper: int) -> pa.Table:
        tables = {}
        for shard, pending in self.pending.items():
            if pending:
                table = pa.concat_tables(pending)
                data = [c for c in table.column_names if not c.startswith("_")]
                tables[shard] = table.select([*data, TIME, DIFF]).rename_columns(
                    [*(name(i) for i in range(len(data))), TIME, DIFF]
                )
            self.pending[shard] = []
        with spark_errors(f"view {self.name}"):  # a value SQL refuses: PostgreSQL's error
            if sum(t.num_rows for t in tables.values()) <= self.step_rows:
                return self._run_local(tables, upper)
            changes = {s: self.spark.createDataFrame(t) for s, t in tables.items()}
            return self._run(changes, upper, at=None)

    def _run(self, changes: dict[str, DataFrame], upper: int, at: int | None) -> pa.Table:
        """The output's changes for the step below ``upper`` from the inputs' ``changes``:
        written to the output by the executors when the sink can take them so (then none come
        back), else collected for the sink."""
        memo: dict[int, DataFrame | None] = {}
        self.first, self.local = False, False
        with exact_decimals(self.spark):
            out = self._delta(self.root, changes, upper, at, memo)
            if out is None:
                return self._frame([])
            width = len(self.plan.schema)
            cols = [  # in the output shard's types (the executors may write the frame)
                F.col(name(i)).cast(from_arrow_type(f.type)).alias(f.name)
                for i, f in enumerate(self.schema)
            ]
            if at is None or not self.root.distinct:
                out = D.consolidated(out, width)
            summed = out.select(*cols, TIME, DIFF).persist()
            try:
                written = self.sink.write_frame(summed, upper)
                if written is not None:
                    self.stats.updates_out += written
                    return self._frame([])
                return fit_table(summed.toArrow(), self.schema)
            finally:
                summed.unpersist()

    def _run_local(self, changes: dict[str, pa.Table], upper: int) -> pa.Table:
        """A small step: the output's changes below ``upper``, the changes in the driver."""
        memo: dict[int, Batch] = {}
        with exact_decimals(self.spark), self._step_conf():
            out = consolidated_batch(self._local(self.root, changes, upper, memo))
        self.first = False
        self.local = True
        table = batch_table(out, self.plan.schema)
        return fit_table(table.rename_columns([*self.schema.names, TIME, DIFF]), self.schema)

    def _local(
        self,
        node: Node,
        changes: dict[str, pa.Table],
        upper: int,
        memo: dict[int, Batch],
    ) -> Batch:
        if id(node) in memo:
            return memo[id(node)]
        plan = node.plan
        if isinstance(plan, P.Get):
            table = changes.get(plan.name)
            out = no_changes(plan) if table is None else Batch.of_table(table, kinds(plan.schema))
        elif isinstance(plan, P.Constant):
            rows = [(row, self.as_of, c) for row, c in plan.rows] if self.first else []
            out = Batch.of_updates(rows, kinds(plan.schema))
        else:
            inputs = [self._local(c, changes, upper, memo) for c in node.children]
            if node.stateful:
                out = self._probe(node, inputs, upper)
            else:
                assert node.linear is not None
                out = node.linear(inputs, upper)
        memo[id(node)] = out
        return out

    def _probe(self, node: Node, inputs: list[Batch], upper: int) -> Batch:
        """A stateful operator's output changes for a small step: its inputs' changes (and
        the waiting ones that fell due) against its arrangements, made into Spark frames only
        where the step needs the executors."""
        node.now, node.later, node.due = [], [], []
        out_kinds = kinds(node.plan.schema)
        for child, batch, waiting in zip(node.children, inputs, node.waiting, strict=True):
            due: list[Update] = []
            later: list[Update] = []
            if waiting is not None:
                held = waiting.take_due(upper)
                child_kinds = kinds(child.plan.schema)
                due = [] if held is None else update_rows(from_spark(held, child_kinds))
                updates = batch.updates()
                later = [u for u in updates if u[1] >= upper]
                batch = Batch.of_updates([u for u in updates if u[1] < upper] + due, child_kinds)
            node.now.append(consolidated_batch(batch))
            node.later.append(later)
            node.due.append(due)
        if node.hold:
            return node.now[0]
        if node.totals is not None:
            node.step_totals = None
            if not node.now[0]:
                return no_changes(node.plan)
            node.step_totals = node.totals.local_totals(node.now[0])
            if node.spines[0].rows() <= SMALL_TOTALS:  # read in the driver: no Spark job
                held = node.spines[0].table()
            else:  # the touched groups' totals, looked up or read with one join
                index = indexed(node.spines[0]) if node.indexable[0] else None
                held = node.totals.touched(node.spines[0].frame(), node.step_totals, index)
            return Batch.of_updates(node.totals.local_delta(node.step_totals, held), out_kinds)
        if node.head is not None:
            head = node.head.step(node.now[0].updates(), node.spines[0].frame)
            if head is not None:
                return Batch.of_updates(head, out_kinds)
        tables = [
            batch_table(now, child.plan.schema) if now else None
            for child, now in zip(node.children, node.now, strict=True)
        ]
        frames = [None if t is None else self.spark.createDataFrame(t) for t in tables]
        indexes = [
            indexed(s) if able else None
            for s, able in zip(node.spines, node.indexable, strict=True)
        ]
        # made only where a probe scans them (by other columns than an index's)
        arranged = [s.frame if s.batches else None for s in node.spines]
        out: DataFrame | None
        if node.join:
            assert isinstance(node.plan, P.Join)
            out = D.join(frames, arranged, node.plan, True, node.by, self.parts, indexes, tables)
        else:
            assert node.keyed is not None
            made = node.keyed.local_versions([b.updates() for b in node.now])
            local = None
            if made is not None:
                versions, changed = made
                local = (
                    self.spark.createDataFrame(versions),
                    [None if t is None else self.spark.createDataFrame(t) for t in changed],
                )
            out = node.keyed.delta(frames, arranged, True, None, local, indexes)
        if out is None:
            return no_changes(node.plan)
        return spark_batch(out.toArrow(), out_kinds)

    def _delta(
        self,
        node: Node,
        changes: dict[str, DataFrame],
        upper: int,
        at: int | None,
        memo: dict[int, DataFrame | None],
    ) -> DataFrame | None:
        if id(node) in memo:
            return memo[id(node)]
        plan = node.plan
        if isinstance(plan, P.Get):
            out = changes.get(plan.name)
        elif isinstance(plan, P.Constant):
            out = None
            if self.first and plan.rows:
                frame = positional_frame(plan, {})
                out = frame.withColumn(TIME, F.lit(self.as_of).cast("bigint")).select(
                    *D.data(len(plan.schema)), TIME, DIFF
                )
        else:
            inputs = [self._delta(c, changes, upper, at, memo) for c in node.children]
            if node.stateful:
                out = self._stateful(node, inputs, upper, at)
            else:
                out = D.linear(plan, inputs)
        memo[id(node)] = out
        return out

    def _step_conf(self) -> AbstractContextManager[None]:
        """A small step's settings: a shuffle partition per core, and no adaptive execution
        (which runs each stage of a query as a job of its own)."""
        cores = str(self.parts)
        settings = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": cores}
        return session_conf(self.spark, settings)

    def _stateful(
        self,
        node: Node,
        inputs: list[DataFrame | None],
        upper: int,
        at: int | None,
    ) -> DataFrame | None:
        """A stateful operator's output changes: its inputs' changes below the step against
        the collections its spines hold; changes beyond the step wait in a spine."""
        node.now, node.later = [], []
        for i, (frame, waiting) in enumerate(zip(inputs, node.waiting, strict=True)):
            if waiting is not None:
                frame = D.union([frame, waiting.frame()])
            later = None
            if frame is not None and waiting is not None:
                later = frame.where(F.col(TIME) >= upper)
                frame = frame.where(F.col(TIME) < upper)
            again = at is not None and waiting is None and not stateful_below(node.children[i])
            if frame is not None and node.totals is None and not again:  # read by _stepped
                frame = node.spines[i].persisted(frame) if node.spines else frame.persist()
            node.now.append(frame)
            node.later.append(later)
        if node.hold:
            return node.now[0]
        arranged = [s.frame() for s in node.spines]
        if node.join:
            assert isinstance(node.plan, P.Join)
            return D.join(node.now, arranged, node.plan, small=False)
        if node.totals is not None:  # the step's totals, computed once for output and spine
            if node.now[0] is None:
                return None
            node.step_totals = node.totals.totals(node.now[0]).persist()
            return node.totals.delta_of(node.step_totals, arranged[0], at=at)
        assert node.keyed is not None
        if node.head is not None:
            node.head.forget()
        return node.keyed.delta(node.now, arranged, small=False, at=at)

    def _stepped(self) -> None:
        """Add each stateful operator's changes to its spines (inputs before the operators
        above them have read them: every frame still reads the batches it was built on)."""
        failpoint("cluster.arrange")
        with exact_decimals(self.spark):
            for node in self.nodes:
                if not node.stateful:
                    continue
                if self.local:
                    self._add_local(node)
                    continue
                for i, spine in enumerate(node.spines):
                    changes = node.now[i] if i < len(node.now) else None
                    if node.totals is not None:
                        changes = node.step_totals
                    if changes is not None:
                        spine.add(changes.drop(TIME))
                for i, waiting in enumerate(node.waiting):
                    if waiting is not None and i < len(node.later):
                        waiting.replace(node.later[i])
            if not self.local:
                indexed_spines = [
                    s for n in self.nodes for s, i in zip(n.spines, n.indexable, strict=True) if i
                ]
                prepare(self.spark, indexed_spines)
        saved = [
            [s.to_json() for s in (*n.spines, *(w for w in n.waiting if w is not None))]
            for n in self.nodes
        ]
        checkpoint.save(self.storage, self.name, {"frontier": self.frontier, "nodes": saved})
        reads = self.reads
        self._lease()
        for node in self.nodes:
            for frame in (*node.now, node.step_totals):
                if isinstance(frame, DataFrame):
                    frame.unpersist()
            node.now, node.later, node.due, node.step_totals = [], [], [], None
            for spine in (*node.spines, *node.waiting):
                if spine is not None:
                    spine.forget_retired()
        if reads != self.reads:  # batches an earlier incarnation wrote were merged away
            checkpoint.sweep(self.storage, self.name)

    def _add_local(self, node: Node) -> None:
        """Add a small step's changes (in the driver) to a stateful operator's spines."""
        schemas = [c.plan.schema for c in node.children]
        if node.totals is not None:
            if node.step_totals is not None:
                node.spines[0].add(node.step_totals.drop_columns([TIME]))
        elif node.spines:
            for spine, now, schema in zip(node.spines, node.now, schemas, strict=True):
                if now:
                    spine.add(batch_table(now, schema, timed=False))
        for i, waiting in enumerate(node.waiting):
            if waiting is None or i >= len(node.later):
                continue
            gone = [(row, t, -d) for row, t, d in node.due[i]]
            changes = consolidated([*node.later[i], *gone])
            if changes:
                waiting.add(frame_table(changes, schemas[i]))
            if waiting.not_before is not None:  # what it held beyond the step, and the later
                times = [t for _, t, _ in node.later[i]]
                waiting.not_before = min([waiting.not_before, *times])

    def step(self, timeout: float = 0.0) -> bool:
        self.arranging.wait()
        self._lease()
        return super().step(timeout)

    def _lease(self, force: bool = False) -> None:
        """Renew the lease when a quarter of it has passed (and sweep what stopped
        incarnations left) or when the batches it reads of other incarnations changed (see
        :mod:`~changeflow.compute.cluster.checkpoint`)."""
        held = [s for n in self.nodes for s in (*n.spines, *n.waiting) if s is not None]
        reads = sorted(b.key for s in held for b in s.batches if not b.key.startswith(self.prefix))
        due = time.monotonic() - self.renewed > self.storage.machine.lease_ms / 4000
        if force or due or reads != self.reads:
            checkpoint.lease(self.storage, self.name, self.incarnation, reads)
            self.reads, self.renewed = reads, time.monotonic()
            if due and not force:
                checkpoint.sweep(self.storage, self.name)

    def _start_over(self, at: int) -> None:
        """Hydrate again from the inputs' snapshots at ``at`` (see
        :meth:`Dataflow._start_over`): a new incarnation with new spines (the old one's
        batches are swept once no checkpoint names them) and a new sink writing what
        differs."""
        with contextlib.suppress(Exception):  # its spines are dropped whole
            self.arranging.wait()
        self.sink.close()
        for node in self.nodes:
            for spine in (*node.spines, *node.waiting):
                if spine is not None:
                    spine.drop()
        checkpoint.release(self.storage, self.name, self.incarnation)
        self.incarnation, self.reads, self.resume, self.as_of = uuid.uuid4().hex, None, None, at
        checkpoint.lease(self.storage, self.name, self.incarnation, None)
        self.sink = SelfCorrectingSink(self.storage, self.output)
        held, self.holds = self.holds, self._lease_inputs(at)
        try:
            self._install(self.spark)  # reads after ``at``, hydrates at ``at``
        finally:
            self.holds = held
        self.error = None

    def _hold_limit(self) -> int | None:
        """The checkpoint's frontier less one: a restart subscribes from there."""
        return None if self.frontier is None else self.frontier - 1

    def state_size(self) -> int:
        return sum(n.rows() for n in self.nodes)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # step raised it; the spines are dropped whole
            self.arranging.wait()
        super().close()
        for node in self.nodes:
            for spine in (*node.spines, *node.waiting):
                if spine is not None:
                    spine.drop()
        checkpoint.release(self.storage, self.name, self.incarnation)
