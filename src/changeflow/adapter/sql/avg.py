"""avg of an exact number planned as PostgreSQL computes it: its sum divided by its count as
numerics, so the quotient has PostgreSQL's scale (``compute.scalars.numeric_div``) whether a query
runs once or a view maintains it. avg of double precision or real stays an aggregate of its
own. sum and avg of intervals are the sums of their months, days and microseconds (each kept
apart, as PostgreSQL adds intervals), the avg that sum divided by the count; with DISTINCT, the
same over the distinct values array_agg keeps (as text that keeps their fields)."""

from __future__ import annotations

from changeflow.adapter.sql import regression, statistics
from changeflow.adapter.sql.enum_order import label_at, ranked
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.functions import Func
from changeflow.compute.functions.regression import REGRESSIONS
from changeflow.compute.types import INTERVAL, NUMERIC

_FIELDS = ("interval_months", "interval_days", "interval_micros")


def parts(agg: P.Aggregate) -> list[P.Aggregate]:
    """The aggregates ``agg`` is computed from: sum and count for an exact avg, the sums of
    an interval's fields (and the count for avg), a variance's sums, else itself."""
    if agg.func in statistics.COMBINED:
        return statistics.parts(agg)
    if agg.func in REGRESSIONS:
        return regression.parts(agg)
    if (by_position := ranked(agg)) is not None:
        return [by_position]
    if agg.func in ("sum", "avg") and agg.arg is not None and agg.arg.type == INTERVAL:
        if agg.distinct:  # the distinct values, kept by array_agg (by interval equality)
            return [P.Aggregate("array_agg", Func("interval_key", (agg.arg,)), True)]
        sums = [P.Aggregate("sum", Func(f, (agg.arg,))) for f in _FIELDS]
        return sums + ([P.Aggregate("count", agg.arg)] if agg.func == "avg" else [])
    if agg.func != "avg" or agg.arg is None or agg.arg.type.floating:
        return [agg]
    return [P.Aggregate("sum", agg.arg, agg.distinct), P.Aggregate("count", agg.arg, agg.distinct)]


def combine(agg: P.Aggregate, reduced: P.Plan, first: int, slots: list[int]) -> X.Expr:
    """The value of ``agg`` from its parts, columns ``first + slot`` of ``reduced``."""
    columns = [P.col(reduced.schema, first + j) for j in slots]
    if agg.func in statistics.COMBINED:
        return statistics.combine(agg, columns)
    if agg.func in REGRESSIONS:
        return regression.combine(agg, columns)
    if ranked(agg) is not None:
        return label_at(agg.arg.type, columns[0])  # type: ignore[union-attr]
    if (
        agg.func in ("sum", "avg")
        and agg.distinct
        and agg.arg is not None
        and agg.arg.type == INTERVAL
    ):
        return Func(f"interval_{agg.func}_of", (columns[0],))
    if len(columns) == 1:
        return columns[0]
    if len(columns) >= 3:  # an interval's summed fields (NULL over no values), and a count
        total = Func("interval_from_parts", tuple(columns[:3]))
        return total if len(columns) == 3 else X.Arith("/", total, columns[3])
    total, count = columns  # no values: the sum is NULL, and so is the quotient
    return X.Arith("/", X.Cast(total, NUMERIC), X.Cast(count, NUMERIC))
