"""An ordered aggregate's values come out in :func:`sort_key`'s order (every direction and
NULL placement, ties broken by the value), whether sorted by Python's comparisons or, for
values it cannot order (arrays with NULLs), by the reference key."""

from __future__ import annotations

import itertools
import random

from changeflow.compute import plan as P
from changeflow.compute.evaluate import aggregate_values, sort_key
from changeflow.compute.types import ARRAYS, INT4, TEXT, Column

R = P.Get("r", (Column("v", INT4), Column("k", TEXT), Column("j", INT4), Column("a", ARRAYS[INT4])))
c = lambda i: P.col(R.schema, i)  # noqa: E731


def _expected(agg: P.Aggregate, values: list[tuple]) -> tuple:
    order = tuple(P.Order(i, o.desc, o.nulls_last) for i, o in enumerate(agg.order))
    rows = [(*v[1:], v[0]) for v, n in values for _ in range(n)]
    return tuple(r[-1] for r in sorted(rows, key=lambda r: sort_key(r, order)))


def test_ordered_values_follow_the_reference_order() -> None:
    rng = random.Random(7)
    directions = [(False, None), (True, None), (False, True), (False, False), (True, True)]
    for (d1, n1), (d2, n2) in itertools.product(directions, repeat=2):
        # ordered by an array (with NULLs: not ordered by Python's comparisons); array_agg
        # of arrays themselves adds a dimension, so the value aggregated is a number
        for value, first in ((c(0), c(1)), (c(0), c(3))):
            agg = P.Aggregate(
                "array_agg", value, order=(P.SortExpr(first, d1, n1), P.SortExpr(c(2), d2, n2))
            )
            rows = [
                (
                    rng.choice([None, 1, 2, 3]),
                    rng.choice([None, "a", "b"]),
                    rng.choice([None, 5, 6]),
                    rng.choice([None, (1, None), (1, 2), (None,), ()]),
                )
                for _ in range(30)
            ]
            counted: dict = {}
            for row in rows:
                v = agg.value(row)
                counted[v] = counted.get(v, 0) + rng.randint(1, 2)
            values = list(counted.items())
            assert aggregate_values(agg, values, ARRAYS[INT4]) == _expected(agg, values)
