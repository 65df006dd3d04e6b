"""avg of an exact number planned as PostgreSQL computes it: its sum divided by its count as
numerics, so the quotient has PostgreSQL's scale (``compute.scalars.numeric_div``) whether a query
runs once or a view maintains it. avg of double precision stays an aggregate of its own."""

from __future__ import annotations

from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import FLOAT8, NUMERIC


def parts(agg: P.Aggregate) -> list[P.Aggregate]:
    """The aggregates ``agg`` is computed from: sum and count for an exact avg, else itself."""
    if agg.func != "avg" or agg.arg is None or agg.arg.type == FLOAT8:
        return [agg]
    return [P.Aggregate("sum", agg.arg, agg.distinct), P.Aggregate("count", agg.arg, agg.distinct)]


def combine(reduced: P.Plan, first: int, slots: list[int]) -> X.Expr:
    """The aggregate's value from its parts, columns ``first + slot`` of ``reduced``."""
    columns = [P.col(reduced.schema, first + j) for j in slots]
    if len(columns) == 1:
        return columns[0]
    total, count = columns  # no values: the sum is NULL, and so is the quotient
    return X.Arith("/", X.Cast(total, NUMERIC), X.Cast(count, NUMERIC))
