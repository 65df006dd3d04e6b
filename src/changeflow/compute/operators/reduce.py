"""Reduce: group and aggregate with running accumulators per group."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from decimal import Decimal, localcontext
from typing import Any

from changeflow.compute import columnar as C
from changeflow.compute import plan as P
from changeflow.compute.evaluate import Row, aggregate_values
from changeflow.compute.operators.base import (
    Operator,
    Stateful,
    Update,
    _key,
)
from changeflow.compute.operators.batch import Batch
from changeflow.compute.operators.reduce_batch import accumulate, batchable
from changeflow.compute.scalars import NAN, NUMERIC_NAN, as_type, check_range
from changeflow.compute.types import FLOAT8, WIDE, SqlType
from changeflow.errors import EvalError


class Reduce(Stateful):
    """Group and aggregate with an accumulator per group and aggregate: counts, sums and
    averages are running totals (a step costs what its changes touch, not the group's size);
    DISTINCT, min, max, bool_and, bool_or and string_agg keep each group's values with their
    counts."""

    def __init__(self, child: Operator, reduce: P.Reduce) -> None:
        super().__init__((child,))
        self.reduce = reduce
        self.kinds = [c.type for c in reduce.schema[len(reduce.group_by) :]]
        self.groups: dict[Row, Group] = {}
        self.batchable = batchable(reduce)

    def step(self, upper: int) -> list[Update]:
        """A columnar input's step is summed per group in Arrow (:mod:`reduce_batch`)."""
        if not (self.batchable and self.steps_batches()):
            return self.step_rows(upper)
        out: list[Update] = []
        for t, (batch,) in self.batches_by_time(upper):
            out += self._apply_batch(t, batch)
        return out

    def _apply_batch(self, t: int, batch: Batch) -> list[Update]:
        try:
            changes = accumulate(self.reduce, batch)
        except C.Rows:
            return self.apply(t, [batch.updates()])
        out: list[Update] = []
        for key, change in changes.items():
            out += self._change(key, t, change.apply)
        return out

    def apply(self, t: int, changes: list[list[Update]]) -> list[Update]:
        touched: dict[Row, list[Update]] = defaultdict(list)
        for u in changes[0]:
            touched[_key(u[0], self.reduce.group_by)].append(u)
        out: list[Update] = []
        for key, updates in touched.items():

            def add(group: Group, updates: list[Update] = updates) -> None:
                for row, _, diff in updates:
                    group.add(row, diff)

            out += self._change(key, t, add)
        return out

    def _change(self, key: Row, t: int, change: Callable[[Group], None]) -> list[Update]:
        """The output updates at ``t`` of ``change`` to the group ``key``."""
        group = self.groups.get(key)
        self.held -= 0 if group is None else 1 + group.held()
        group = group or Group(self.reduce.aggregates)
        before = group.row(key, self.kinds)
        change(group)
        self.held += 1 + group.held() if group.count else 0
        after = group.row(key, self.kinds)
        if group.count:
            self.groups[key] = group
        else:
            self.groups.pop(key, None)
        if before == after:
            return []
        out = [(before, t, -1)] if before is not None else []
        return out + ([(after, t, 1)] if after is not None else [])

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        for row, count in collections[0]:
            key = _key(row, self.reduce.group_by)
            self.groups.setdefault(key, Group(self.reduce.aggregates)).add(row, count)
        self.adopt(self.groups)

    def contents(self) -> list[tuple[Row, int]] | None:
        rows = (g.row(key, self.kinds) for key, g in self.groups.items())
        return [(row, 1) for row in rows if row is not None]

    def adopt(self, groups: dict[Row, Group]) -> None:
        """Take ``groups`` (computed in bulk) as the state."""
        self.groups = {k: g for k, g in groups.items() if g.count}
        self.held = sum(1 + g.held() for g in self.groups.values())


class Group:
    """One group's accumulators: its row count, then per aggregate the count of non-NULL values
    and their running total (NaNs counted apart: a NaN makes the result NaN only while it is
    there), or (when the aggregate needs them) the values and their counts."""

    def __init__(self, aggregates: tuple[P.Aggregate, ...]) -> None:
        self.aggregates = aggregates
        self.count = 0
        self.present = [0] * len(aggregates)
        self.totals: list[Any] = [0] * len(aggregates)
        self.nans = [0] * len(aggregates)
        self.infs = [[0, 0] for _ in aggregates]  # +infinity and -infinity, counted apart
        self.values: list[Counter | None] = [
            Counter() if a.distinct or a.func not in ("count", "sum", "avg") else None
            for a in aggregates
        ]

    def add(self, row: Row, diff: int) -> None:
        self.count += diff
        for i, agg in enumerate(self.aggregates):
            if agg.arg is None:
                continue
            v = agg.value(row)
            if v is None:
                continue
            self.present[i] += diff
            values = self.values[i]
            if values is not None:
                values[v] += diff
                if not values[v]:
                    del values[v]
            elif agg.func == "count":
                pass
            elif v != v:  # only a NaN is unequal to itself
                self.nans[i] += diff
            elif _infinite(v):  # (so that taking one away leaves no NaN behind)
                self.infs[i][v < 0] += diff
            elif isinstance(v, Decimal):  # exactly, as PostgreSQL's numeric sums
                self.totals[i] = WIDE.add(self.totals[i], WIDE.multiply(v, diff))
            else:
                self.totals[i] += v * diff

    def row(self, key: Row, kinds: list[SqlType]) -> Row | None:
        """The group's output row; None when it has no rows."""
        if self.count < 0 or any(c < 0 for v in self.values if v for c in v.values()):
            raise EvalError(f"Reduce: group {key!r} has a negative count", sqlstate="XX000")
        if not self.count:
            return None
        return key + tuple(self._result(i, k) for i, k in enumerate(kinds))

    def _result(self, i: int, kind: SqlType) -> Any:
        agg, values = self.aggregates[i], self.values[i]
        if agg.arg is None:
            return self.count
        if values is not None:
            return aggregate_values(agg, list(values.items()), kind)
        if agg.func == "count":
            return self.present[i]
        if not self.present[i]:
            return None
        above, below = self.infs[i]
        if self.nans[i] or (above and below):
            return NAN if kind.floating else NUMERIC_NAN
        if above or below:
            return (float if kind.floating else Decimal)("-inf" if below else "inf")
        if agg.func == "sum":
            return check_range(as_type(self.totals[i], kind), kind)
        return _average(self.totals[i], self.present[i], kind)

    def held(self) -> int:
        return sum(len(v) for v in self.values if v)


def _infinite(v: Any) -> bool:
    return (
        v in (math.inf, -math.inf)
        if isinstance(v, float)
        else (isinstance(v, Decimal) and v.is_infinite())
    )


def _average(total: Any, n: int, kind: SqlType) -> Any:
    if kind == FLOAT8:
        return float(total) / n
    with localcontext() as ctx:
        ctx.prec = 40
        return Decimal(total) / n
