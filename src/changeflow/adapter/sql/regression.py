"""corr, covar_pop, covar_samp and regr_* planned as a view maintains them: from the count of
the pairs with neither value NULL and the numeric sums of x, y, x², y² and xy over them (sums
a delete retracts), finished by the ``*_of`` forms of ``compute.functions.regression``."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.sql import statistics
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.functions import Func
from changeflow.compute.types import FLOAT8, NULLTYPE, NUMERIC
from changeflow.errors import PlanError


def call(func: str, nodes: list[exp.Expression], values: list[X.Expr]) -> P.Aggregate:
    """``func(y, x)``, both as double precision: a quoted literal read as one, another
    type than a number's 42883."""
    typed = [
        statistics.preferred(n, v) if isinstance(n, exp.Literal) and n.is_string else v
        for n, v in zip(nodes, values, strict=True)
    ]
    if not all(v.type.numeric or v.type is NULLTYPE for v in typed):
        shown = ", ".join(str(v.type) for v in values)
        raise PlanError(f"function {func}({shown}) does not exist", sqlstate="42883")
    y, x = (X.Cast(v, FLOAT8) for v in typed)
    return P.Aggregate(func, y, x=x)


def filtered(agg: P.Aggregate, cond: X.Expr) -> P.Aggregate:
    """``agg`` with FILTER (WHERE ``cond``): both of a pair NULL where ``cond`` is not true."""
    y, x = (X.Case(((cond, v),), X.Lit(None)) for v in (agg.arg, agg.x) if v is not None)
    return P.Aggregate(agg.func, y, x=x)


def parts(agg: P.Aggregate) -> list[P.Aggregate]:
    """The count of the pairs and the sums of x, y, x², y² and xy over them, as numerics."""
    y, x = agg.arg, agg.x
    assert y is not None and x is not None
    both = X.And((X.IsNull(y, negated=True), X.IsNull(x, negated=True)))
    my, mx = (X.Case(((both, X.Cast(v, NUMERIC)),), X.Lit(None)) for v in (y, x))
    return [
        P.Aggregate("count", mx),
        *(P.Aggregate("sum", v) for v in (mx, my)),
        *(P.Aggregate("sum", X.Arith("*", a, b)) for a, b in ((mx, mx), (my, my), (mx, my))),
    ]


def combine(agg: P.Aggregate, columns: list[X.Expr]) -> X.Expr:
    """``agg``'s value from its parts' ``columns``."""
    if agg.func == "regr_count":
        return columns[0]
    return Func(f"{agg.func}_of", tuple(columns))
