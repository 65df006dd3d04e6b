"""A small step's changes in the driver.

A refresh step changes little, and a Spark job costs a few hundred milliseconds whatever it
does. So when a step's input changes are few (``CHANGEFLOW_CLUSTER_STEP_ROWS``), they travel
between the operators as update lists in the driver: linear operators run there by the
in-process tier's own definitions (no Spark job), and only a stateful operator's probe of its
arrangements goes to the executors, its inputs' changes broadcast into the arranged batches,
its output brought back. A larger step (a catch-up after downtime) runs wholly on Spark.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pyarrow as pa

from changeflow.compute import plan as P
from changeflow.compute.operators import Inputs, build
from changeflow.compute.spark_expr import name
from changeflow.compute.types import Schema
from changeflow.compute.values import arrow_values
from changeflow.updates import DIFF, TIME

Update = tuple[tuple[Any, ...], int, int]


class LinearStep:
    """A linear operator (Map, Filter, Project, Union, Negate, a temporal filter, a one-input
    join) applied in the driver to its inputs' changes, by the in-process operator."""

    def __init__(self, plan: P.Plan) -> None:
        gets = tuple(P.Get(f"_in{i}", p.schema) for i, p in enumerate(plan.inputs()))
        many = hasattr(plan, "inputs_")
        over = replace(plan, inputs_=gets) if many else replace(plan, input=gets[0])
        self.sources = Inputs()
        self.operator = build(over, self.sources, 0)

    def __call__(self, inputs: list[list[Update]], upper: int) -> list[Update]:
        for i, updates in enumerate(inputs):
            self.sources.feed(f"_in{i}", updates)
        return self.operator.step(upper)


def consolidated(updates: Iterable[Update]) -> list[Update]:
    """One update per distinct row and time, diffs summed, zeros dropped."""
    counts: Counter = Counter()
    for row, t, d in updates:
        counts[row, t] += d
    return [(row, t, d) for (row, t), d in counts.items() if d]


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
        return value.quantize(Decimal(1).scaleb(-kind.scale))
    return value
