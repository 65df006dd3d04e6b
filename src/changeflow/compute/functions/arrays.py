"""Functions of arrays (PostgreSQL's): each defined once, on Python values and on Spark."""

from __future__ import annotations

from typing import TYPE_CHECKING

from changeflow.compute.functions.base import F, Function, Rule, _args
from changeflow.compute.types import INT4, NULLTYPE, SqlType
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


def _array_rule(*rest: str) -> Rule:
    """A rule: an array, then ``rest`` integers; the result is an integer."""

    def rule(args: tuple[SqlType, ...]) -> SqlType:
        if len(args) != 1 + len(rest) or args[0].element is None and args[0] is not NULLTYPE:
            raise PlanError("no match", sqlstate="42883")
        if any(not (a.integer or a is NULLTYPE) for a in args[1:]):
            raise PlanError("no match", sqlstate="42883")
        return INT4

    return rule


def _cardinality(values: tuple) -> int:
    return len(values)


def _array_length(values: tuple, dimension: int) -> int | None:
    return len(values) if dimension == 1 and values else None


def _array_lower(values: tuple, dimension: int) -> int | None:
    return 1 if dimension == 1 and values else None


def _spark_size(cc: ExprCompiler, e: Func) -> Column:
    (a,) = _args(cc, e)
    return F.size(a)


def _spark_length(cc: ExprCompiler, e: Func) -> Column:
    a, dimension = _args(cc, e)
    return F.when((dimension == 1) & (F.size(a) > 0), F.size(a))


def _spark_lower(cc: ExprCompiler, e: Func) -> Column:
    a, dimension = _args(cc, e)
    return F.when((dimension == 1) & (F.size(a) > 0), F.lit(1))


FUNCTIONS = [
    Function("cardinality", _array_rule(), _cardinality, spark=_spark_size),
    Function("array_length", _array_rule("int"), _array_length, spark=_spark_length),
    Function("array_upper", _array_rule("int"), _array_length, spark=_spark_length),
    Function("array_lower", _array_rule("int"), _array_lower, spark=_spark_lower),
]
