"""Operator state computed in bulk on Spark, for a dataflow hydrating at an as_of.

A reduce's state is small even when its input is large: per group, the row count and per
aggregate the count of non-NULL values and their total, or (for DISTINCT, min, max, bool_and,
bool_or, string_agg) the values with their counts. Spark aggregates the input collection into
exactly that, so only the groups reach the driver.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from changeflow.compute import plan as P
from changeflow.compute.operators import Group, Row
from changeflow.compute.spark_expr import ExprCompiler, exact_decimals, from_spark, name
from changeflow.compute.types import FLOAT8, NUMERIC, SqlType
from changeflow.compute.values import python_values
from changeflow.updates import DIFF


def positional(frame: DataFrame, width: int) -> DataFrame:
    """A collection's frame with its data columns named by position (``c0``…) and ``_diff``."""
    return frame.toDF(*[name(i) for i in range(width)], DIFF)


def reduce_groups(frame: DataFrame, reduce: P.Reduce) -> dict[Row, Group]:
    """The groups of ``reduce`` over its input collection ``frame`` (positional columns and
    ``_diff``), their accumulators computed on Spark."""
    with exact_decimals(frame.sparkSession):
        compiler = ExprCompiler(frame)
        keys = [F.col(name(i)).alias(f"k{n}") for n, i in enumerate(reduce.group_by)]
        diff = F.col(DIFF)
        sums: list[Column] = [F.sum(diff).alias("count")]
        for i, agg in enumerate(reduce.aggregates):
            if agg.arg is None:
                continue
            arg = compiler.compile(agg.arg)
            kept = arg.isNotNull()
            if agg.filter is not None:  # the rows FILTER (WHERE …) leaves out add nothing
                kept = kept & compiler.compile(agg.filter)
            sums.append(F.sum(F.when(kept, diff).otherwise(0)).alias(f"n{i}"))
            if not _counts_values(agg) and agg.func != "count":
                if agg.arg.type == FLOAT8:  # NaNs counted apart, as the accumulator keeps them
                    nan = F.isnan(arg)
                    sums.append(F.sum(F.when(kept & nan, diff).otherwise(0)).alias(f"z{i}"))
                    arg = F.when(nan, F.lit(0.0)).otherwise(arg)
                sums.append(F.sum(_exact(arg, agg) * diff).alias(f"t{i}"))
        kinds = [reduce.input.schema[i].type for i in reduce.group_by]
        names = [f"k{n}" for n in range(len(keys))]
        table = from_spark(frame.groupBy(*keys).agg(*sums).toArrow(), kinds, names)
        groups = _groups(table, reduce)
        for i, agg in enumerate(reduce.aggregates):
            if agg.arg is not None and _counts_values(agg):
                exprs = (agg.arg, *(o.expr for o in agg.order))
                parts = [compiler.compile(e) for e in exprs]
                typed = [*kinds, *(e.type for e in exprs)]
                rows = frame if agg.filter is None else frame.where(compiler.compile(agg.filter))
                _values(rows, parts, agg.func == "array_agg", keys, typed, i, groups)
    return {k: g for k, g in groups.items() if g.count}


def _counts_values(agg: P.Aggregate) -> bool:
    return agg.distinct or agg.func not in ("count", "sum", "avg")


def _exact(arg: Column, agg: P.Aggregate) -> Column:
    """The argument in a type whose sum cannot overflow before the total is checked."""
    kind = agg.arg.type if agg.arg is not None else None
    if kind == FLOAT8:
        return arg.cast("double")
    if kind == NUMERIC:
        return arg
    return arg.cast("decimal(38,0)")


def _groups(table: Any, reduce: P.Reduce) -> dict[Row, Group]:
    width = len(reduce.group_by)
    columns = {n: python_values(table.column(n)) for n in table.column_names}
    groups: dict[Row, Group] = {}
    width_aggs = len(reduce.aggregates)
    for r in range(table.num_rows):
        key = tuple(columns[f"k{n}"][r] for n in range(width))
        present = {
            i: columns[f"n{i}"][r] for i in range(len(reduce.aggregates)) if f"n{i}" in columns
        }
        totals = {
            i: columns[f"t{i}"][r] for i in range(len(reduce.aggregates)) if f"t{i}" in columns
        }
        nans = {i: columns[f"z{i}"][r] for i in range(width_aggs) if f"z{i}" in columns}
        groups[key] = totals_group(reduce.aggregates, columns["count"][r], present, totals, nans)
    return groups


def totals_group(
    aggregates: tuple[P.Aggregate, ...],
    count: int,
    present: dict[int, int],
    totals: dict[int, Any],
    nans: dict[int, int] | None = None,
) -> Group:
    """The in-process accumulator of a group from its totals (computed on Spark: an integer's
    sum comes as a decimal): its rows, and per aggregate its non-NULL values, their sum and
    (a double's) the NaNs left out of it."""
    group = Group(aggregates)
    group.count = count
    for i, agg in enumerate(aggregates):
        if agg.arg is None:
            continue
        group.present[i] = present[i]
        group.nans[i] = (nans or {}).get(i) or 0
        total = totals.get(i)
        if total is not None:
            group.totals[i] = total if agg.arg.type in (FLOAT8, NUMERIC) else int(total)
    return group


def _values(
    frame: DataFrame,
    parts: list[Column],
    nulls: bool,
    keys: list[Column],
    kinds: list[SqlType],
    i: int,
    groups: dict[Row, Group],
) -> None:
    """Aggregate ``i``'s values with their counts, per group: the argument (``parts[0]``,
    NULLs kept if ``nulls``), as a tuple with its sort keys if it has more ``parts``; ``kinds``
    are the keys' and the parts' types."""
    tupled = len(parts) > 1 or nulls
    counted = (
        (frame if nulls else frame.where(parts[0].isNotNull()))
        .groupBy(*keys, *(p.alias(f"v{j}") for j, p in enumerate(parts)))
        .agg(F.sum(F.col(DIFF)).alias("c"))
        .where(F.col("c") != 0)
        .toArrow()
    )
    width = len(keys)
    names = [*(f"k{n}" for n in range(width)), *(f"v{j}" for j in range(len(parts)))]
    counted = from_spark(counted, kinds, names)
    columns = {n: python_values(counted.column(n)) for n in counted.column_names}
    for r in range(counted.num_rows):
        key = tuple(columns[f"k{n}"][r] for n in range(width))
        values = groups[key].values[i]
        assert values is not None
        value = tuple(columns[f"v{j}"][r] for j in range(len(parts)))
        values[value if tupled else value[0]] = columns["c"][r]
    for group in groups.values():
        if group.values[i] is None:
            group.values[i] = Counter()
