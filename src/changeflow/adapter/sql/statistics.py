"""stddev, stddev_samp, stddev_pop, variance, var_samp and var_pop planned as a view maintains
them: from the count, the sum and the sum of squares of the group's values (exact numerics for
integers and numerics, doubles for doubles), combined by the ``*_of`` functions of
``compute.functions.statistics``; with DISTINCT, from the distinct values' sums."""

from __future__ import annotations

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.functions import Func
from changeflow.compute.types import FLOAT8, NULLTYPE, NUMERIC
from changeflow.errors import PlanError

REGRESSION_SUFFIXES = ("count", "sxx", "syy", "sxy", "avgx", "avgy", "r2", "slope", "intercept")
STATISTICS: dict[type, str] = {
    exp.Stddev: "stddev",
    exp.StddevSamp: "stddev_samp",
    exp.StddevPop: "stddev_pop",
    exp.Variance: "variance",  # var_samp too
    exp.VariancePop: "var_pop",
    exp.Corr: "corr",  # and the two-argument ones of regression.py
    exp.CovarPop: "covar_pop",
    exp.CovarSamp: "covar_samp",
    **{getattr(exp, f"Regr{s.capitalize()}"): f"regr_{s}" for s in REGRESSION_SUFFIXES},
}
COMBINED = {
    "stddev": "stddev_samp_of",
    "stddev_samp": "stddev_samp_of",
    "stddev_pop": "stddev_pop_of",
    "variance": "var_samp_of",
    "var_pop": "var_pop_of",
}


def preferred(arg: exp.Expression, value: X.Expr) -> X.Expr:
    """An unknown-typed argument (a NULL or a quoted literal) as a double precision, the
    preferred type of the numeric forms PostgreSQL has."""
    from changeflow.adapter.sql.scalar import coerce_text

    if isinstance(arg, exp.Literal):
        return coerce_text(str(arg.this), FLOAT8)
    return X.Cast(value, FLOAT8)


def parts(agg: P.Aggregate) -> list[P.Aggregate]:
    """The count, sum and sum of squares ``agg`` is computed from (of its argument as a
    numeric, a double staying one and a real becoming one); 42883 for an argument of another
    type."""
    assert agg.arg is not None
    kind = agg.arg.type
    if kind is NULLTYPE or not kind.numeric:
        raise PlanError(f"function {agg.func}({kind}) does not exist", sqlstate="42883")
    value = (
        agg.arg
        if kind in (NUMERIC, FLOAT8)
        else X.Cast(agg.arg, FLOAT8 if kind.floating else NUMERIC)
    )
    if agg.distinct:  # the distinct values (two of one square are not one)
        return [P.Aggregate("array_agg", value, True)]
    square = X.Arith("*", value, value)
    return [P.Aggregate("count", value), P.Aggregate("sum", value), P.Aggregate("sum", square)]


def window_parts(function: W.WindowFunc) -> list[W.WindowFunc]:
    """A window call as the window functions it is computed from: the count, sum and sum of
    squares over its frame for a variance, else itself."""
    if function.func not in COMBINED:
        return [function]
    if len(function.args) != 1:
        shown = ", ".join(str(a.type) for a in function.args)
        raise PlanError(f"function {function.func}({shown}) does not exist", sqlstate="42883")
    sums = parts(P.Aggregate(function.func, function.args[0]))
    return [W.WindowFunc(a.func, (a.arg,), function.frame) for a in sums]  # type: ignore[arg-type]


def window_value(name: str, columns: list[X.Expr]) -> X.Expr:
    """A window call's value from its window functions' ``columns``."""
    return Func(COMBINED[name], tuple(columns)) if name in COMBINED else columns[0]


def combine(agg: P.Aggregate, columns: list[X.Expr]) -> X.Expr:
    """``agg``'s value from its parts' ``columns`` (with DISTINCT, the distinct values)."""
    return Func(COMBINED[agg.func], tuple(columns))
