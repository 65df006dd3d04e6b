"""An operator of a plan on the cluster tier (:class:`Node`): its children, and for a stateful
one the spines holding its inputs' collections so far."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import DataFrame

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.cluster import deltas as D
from changeflow.compute.cluster.keyed import keyed as keyed_form
from changeflow.compute.cluster.local import LinearStep, Update
from changeflow.compute.cluster.reduce import Accumulated, accumulable
from changeflow.compute.cluster.topk import Head, global_top

if TYPE_CHECKING:
    from changeflow.compute.cluster.dataflow import ClusterDataflow


def _joins(plan: P.Plan) -> bool:
    """Is ``plan`` a join of arranged inputs (an inner join of two or more)?"""
    return isinstance(plan, P.Join) and plan.kind == "inner" and len(plan.inputs_) > 1


def _keyed(plan: P.Plan) -> bool:
    return isinstance(plan, P.Reduce | P.Distinct | P.Threshold | P.TopK | W.Window) or (
        isinstance(plan, P.Join) and plan.kind != "inner"
    )


def late(plan: P.Plan) -> bool:
    """Does ``plan``'s output have changes beyond the step that made them (a temporal filter
    with no stateful operator above it to keep them waiting)?"""
    if isinstance(plan, P.TemporalFilter):
        return True
    if _joins(plan) or _keyed(plan):
        return False
    return any(late(p) for p in plan.inputs())


def stateful_below(node: Node) -> bool:
    """Is ``node`` or an operator under it stateful? A hydration's input with none is read
    again from the snapshots to arrange it (after the output), rather than cached before the
    output for that: the output then costs what the batch query costs."""
    return node.stateful or any(stateful_below(c) for c in node.children)


class Node:
    """An operator of the plan on the cluster tier: its children, and for a stateful one the
    spine of each input (its collection so far) and, where an input may carry changes beyond
    the step (a temporal filter's), the spine of those waiting."""

    def __init__(
        self, plan: P.Plan, children: list[Node], flow: ClusterDataflow, hold: bool = False
    ) -> None:
        self.plan, self.children = plan, children
        self.hold = hold  # only keeps its input's changes beyond the step waiting (a late root)
        self.join = _joins(plan) and not hold
        keyed = _keyed(plan) and not hold
        accumulates = accumulable(plan) and not hold  # type: ignore[arg-type]
        self.totals = Accumulated(plan) if accumulates else None  # type: ignore[arg-type]
        self.keyed = keyed_form(plan) if keyed and self.totals is None else None
        self.head = Head(plan) if self.keyed is not None and global_top(plan) else None  # type: ignore[arg-type]
        self.stateful = self.join or keyed or hold
        # a hydration's output has each row once (one row a group, or rows made distinct)
        self.distinct = not hold and isinstance(plan, P.Reduce | P.TopK | P.Distinct)
        where = f"{len(flow.nodes)}"
        flow.nodes.append(self)
        widths = [len(c.plan.schema) for c in children] if self.stateful else []
        if self.totals is not None:  # a reduce of running totals holds one row per group
            totals = self.totals
            groups = tuple(range(totals.width))  # a step looks its groups up by key
            grouped = (plan.input.schema[c] for c in plan.group_by)  # type: ignore[attr-defined]
            self.indexable = [D.indexable(tuple(grouped), groups)]
            by = groups if self.indexable[0] else ()
            layout = {"values": totals.values(), "by": by, "indexes": bool(by)}
            self.spines = [flow.spine(f"{where}/totals", totals.width, False, **layout)]
        else:
            spined = [] if hold else widths
            # the columns each arrangement is probed by, which it is partitioned by
            self.by: list[tuple[int, ...]] = [()] * len(spined)
            if self.join:
                self.by = D.arrangement_keys(plan)  # type: ignore[arg-type]
            elif self.keyed is not None and spined:
                self.by = list(self.keyed.keys)
            # arrangements a small step looks up by key, not scans (see ``index``)
            self.indexable = [
                D.indexable(c.plan.schema, by) for c, by in zip(children, self.by, strict=False)
            ]
            self.spines = [
                flow.spine(f"{where}/in{i}", w, False, by=by, indexes=self.indexable[i])
                for i, (w, by) in enumerate(zip(spined, self.by, strict=True))
            ]
        self.waiting = [
            flow.spine(f"{where}/wait{i}", w, True) if children[i].late else None
            for i, w in enumerate(widths)
        ]
        self.late = late(plan) and not hold
        self.linear = (
            LinearStep(plan)
            if not self.stateful and not isinstance(plan, P.Get | P.Constant)
            else None
        )
        # this step's input changes below the step, and those beyond it: frames, or update
        # lists in the driver for a small step (with the waiting updates that fell due, and a
        # reduce's totals of the step: Arrow in the driver, else a persisted frame)
        self.now: list = []
        self.later: list = []
        self.due: list[list[Update]] = []
        self.step_totals: pa.Table | DataFrame | None = None

    def rows(self) -> int:
        return sum(s.rows() for s in (*self.spines, *self.waiting) if s is not None)
