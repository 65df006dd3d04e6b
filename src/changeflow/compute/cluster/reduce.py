"""Reduces whose aggregates are running totals (count, sum and avg without DISTINCT) on the
cluster tier: the state is one row of totals per group, not the group's input rows.

A step sums its changes per group and time, adds them up in time order onto the totals the
spine holds for the touched groups (a join against the small set of changed groups), and emits
each touched group's row before and after each of its times; the spine then adds the step's
totals. So a step reads the groups it changes, never their input rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from functools import reduce as fold
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from changeflow.compute import columnar as C
from changeflow.compute import plan as P
from changeflow.compute.cluster.index import Indexed
from changeflow.compute.cluster.local import Update, fit_value
from changeflow.compute.operators.batch import Batch
from changeflow.compute.operators.reduce_batch import accumulate
from changeflow.compute.spark_expr import ExprCompiler, fail, from_spark, name, spark_type
from changeflow.compute.spark_state import totals_group
from changeflow.compute.types import FLOAT8, NUMERIC, NUMERIC_SCALE
from changeflow.compute.values import python_values
from changeflow.updates import DIFF, TIME

COUNT = "_n"  # the group's row count


_NUMERIC = spark_type(NUMERIC)  # a numeric total's Spark type
_ARROW = {
    "bigint": pa.int64(),
    "double": pa.float64(),
    "decimal(38,0)": pa.decimal128(38, 0),
    _NUMERIC: NUMERIC.arrow,
}


_PLACES = NUMERIC_SCALE  # a numeric total's decimal places

_ZERO = {"bigint": 0, "double": 0.0, "decimal(38,0)": Decimal(0), _NUMERIC: Decimal(0)}


def _as_total(value: Any, kind: str) -> Any:
    """A value as Spark casts it to its total's type (a decimal rounded half up)."""
    if kind == "double":
        return float(value)
    scale = Decimal(1) if kind == "decimal(38,0)" else Decimal(1).scaleb(-_PLACES)
    return Decimal(value).quantize(scale, rounding=ROUND_HALF_UP)


def accumulable(plan: P.Plan) -> bool:
    """Is ``plan`` a reduce whose aggregates are all running totals?"""
    return isinstance(plan, P.Reduce) and all(
        not a.distinct and a.func in ("count", "sum", "avg") for a in plan.aggregates
    )


def _total_type(agg: P.Aggregate) -> str:
    """The type a running total is kept in: exact for integers and numerics."""
    kind = agg.arg.type if agg.arg is not None else None
    if kind == FLOAT8:
        return "double"
    return _NUMERIC if kind == NUMERIC else "decimal(38,0)"


@dataclass(frozen=True)
class Accumulated:
    """A reduce kept as totals per group (see the module docstring)."""

    plan: P.Reduce

    @property
    def width(self) -> int:
        return len(self.plan.group_by)

    def values(self) -> tuple[str, ...]:
        """The totals per group: rows, then per aggregate with an argument its non-NULL
        values' count (``_p``) and, for sum and avg, their total (``_s``) and, of doubles, the
        count of NaNs left out of it (``_q``: the total comes back when they go)."""
        out = [COUNT]
        for i, agg in enumerate(self.plan.aggregates):
            if agg.arg is not None:
                out.append(f"_p{i}")
                if agg.func != "count":
                    out.append(f"_s{i}")
                    if _total_type(agg) == "double":
                        out.append(f"_q{i}")
        return tuple(out)

    def totals(self, frame: DataFrame) -> DataFrame:
        """A step's changes (the input's columns, ``_time``, ``_diff``) as totals per group
        and time: the group's columns (``c0``…), ``_time`` and :meth:`values`."""
        cc = ExprCompiler(frame)
        d = F.col(DIFF)
        parts: list[Column] = [d.alias(COUNT)]
        for i, agg in enumerate(self.plan.aggregates):
            if agg.arg is None:
                continue
            arg = cc.compile(agg.arg)
            parts.append(F.when(arg.isNotNull(), d).otherwise(F.lit(0)).alias(f"_p{i}"))
            if agg.func != "count":
                kind = _total_type(agg)
                times = d.cast("double") if kind == "double" else d.cast("decimal(10,0)")
                value = (arg.cast(kind) * times).cast(kind)
                summed = arg.isNotNull() & ~F.isnan(arg) if kind == "double" else arg.isNotNull()
                parts.append(F.when(summed, value).otherwise(F.lit(0).cast(kind)))
                parts[-1] = parts[-1].alias(f"_s{i}")
                if kind == "double":
                    nan = F.when(F.isnan(arg), d).otherwise(F.lit(0))
                    parts.append(nan.alias(f"_q{i}"))
        keys = [F.col(name(c)).alias(name(j)) for j, c in enumerate(self.plan.group_by)]
        picked = frame.select(*keys, TIME, *parts)
        sums = [F.sum(v).alias(v) for v in self.values()]
        grouped = picked.groupBy(*(name(j) for j in range(self.width)), TIME).agg(*sums)
        return grouped.select(
            *(name(j) for j in range(self.width)), TIME, *self._typed(self.values())
        )

    def local_totals(self, batch: Batch) -> pa.Table:
        """:meth:`totals` of a small step's changes, computed in the driver, in the same
        columns and types: summed by Arrow where it sums as the rows would."""
        try:
            sums = self._batch_sums(batch)
        except C.Rows:
            sums = self._row_sums(batch.updates())
        schema = self.plan.input.schema
        arrays = []
        for j, c in enumerate(self.plan.group_by):
            kind = schema[c].type.arrow
            arrays.append(pa.array([fit_value(k[j], kind) for k in sums], kind))
        arrays.append(pa.array([k[-1] for k in sums], pa.int64()))
        for v, kind in zip(self.values(), self._types(), strict=True):
            arrays.append(pa.array([acc[v] for acc in sums.values()], _ARROW[kind]))
        names = [*(name(j) for j in range(self.width)), TIME, *self.values()]
        return pa.Table.from_arrays(arrays, names=names)

    def _batch_sums(self, batch: Batch) -> dict[tuple, dict[str, Any]]:
        """The totals per group key and time (the key's values, then the time) of a batch,
        by the in-process reduce's Arrow group-by: raises :class:`C.Rows` where a value's
        total could differ from the rows' (a float, a numeric past ten places)."""
        kinds = dict(zip(self.values(), self._types(), strict=True))
        if "double" in kinds.values():
            raise C.Rows()
        sums: dict[tuple, dict[str, Any]] = {}
        times = batch.times
        for t in pc.unique(times).to_pylist():
            changes = accumulate(self.plan, batch.filter(pc.equal(times, t)))
            if any(_past_places(v) for c in changes.values() for v in c.totals):
                raise C.Rows()  # the rows round each value to the total's places first
            for key, change in changes.items():
                acc = sums[(*key, t)] = {COUNT: change.count}
                for i, agg in enumerate(self.plan.aggregates):
                    if agg.arg is None:
                        continue
                    acc[f"_p{i}"] = change.present[i]
                    if agg.func != "count":
                        acc[f"_s{i}"] = Decimal(change.totals[i])
        return sums

    def _row_sums(self, updates: list[tuple[tuple, int, int]]) -> dict[tuple, dict[str, Any]]:
        """:meth:`_batch_sums` of updates, a row at a time."""
        group_by, aggregates = self.plan.group_by, self.plan.aggregates
        kinds = dict(zip(self.values(), self._types(), strict=True))
        zeros = {v: _ZERO[kind] for v, kind in kinds.items()}
        sums: dict[tuple, dict[str, Any]] = {}
        with localcontext() as exact:
            exact.prec = 80  # wider than any total: Spark's overflow check comes after
            for row, t, d in updates:
                key = (*(row[c] for c in group_by), t)
                acc = sums.get(key)
                if acc is None:
                    acc = sums[key] = dict(zeros)
                acc[COUNT] += d
                for i, agg in enumerate(aggregates):
                    value = None if agg.arg is None else agg.arg.eval(row)
                    if value is None:
                        continue
                    acc[f"_p{i}"] += d
                    if agg.func == "count":
                        continue
                    if value != value:  # a NaN: counted apart from the total
                        acc[f"_q{i}"] += d
                    else:
                        acc[f"_s{i}"] += _as_total(value, kinds[f"_s{i}"]) * d
        return sums

    def touched(
        self, held: DataFrame | None, step: pa.Table, index: Indexed | None = None
    ) -> pa.Table | None:
        """The rows of totals ``held`` (unsummed) of the groups a small ``step`` touches: its
        keys looked up in the totals' ``index``, else broadcast into the spine, one job."""
        if held is None:
            return None
        keys = [name(j) for j in range(self.width)]
        spark = held.sparkSession
        side = None if index is None else index.side()
        if index is not None and side is not None:
            mine = [f"_g{j}" for j in range(self.width)]
            groups = spark.createDataFrame(_distinct(step.select(keys)).rename_columns(mine))
            values = {v: v for v in self.values()}
            found = index.probe(groups, mine, side, 0, values)
            if found is not None:
                same = (F.col(g).eqNullSafe(F.col(k)) for g, k in zip(mine, keys, strict=True))
                found = found.where(fold(lambda a, b: a & b, same))
                return found.select(*keys, *self.values()).toArrow()
        groups = spark.createDataFrame(step.select(keys))
        same = (held[k].eqNullSafe(groups[k]) for k in keys)
        on = fold(lambda a, b: a & b, same, F.lit(True))
        return held.join(F.broadcast(groups), on, "left_semi").toArrow()

    def local_delta(self, step: pa.Table, held: pa.Table | None) -> list[Update]:
        """:meth:`delta_of` in the driver, for totals few enough to read here (``held``: the
        spine's rows, unsummed): each touched group's row before and after each of its
        times, as the in-process tier's accumulator makes it."""
        width, values = self.width, self.values()
        keys = [name(j) for j in range(width)]
        kinds = [self.plan.input.schema[c].type for c in self.plan.group_by]
        zero = [_ZERO[kind] for kind in self._types()]
        sums: dict[tuple, list[Any]] = {}
        if held is not None:
            held = from_spark(held, kinds, keys)
            for row in _rows(held, (*keys, *values)):
                acc = sums.setdefault(row[:width], list(zero))
                sums[row[:width]] = [a + v for a, v in zip(acc, row[width:], strict=True)]
        changes: dict[tuple, list[tuple]] = {}
        for row in _rows(step, (*keys, TIME, *values)):
            changes.setdefault(row[:width], []).append(row[width:])
        out: list[Update] = []
        for key, times in changes.items():
            acc = sums.get(key, zero)
            before = self._row(key, acc)
            for t, *step_sums in sorted(times, key=lambda r: r[0]):
                acc = [a + s for a, s in zip(acc, step_sums, strict=True)]
                after = self._row(key, acc)
                if before != after:
                    out += [(before, t, -1)] if before is not None else []
                    out += [(after, t, 1)] if after is not None else []
                before = after
        return out

    def _row(self, key: tuple, acc: list[Any]) -> tuple | None:
        """The reduce's output row of a group with totals ``acc`` (None: it has no rows)."""
        named = dict(zip(self.values(), acc, strict=True))
        aggregates = self.plan.aggregates
        present = {i: named[f"_p{i}"] for i in range(len(aggregates)) if f"_p{i}" in named}
        totals = {i: named[f"_s{i}"] for i in range(len(aggregates)) if f"_s{i}" in named}
        nans = {i: named[f"_q{i}"] for i in range(len(aggregates)) if f"_q{i}" in named}
        group = totals_group(aggregates, named[COUNT], present, totals, nans)
        return group.row(key, [c.type for c in self.plan.schema[self.width :]])

    def delta_of(self, step: DataFrame, held: DataFrame | None, at: int | None) -> DataFrame:
        """The reduce's output changes for a step's :meth:`totals` and the totals ``held``."""
        keys = [name(j) for j in range(self.width)]
        values = self.values()
        if at is not None:  # hydration: nothing held, one time
            return self._rows(step, dict.fromkeys(values, None), 1)
        order = Window.partitionBy(*keys).orderBy(TIME) if keys else Window.orderBy(TIME)
        upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        running = step.select(*keys, TIME, *(F.sum(v).over(upto).alias(v) for v in values))
        if held is None:
            after = running.select(*keys, TIME, *(F.col(v).alias(f"a{v}") for v in values))
        else:
            old = self._held(held, running, keys)
            on = fold(
                lambda a, b: a & b,
                (running[k].eqNullSafe(old[k]) for k in keys),
                F.lit(True),
            )
            joined = old.join(running, on, "right").drop(*(old[k] for k in keys))
            after = joined.select(
                *keys,
                TIME,
                *(
                    (F.coalesce(F.col(f"o{v}"), F.lit(0).cast(t)) + F.col(v)).alias(f"a{v}")
                    for v, t in zip(values, self._types(), strict=True)
                ),
                *(F.col(f"o{v}") for v in values),
            )
        previous = [
            F.lag(F.col(f"a{v}")).over(order) for v in values
        ]  # the totals at the group's time before
        first = F.row_number().over(order) == 1
        befores = [
            F.when(first, F.col(f"o{v}") if held is not None else F.lit(None)).otherwise(p)
            for v, p in zip(values, previous, strict=True)
        ]
        both = after.select(
            *keys, TIME, *(F.col(f"a{v}") for v in values),
            *(b.alias(f"b{v}") for v, b in zip(values, befores, strict=True)),
        )  # fmt: skip
        now = self._rows(both, {v: f"a{v}" for v in values}, 1)
        gone = self._rows(both, {v: f"b{v}" for v in values}, -1)
        return now.union(gone)

    def _held(self, held: DataFrame, running: DataFrame, keys: list[str]) -> DataFrame:
        """The held totals of the groups the step touches, summed across the spine's batches
        (a group may have a row in several), as ``o<value>`` columns."""
        touched = running.select(*keys).distinct()
        same = fold(
            lambda a, b: a & b,
            (held[k].eqNullSafe(touched[k]) for k in keys),
            F.lit(True),
        )
        mine = held.join(touched, same, "left_semi")
        sums = [
            F.sum(v).cast(t).alias(f"o{v}")
            for v, t in zip(self.values(), self._types(), strict=True)
        ]
        return mine.groupBy(*keys).agg(*sums) if keys else mine.agg(*sums)

    def _types(self) -> list[str]:
        kinds = {COUNT: "bigint"}
        for i, agg in enumerate(self.plan.aggregates):
            kinds[f"_p{i}"] = kinds[f"_q{i}"] = "bigint"
            kinds[f"_s{i}"] = _total_type(agg)
        return [kinds[v] for v in self.values()]

    def _typed(self, values: tuple[str, ...]) -> list[Column]:
        return [F.col(v).cast(t).alias(v) for v, t in zip(values, self._types(), strict=True)]

    def _rows(self, frame: DataFrame, columns: dict[str, str | None], diff: int) -> DataFrame:
        """The reduce's output row of each group whose totals are in ``columns`` (a column
        per value; None: its own name), where the group has rows, counted ``diff``."""

        def total(v: str) -> Column:
            return F.col(columns[v] or v)

        rows = total(COUNT)
        bad = fail("Reduce: a group has a negative count", "XX000")
        outs = []
        for i, agg in enumerate(self.plan.aggregates):
            if agg.arg is None:
                outs.append(rows)
                continue
            present = total(f"_p{i}")
            if agg.func == "count":
                outs.append(present)
                continue
            value = total(f"_s{i}")
            if agg.func == "avg":
                kind = agg.arg.type
                value = value / present if kind == FLOAT8 else value / present.cast("decimal(20,0)")
            if f"_q{i}" in columns:  # a NaN among the values makes the sum and average NaN
                value = F.when(total(f"_q{i}") > 0, F.lit(float("nan"))).otherwise(value)
            outs.append(F.when(present > 0, value))
        width = self.width
        data = [F.col(name(j)) for j in range(width)]
        data += [o.alias(name(width + i)) for i, o in enumerate(outs)]
        checked = frame.where(F.when(rows < 0, bad).otherwise(rows) > 0)
        return checked.select(*data, TIME, F.lit(diff).cast("bigint").alias(DIFF))


def _rows(table: pa.Table, columns: tuple[str, ...]) -> list[tuple]:
    """``table``'s ``columns`` as rows of Python values."""
    return list(zip(*(python_values(table.column(c)) for c in columns), strict=True))


def _distinct(table: pa.Table) -> pa.Table:
    """``table``'s distinct rows (NULL equal to NULL), found in the driver."""
    return table.group_by(table.column_names, use_threads=False).aggregate([])


def _past_places(total: Any) -> bool:
    """Whether a step's decimal total (summed in Arrow at its values' fewest places) has more
    places than the totals keep."""
    return isinstance(total, Decimal) and -total.as_tuple().exponent > _PLACES
