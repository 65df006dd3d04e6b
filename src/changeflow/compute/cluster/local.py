"""A small step's changes in the driver.

A refresh step changes little, and a Spark job costs a few hundred milliseconds whatever it
does. So when a step's input changes are few (``CHANGEFLOW_CLUSTER_STEP_ROWS``), they travel
between the operators as batches (:class:`~changeflow.compute.operators.batch.Batch`) in the
driver: linear operators run there by the in-process tier's own definitions, on columns where
it has them (no Spark job), and only a stateful operator's probe of its arrangements goes to
the executors, its inputs' changes sent into the arranged batches, its output brought back. A
larger step (a catch-up after downtime) runs wholly on Spark.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import pyarrow as pa

from changeflow.compute import plan as P
from changeflow.compute.operators import Inputs, build
from changeflow.compute.operators.batch import Batch, summed
from changeflow.compute.scale import stored_decimal
from changeflow.compute.spark_expr import from_spark, name
from changeflow.compute.types import Schema, SqlType
from changeflow.compute.values import arrow_values
from changeflow.updates import DIFF, TIME

Update = tuple[tuple[Any, ...], int, int]


class LinearStep:
    """A linear operator (Map, Filter, Project, Union, Negate, a temporal filter, a one-input
    join) applied in the driver to its inputs' changes, by the in-process operator (on the
    columns where it has a batch form, else on rows)."""

    def __init__(self, plan: P.Plan) -> None:
        gets = tuple(P.Get(f"_in{i}", p.schema) for i, p in enumerate(plan.inputs()))
        many = hasattr(plan, "inputs_")
        over = replace(plan, inputs_=gets) if many else replace(plan, input=gets[0])
        self.sources = Inputs()
        self.operator = build(over, self.sources, 0)
        self.kinds = kinds(plan.schema)

    def __call__(self, inputs: list[Batch], upper: int) -> Batch:
        for i, batch in enumerate(inputs):
            self.sources.feed(f"_in{i}", batch)
        if self.operator.columnar:
            return self.operator.step_batch(upper)
        return Batch.of_updates(self.operator.step(upper), self.kinds)


def kinds(schema: Schema) -> tuple[SqlType, ...]:
    return tuple(c.type for c in schema)


def consolidated(updates: Iterable[Update]) -> list[Update]:
    """One update per distinct row and time, diffs summed, zeros dropped."""
    counts: Counter = Counter()
    for row, t, d in updates:
        counts[row, t] += d
    return [(row, t, d) for (row, t), d in counts.items() if d]


def consolidated_batch(batch: Batch) -> Batch:
    """:func:`consolidated` of a batch, on its columns where Arrow groups them as rows do."""
    sums = summed(batch)
    if sums is not None:
        return sums
    return Batch.of_updates(consolidated(batch.updates()), batch.kinds)


def spark_batch(table: pa.Table, kinds: tuple[SqlType, ...]) -> Batch:
    """Spark's output changes (``c0``…, ``_time``, ``_diff``) as a batch: each column in its
    SQL type's Arrow type, numerics exactly as Spark computed them."""
    batch = Batch.of_table(from_spark(table, kinds), kinds)
    columns = []
    for column, kind in zip(batch.columns, kinds, strict=True):
        if column.type != kind.arrow and not pa.types.is_decimal(column.type):
            try:
                column = column.cast(kind.arrow)
            except pa.ArrowException:  # a type Arrow does not convert: the rows do
                return Batch.of_updates(batch.updates(), kinds)
        columns.append(column)
    int64 = pa.int64()
    return Batch(columns, batch.times.cast(int64), batch.diffs.cast(int64), kinds)


def batch_table(batch: Batch, schema: Schema, timed: bool = True) -> pa.Table:
    """:func:`frame_table` of a batch's updates, made from its columns where they fit."""
    names = [name(i) for i in range(len(schema))]
    fields = [pa.field(n, c.type.arrow) for n, c in zip(names, schema, strict=True)]
    table = batch.table(pa.schema(fields))
    if table is None:  # a numeric only the rows can round
        return frame_table(batch.updates(), schema, timed)
    return table if timed else table.drop_columns([TIME])


def frame_table(updates: list[Update], schema: Schema, timed: bool = True) -> pa.Table:
    """Updates as an Arrow table of positional columns (``c0``…) in ``schema``'s types, then
    ``_time`` (when ``timed``) and ``_diff``: what a Spark frame of them is made from."""
    arrays = []
    for i, c in enumerate(schema):
        kind = c.type.arrow
        values = [fit_value(u[0][i], kind) for u in updates]
        arrays.append(pa.array(arrow_values(values, kind), type=kind))
    names = [name(i) for i in range(len(schema))]
    if timed:
        arrays.append(pa.array([u[1] for u in updates], pa.int64()))
        names.append(TIME)
    arrays.append(pa.array([u[2] for u in updates], pa.int64()))
    return pa.Table.from_arrays(arrays, names=[*names, DIFF])


def fit_value(value: Any, kind: pa.DataType) -> Any:
    """A value as a column of ``kind`` holds it (a numeric rounded to the column's scale, as
    every stored numeric is)."""
    if isinstance(value, Decimal) and pa.types.is_decimal(kind):
        return stored_decimal(value, kind, "a view's column", rounding=ROUND_HALF_EVEN)
    return value


def no_changes(plan: P.Plan) -> Batch:
    """No changes of ``plan``'s rows."""
    return Batch.of_updates([], kinds(plan.schema))


def fit_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Spark's Arrow output in the output shard's column types."""
    arrays = [table.column(f.name).cast(f.type) for f in schema]
    arrays += [table.column(TIME).cast(pa.int64()), table.column(DIFF).cast(pa.int64())]
    return pa.Table.from_arrays(arrays, names=[*schema.names, TIME, DIFF])
