"""A global top-k's first rows, kept in the driver so that a small step reads no arrangement.

A top-k without groups (``ORDER BY … LIMIT n`` over the whole input) would otherwise recompute
its one group on the executors at every step: a job over the whole input collection. Its
**head** is the collection's first rows in the top-k's order (the in-process operator holds
them), with everything not held sorting at or after ``beyond``. A step's changes before
``beyond`` go to the head; those at or after it change rows that are not held and cannot move
the window. The head is read from the arrangement with one job when first needed (its last,
possibly clipped, row becomes ``beyond``) and trimmed when it grows past twice its size. If a
step leaves it holding fewer rows than the window needs, it is forgotten and the step falls
back to the keyed recompute; the next step reads it again.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable

from pyspark.sql import DataFrame

from changeflow.compute import plan as P
from changeflow.compute.cluster.local import Update
from changeflow.compute.dataflow import counted_rows
from changeflow.compute.evaluate import sort_key
from changeflow.compute.operators.base import Operator
from changeflow.compute.operators.topk import TopK
from changeflow.compute.spark_eval import GROUP_LIMIT, positional_frame
from changeflow.compute.spark_expr import from_spark

HEAD_ROWS = GROUP_LIMIT  # counted rows read into a head (Spark prunes to them before shuffling)


def global_top(plan: P.Plan) -> bool:
    """Is ``plan`` a top-k of one group whose window fits well inside a head?"""
    return (
        isinstance(plan, P.TopK)
        and not plan.group_by
        and plan.limit is not None
        and 2 * (plan.offset + plan.limit) <= HEAD_ROWS
    )


class Head:
    """The first rows of a global top-k's input collection (see the module docstring)."""

    def __init__(self, top: P.TopK) -> None:
        assert top.limit is not None
        self.top = top
        self.end = top.offset + top.limit
        self.op: TopK | None = None  # the held rows; None: not read yet (or forgotten)
        self.beyond: tuple | None = None  # rows sorting here or later are not held

    def step(
        self, updates: list[Update], arranged: Callable[[], DataFrame | None]
    ) -> list[Update] | None:
        """The top-k's output changes for a step's input ``updates`` (at any times), over
        ``arranged()``, the collection before the step (made only when the head is read);
        None if the head cannot tell."""
        if self.op is None:
            self._read(arranged())
        assert self.op is not None
        if self.beyond is not None and self._held() < self.end:
            self.op = None  # read short (a clipped row held many times): the window is unknown
            return None
        by_time: dict[int, list[Update]] = defaultdict(list)
        for u in updates:
            if self.beyond is None or sort_key(u[0], self.top.order_by) < self.beyond:
                by_time[u[1]].append(u)
        out: list[Update] = []
        for t in sorted(by_time):
            out += self.op.apply(t, [by_time[t]])
            if self.beyond is not None and self._held() < self.end:
                self.op = None  # it ran short: the step is recomputed on the executors
                return None
            self._trim()
        return out

    def forget(self) -> None:
        """The collection moved without the head (a step run wholly on Spark)."""
        self.op = None

    def _read(self, arranged: DataFrame | None) -> None:
        """The collection's first ``HEAD_ROWS`` counted rows, with one job."""
        order = self.top.order_by
        self.op, self.beyond = TopK(Operator(()), self.top), None
        if arranged is None:
            return
        first = dataclasses.replace(self._direct(), limit=HEAD_ROWS, offset=0)
        kinds = [c.type for c in self.top.input.schema]
        rows = counted_rows(
            from_spark(positional_frame(first, {"_in0": arranged}).toArrow(), kinds)
        )
        rows.sort(key=lambda rc: sort_key(rc[0], order))
        if sum(c for _, c in rows) >= HEAD_ROWS:  # the last row may be clipped: not held
            self.beyond = sort_key(rows.pop()[0], order)
        self.op.hydrate([rows], 0)

    def _direct(self) -> P.TopK:
        schema = self.top.input.schema
        return P.TopK(P.Get("_in0", schema), (), self.top.order_by, self.top.limit, 0)

    def _held(self) -> int:
        group = self.op.groups.get(()) if self.op is not None else None
        return 0 if group is None else sum(group[1].values())

    def _trim(self) -> None:
        """Past twice its size, keep the head's first ``HEAD_ROWS`` counted rows."""
        assert self.op is not None
        group = self.op.groups.get(())
        if group is None or len(group[0]) <= 2 * HEAD_ROWS:
            return
        rows, counts = group
        kept, position = 0, 0
        for row in rows:
            position += counts[row]
            kept += 1
            if position >= HEAD_ROWS:
                break
        cut = list(rows[kept:])
        self.beyond = sort_key(cut[0], self.top.order_by)
        for row in cut:
            self.op._add((), row, -counts[row])
