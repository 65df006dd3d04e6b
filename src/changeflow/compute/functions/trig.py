"""PostgreSQL's trigonometric functions (of double precision, in radians),
``gcd``/``lcm`` of integers and numerics, and ``num_nulls``/``num_nonnulls``."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any

from changeflow.compute.functions.base import F, Function, _double, _sig, fail, in_process
from changeflow.compute.functions.overloads import Overloads, same
from changeflow.compute.types import FLOAT8, INT4, INT8, NUMERIC, SqlType
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


def _checked(fn: Callable[[float], float], domain: str) -> Callable[[Any], float]:
    """``fn`` of a double; outside its ``domain`` (``unit``: [-1, 1], ``finite``, ``at least
    one``, or ``any``) 22003, as PostgreSQL says; an overflow is an infinity."""

    def apply(x: Any) -> float:
        x = float(x)
        if math.isnan(x):
            return math.nan
        if {"unit": abs(x) > 1, "finite": math.isinf(x), "at least one": x < 1}.get(domain):
            raise EvalError("input is out of range", sqlstate="22003")
        try:
            return fn(x)
        except OverflowError:
            return math.copysign(math.inf, x) if fn is math.sinh else math.inf

    return apply


def _atanh(x: float) -> float:
    return math.copysign(math.inf, x) if abs(x) == 1 else math.atanh(x)


def _cot(x: float) -> float:
    t = math.tan(x)
    return math.inf if t == 0 else 1 / t


def _spark(name: str, domain: str) -> Callable[[ExprCompiler, Func], Column]:
    def build(cc: ExprCompiler, e: Func) -> Column:
        x = _double(cc, e)
        out = getattr(F, name)(x)
        if domain == "unit":
            return F.when(F.abs(x) > 1, fail("input is out of range", "22003")).otherwise(out)
        return out

    return build


# name: (on a double, its domain, pyspark's function or None)
_UNARY: dict[str, tuple[Callable[[float], float], str, str | None]] = {
    "sin": (math.sin, "finite", "sin"),
    "cos": (math.cos, "finite", "cos"),
    "tan": (math.tan, "finite", "tan"),
    "cot": (_cot, "finite", "cot"),
    "asin": (math.asin, "unit", "asin"),
    "acos": (math.acos, "unit", "acos"),
    "sinh": (math.sinh, "any", "sinh"),
    "cosh": (math.cosh, "any", "cosh"),
    "tanh": (math.tanh, "any", "tanh"),
    "asinh": (math.asinh, "any", "asinh"),
    "acosh": (math.acosh, "at least one", None),
    "atanh": (_atanh, "unit", None),
}
_ON_ROWS = in_process("this trigonometric function is computed in the process")


def _atan(x: Any) -> float:
    return math.atan(float(x))


def _exact(*values: Decimal) -> int:
    """A precision that holds every digit of the product of ``values``, exactly."""
    return sum(max(v.adjusted(), 0) - min(v.as_tuple().exponent, 0) + 2 for v in values) + 2


def _gcd(a: Any, b: Any) -> Any:
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        a, b = Decimal(a), Decimal(b)
        if not (a.is_finite() and b.is_finite()):
            return Decimal("NaN")
        with localcontext() as ctx:
            ctx.prec = _exact(a, b)
            while b:
                a, b = b, a % b
            return abs(a)
    return math.gcd(a, b)


def _lcm(a: Any, b: Any) -> Any:
    if not (isinstance(a, Decimal) or isinstance(b, Decimal)):
        return abs(a * b) // _gcd(a, b) if a and b else type(a)(0)
    a, b = Decimal(a), Decimal(b)
    if not (a.is_finite() and b.is_finite()):
        return Decimal("NaN")
    scale = Decimal(1).scaleb(min(a.as_tuple().exponent, b.as_tuple().exponent, 0))
    if not a or not b:
        return Decimal(0).quantize(scale)
    with localcontext() as ctx:  # exact, shown with the larger scale of the two
        ctx.prec = _exact(a, b)
        return (abs(a * b) / _gcd(a, b)).quantize(scale)


def _count_rule(args: tuple[SqlType, ...]) -> SqlType:
    if not args:
        raise PlanError("no match", sqlstate="42883")
    return INT4


def _nulls(*pairs: tuple[Any, SqlType]) -> int:
    return sum(v is None for v, _ in pairs)


def _nonnulls(*pairs: tuple[Any, SqlType]) -> int:
    return sum(v is not None for v, _ in pairs)


FUNCTIONS = [
    *(
        Function(
            name,
            _sig(("num",), result=FLOAT8),
            _checked(fn, domain),
            spark=_spark(spark, domain) if spark else _ON_ROWS,
        )
        for name, (fn, domain, spark) in _UNARY.items()
    ),
    Function("atan", _sig(("num",), result=FLOAT8), _atan, spark=_ON_ROWS),
    Function(
        "atan2",
        _sig(("num", "num"), result=FLOAT8),
        lambda y, x: math.atan2(float(y), float(x)),
        spark=lambda cc, e: F.atan2(_double(cc, e, 0), _double(cc, e, 1)),
    ),
    Function(
        "gcd",
        Overloads("gcd", same(INT4, INT8, NUMERIC, arity=2)),
        _gcd,
        spark=in_process("gcd is computed in the process"),
    ),
    Function(
        "lcm",
        Overloads("lcm", same(INT4, INT8, NUMERIC, arity=2)),
        _lcm,
        spark=in_process("lcm is computed in the process"),
    ),
    Function(
        "num_nulls",
        _count_rule,
        _nulls,
        strict=False,
        spark=in_process("num_nulls is computed in the process"),
    ),
    Function(
        "num_nonnulls",
        _count_rule,
        _nonnulls,
        strict=False,
        spark=in_process("num_nonnulls is computed in the process"),
    ),
]
