"""A reduce's groups aggregated on Spark equal the reference's output over the same rows."""

from __future__ import annotations

import math
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate
from changeflow.compute.expr import Cmp, lit
from changeflow.compute.spark_state import positional, reduce_groups
from changeflow.compute.types import FLOAT8, INT8, NUMERIC, TEXT, Column

R = P.Get("r", (Column("k", TEXT), Column("i", INT8), Column("f", FLOAT8), Column("n", NUMERIC)))
c = lambda i: P.col(R.schema, i)  # noqa: E731
AGGREGATES = (
    P.Aggregate("count"),
    P.Aggregate("count", c(1)),
    P.Aggregate("sum", c(1)),
    P.Aggregate("avg", c(1)),
    P.Aggregate("sum", c(2)),
    P.Aggregate("avg", c(2)),
    P.Aggregate("max", c(2)),
    P.Aggregate("sum", c(3)),
    P.Aggregate("avg", c(3)),
    P.Aggregate("min", c(1)),
    P.Aggregate("max", c(0)),
    P.Aggregate("count", c(1), distinct=True),
    P.Aggregate("sum", c(1), distinct=True),
    P.Aggregate("bool_and", Cmp(">", c(1), lit(0))),
    P.Aggregate("bool_or", Cmp(">", c(1), lit(0))),
    P.Aggregate("string_agg", c(0), separator="|"),
    P.Aggregate("string_agg", c(0), order=(P.SortExpr(c(1), True, False), P.SortExpr(c(2)))),
    P.Aggregate("string_agg", c(0), True, order=(P.SortExpr(c(0), True),)),
    P.Aggregate("array_agg", c(1), filter=Cmp(">", c(1), lit(0))),
    P.Aggregate("array_agg", c(0), order=(P.SortExpr(c(1)),), filter=Cmp("<", c(1), lit(2))),
)


@pytest.mark.spark
def test_reduce_groups_on_spark_equal_the_reference(spark) -> None:
    rng = random.Random(3)
    rows: dict[tuple, int] = {}
    for _ in range(300):
        row = (
            rng.choice(["a", "b", None]),
            rng.choice([None, *range(-3, 4), 2**62]),
            rng.choice([None, 0.5, -1.25, math.nan]),
            rng.choice([None, Decimal("1.5"), Decimal("-0.1")]),
        )
        rows[row] = rows.get(row, 0) + rng.randint(1, 3)
    for group_by in [(0,), ()]:
        reduce = P.Reduce(R, group_by, AGGREGATES)
        frame = spark.createDataFrame(
            pa.table(
                {
                    "k": [r[0] for r in rows],
                    "i": pa.array([r[1] for r in rows], pa.int64()),
                    "f": pa.array([r[2] for r in rows], pa.float64()),
                    "n": pa.array([r[3] for r in rows], pa.decimal128(38, 10)),
                    "_diff": list(rows.values()),
                }
            )
        )
        groups = reduce_groups(positional(frame, 4), reduce)
        kinds = [col.type for col in reduce.schema[len(group_by) :]]
        ours = {groups[k].row(k, kinds): 1 for k in groups}
        expected = evaluate(reduce, {"r": rows}, 0)
        assert _approx(ours) == _approx(expected)
        # the NaNs leave the running totals as they go (the state counts them apart)
        finite = {r: n for r, n in rows.items() if r[2] is not math.nan}
        for row, n in rows.items():
            if row[2] is math.nan:
                key = tuple(row[i] for i in group_by)
                groups[key].add(row, -n)
        ours = {groups[k].row(k, kinds): 1 for k in groups if groups[k].count}
        assert _approx(ours) == _approx(evaluate(reduce, {"r": finite}, 0))


def _approx(version: dict) -> set:
    return {
        tuple(("NaN" if v != v else round(v, 9)) if isinstance(v, float) else v for v in row)
        for row in version
    }
