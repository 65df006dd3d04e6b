"""Spark DataFrames appended to a shard: cast to the shard's update frame, checked by the
module's rule (:mod:`changeflow.storage.frames`) and written as Parquet parts in one Spark job.

The checks ride on the write as observed metrics, so the frame's plan (often a whole step of a
dataflow) is computed once. A frame that breaks the rule has its parts deleted before the error
is raised: nothing it wrote is referenced by any shard state, so nothing is half-written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from changeflow.storage.compact import discard_parts, write_parts
from changeflow.storage.frames import (
    check_time_range,
    columns_refused,
    frame_schema,
    refuse,
    type_refused,
)
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from changeflow.storage.machine import Machine


def write_spark_frame(
    machine: Machine,
    frame: DataFrame,
    schema: pa.Schema,
    gid: str,
    lower: int,
    upper: int | None,
    name: str,
) -> tuple[tuple[str, ...], int]:
    """Write ``frame`` as a batch of shard ``gid`` (data ``schema``) with its times in
    ``[lower, upper)``; return the parts' keys and the row count (no keys for no rows)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    target = from_arrow_schema(frame_schema(schema))
    columns_refused(name, frame.columns, target.names)
    row = F.to_json(F.struct(*(spark_col(c) for c in frame.columns)))
    checks: list[tuple[str, str]] = []
    metrics = [F.count(F.lit(1)).alias("rows"), F.min(TIME).alias("low"), F.max(TIME).alias("high")]
    casts = []
    for f in target.fields:
        actual, column = frame.schema[f.name].dataType, spark_col(f.name)
        integers = f.name in (TIME, DIFF)
        bad: list[tuple[str, Column]] = []
        if integers or not f.nullable:
            bad.append(("NULL in a NOT NULL column", column.isNull()))
        if actual == f.dataType:
            casts.append(column.alias(f.name))
        else:
            if not _castable(actual, f.dataType, integers):
                example = frame.where(column.isNotNull()).select(column, row).first()
                value, where = (None, None) if example is None else example
                raise type_refused(
                    name, f.name, actual.simpleString(), f.dataType.simpleString(), where, value
                )
            why = f"does not fit {f.dataType.simpleString()} without loss"
            bad.append((why, _lost(column, actual, f.dataType)))
            casts.append(column.try_cast(f.dataType).alias(f.name))
        for why, test in bad:
            metric = f"bad{len(checks)}"
            checks.append((f.name, why))
            example = F.first(F.when(test, F.struct(column, row)), ignorenulls=True)
            metrics.append(example.alias(metric))
    observed = Observation()
    keys = write_parts(machine, frame.observe(observed, *metrics).select(*casts), gid)
    stats = observed.get
    try:
        for i, (column, why) in enumerate(checks):
            example = stats[f"bad{i}"]
            if example is not None:
                value, where = example
                said = why if value is None else f"{value!r} {why}"
                raise refuse(name, column, where, value, said)
        if stats["rows"]:
            check_time_range(stats["low"], stats["high"], lower, upper, name)
    except Exception:
        discard_parts(machine, keys)
        raise
    if not stats["rows"]:
        discard_parts(machine, keys)
        return (), 0
    return keys, stats["rows"]


def spark_col(name: str) -> Column:
    """A Spark column by its exact name (dots and backticks included)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _lost(column: Column, actual: Any, target: Any) -> Column:
    """True where a value of ``column`` would change on its way to ``target`` (between floats:
    where it would overflow to infinity; rounding is allowed)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    there = column.try_cast(target)
    if isinstance(actual, T.FractionalType) and isinstance(target, T.FractionalType):
        infinite = float("inf")
        changed = (F.abs(there) == infinite) & (F.abs(column) != infinite)
    else:
        changed = there.try_cast(actual) != column
    return column.isNotNull() & (there.isNull() | changed)


def _castable(actual: Any, target: Any, integers_only: bool) -> bool:
    """The rule's casts on Spark types: ints among ints, ints and floats both ways (data
    columns only), floats among floats, nulls into anything; otherwise equal types only."""
    from pyspark.sql import types as T

    def kind(t: Any) -> str:
        if isinstance(t, T.IntegralType):
            return "int"
        if isinstance(t, T.FloatType | T.DoubleType):
            return "float"
        return "null" if isinstance(t, T.NullType) else t.simpleString()

    a, b = kind(actual), kind(target)
    if integers_only:
        return a in ("int", "null")
    return a in (b, "null") or (a, b) in (("int", "float"), ("float", "int"))
