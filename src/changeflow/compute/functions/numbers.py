"""Numeric functions (PostgreSQL's): each defined once, on Python values and on Spark."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from changeflow.compute import expr as X
from changeflow.compute.array_shape import nested
from changeflow.compute.expr import common_type
from changeflow.compute.functions.base import (
    Builder,
    F,
    Function,
    Rule,
    _double,
    _sig,
    _simple,
    fail,
    finite,
    in_process,
    spark_type,
    unsupported,
)
from changeflow.compute.functions.numeric_math import (
    exp_numeric,
    float_or_numeric,
    ln_numeric,
    ln_weight,
    numeric_form,
    power_numeric,
    sqrt_numeric,
)
from changeflow.compute.functions.overloads import MACADDR, Overloads, same
from changeflow.compute.scalars import nan_last
from changeflow.compute.types import (
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
    array_of,
)
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


def _round(x: Any, places: int | None = None) -> Any:
    """PostgreSQL's round: of a double (an integer cast to one), half to even (rint); of a
    numeric (an integer cast to one where places are given), half away from zero."""
    if places is None and not isinstance(x, Decimal):
        return float(round(float(x)))
    return _to_scale(Decimal(x), places or 0, ROUND_HALF_UP)


# The most decimals a numeric shows (PostgreSQL's NUMERIC_DSCALE_MAX): round(x, n) takes
# no more.
MAX_SCALE = 16383


def _to_scale(x: Decimal, places: int, rounding: str) -> Decimal:
    """``x`` rounded to ``places`` decimals (tens, hundreds… if negative, shown without
    decimals, as PostgreSQL shows ``round(25, -1)``: 30); zero where ``places`` reaches past
    its first digit, at most :data:`MAX_SCALE` decimals."""
    if not x.is_finite():
        return x
    whole = max(x.adjusted(), 0) + 1
    if -places > whole:
        return Decimal(0)
    places = min(places, MAX_SCALE)
    with localcontext() as ctx:
        ctx.prec = whole + max(places, 0) + 2
        out = x.quantize(Decimal(1).scaleb(-places), rounding=rounding)
        return _unsigned_zero(out.quantize(Decimal(1)) if places < 0 else out)


def _unsigned_zero(x: Decimal) -> Decimal:
    """``x``, a zero without its sign (PostgreSQL's numeric has no negative zero)."""
    return abs(x) if x.is_zero() else x


def _trunc(x: Any, places: int | None = None) -> Any:
    if places is None and not isinstance(x, Decimal):
        return float(math.trunc(float(x)))
    return _to_scale(Decimal(x), places or 0, ROUND_DOWN)


def _floor(x: Any) -> Any:
    if isinstance(x, Decimal):
        return _to_scale(x, 0, ROUND_FLOOR)
    return float(math.floor(x))


def _ceil(x: Any) -> Any:
    if isinstance(x, Decimal):
        return _to_scale(x, 0, ROUND_CEILING)
    return float(math.ceil(x))


def _scale(x: Decimal | int) -> int | None:
    """``scale(numeric)``: the decimals ``x`` shows (NULL for NaN and infinities)."""
    if isinstance(x, int):
        return 0
    exponent = x.as_tuple().exponent
    return max(-exponent, 0) if isinstance(exponent, int) else None


def _min_scale(x: Decimal | int) -> int | None:
    """``min_scale(numeric)``: the fewest decimals that show ``x`` exactly."""
    if isinstance(x, int):
        return 0
    return None if not x.is_finite() else 0 if x.is_zero() else _scale(x.normalize())


def _trim_scale(x: Decimal | int) -> Decimal:
    """``trim_scale(numeric)``: ``x`` without trailing zero decimals."""
    if isinstance(x, int):
        return Decimal(x)
    places = _min_scale(x)
    return x if places is None else _unsigned_zero(x.quantize(Decimal(1).scaleb(-places)))


def _of_numeric(result: SqlType) -> Rule:
    """The rule of a function of one numeric (an integer is cast to numeric, a float is not)."""

    def rule(args: tuple[SqlType, ...]) -> SqlType:
        if len(args) == 1 and (args[0] in (NUMERIC, NULLTYPE) or args[0].integer):
            return result
        raise PlanError("no match", sqlstate="42883")

    return rule


# PostgreSQL's signatures (of float4 only abs's: real is cast to double precision for the rest)
_ROUND = ((FLOAT8,), FLOAT8), ((NUMERIC,), NUMERIC), ((NUMERIC, INT4), NUMERIC)
_OF_FLOAT_OR_NUMERIC = same(FLOAT8, NUMERIC)


# A value's own scale: Spark holds numerics at one scale per column.
_OWN_SCALE = in_process("a numeric value's own scale is known in the process only")


def _sqrt(x: float) -> float:
    if x < 0:
        raise EvalError("cannot take square root of a negative number", sqlstate="2201F")
    return math.sqrt(x)


def _ln(x: float) -> float:
    if x <= 0:
        what = "zero" if x == 0 else "a negative number"
        raise EvalError(f"cannot take logarithm of {what}", sqlstate="2201E")
    return math.log(x)


def _log(*args: Any) -> float | Decimal:
    """``log(x)`` (base 10) or ``log(b, x)``: numeric if an argument is, else double precision;
    2201E for zero or a negative, 22012 for base 1."""
    for v in args:
        if v <= 0:
            what = "zero" if v == 0 else "a negative number"
            raise EvalError(f"cannot take logarithm of {what}", sqlstate="2201E")
    base, x = (10, args[0]) if len(args) == 1 else args
    if base == 1:
        raise EvalError("division by zero", sqlstate="22012")
    if len(args) == 2 or isinstance(x, Decimal):
        return _log_numeric(Decimal(base), Decimal(x))
    return math.log10(float(x))


def _log_numeric(base: Decimal, x: Decimal) -> Decimal:
    """PostgreSQL's numeric ``log(b, x)``: at least 16 significant digits, and no fewer
    decimals than either argument shows (its ``log_var``), rounded half away from zero."""
    places = 16 - (ln_weight(x) - ln_weight(base))
    places = min(max(places, _places(base), _places(x), 0), 1000)
    with localcontext() as ctx:
        ctx.prec = places + 40
        value = x.ln() / base.ln()
        return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _places(x: Decimal) -> int:
    return max(0, -int(x.as_tuple().exponent))


def _log_type(args: tuple[SqlType, ...]) -> SqlType:
    """As PostgreSQL's: ``log(numeric)`` and ``log(numeric, numeric)`` (integers cast to
    numeric there) are numeric, ``log(double precision)`` is double precision."""
    _LOG_SHAPES(args)
    if len(args) == 2 and any(not (a.integer or a in (NUMERIC, NULLTYPE)) for a in args):
        raise PlanError("no match", sqlstate="42883")
    return NUMERIC if NUMERIC in args or len(args) == 2 else FLOAT8


_LOG_SHAPES = _sig(("num",), ("num", "num"), result=FLOAT8)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        raise EvalError("value out of range: overflow", sqlstate="22003") from None


def _power(x: float, y: float) -> float:
    """PostgreSQL's ``power`` of doubles: NaN to the 0 and 1 to NaN are 1; an infinite
    operand answers as C's pow does (``power(-1, inf)`` is 1); an infinite or zero result of
    finite operands is out of range."""
    x, y = float(x), float(y)
    if math.isnan(x) or math.isnan(y):
        return 1.0 if y == 0 or x == 1 else math.nan
    if x == 0 and y < 0:
        raise EvalError("zero raised to a negative power is undefined", sqlstate="2201F")
    if x < 0 and math.isfinite(y) and not y.is_integer():
        raise EvalError(
            "a negative number raised to a non-integer power yields a complex result",
            sqlstate="2201F",
        )
    finite = math.isfinite(x) and math.isfinite(y)
    try:
        result = math.pow(x, y)
    except OverflowError:
        result = math.inf
    if finite and math.isinf(result):
        raise EvalError("value out of range: overflow", sqlstate="22003")
    if finite and result == 0 and x != 0:
        raise EvalError("value out of range: underflow", sqlstate="22003")
    return result


def _sign(x: Any) -> Any:
    """-1, 0 or 1: a numeric for a numeric (NaN for NaN), else a double (PostgreSQL has no
    integer sign)."""
    if isinstance(x, Decimal) and x.is_nan():
        return x
    return (Decimal if isinstance(x, Decimal) else float)((x > 0) - (x < 0))


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def extreme(*args: Any) -> Any:
        present = [v for v, _ in args if v is not None]
        return pick(present, key=nan_last) if present else None

    return extreme


def _extreme_rule(args: tuple[SqlType, ...]) -> SqlType:
    from changeflow.compute.expr import Lit

    return common_type(tuple(Lit(None, a) for a in args), "GREATEST/LEAST")


_MAX_OID = 2**32 - 1


def _oid_of(x: int) -> int:
    """A bigint as an oid (PostgreSQL's cast): 22003 outside 0 to 4294967295."""
    if not 0 <= x <= _MAX_OID:
        raise EvalError("OID out of range", sqlstate="22003")
    return x


def _spark_oid_of(cc: ExprCompiler, e: Func) -> Column:
    x = cc.compile(e.args[0])
    return F.when((x < 0) | (x > _MAX_OID), fail("OID out of range", "22003")).otherwise(x)


# -- on Spark --------------------------------------------------------------------------------


_MAX_DOUBLE_EXP = 709.782712893384


def _spark_same(cc: ExprCompiler, e: Func, c: Column) -> Column:
    """``c`` cast back to the argument's own type (numeric keeps its decimal)."""
    return c if e.type == NUMERIC else c.cast(spark_type(e.type))


def _spark_places(e: Func) -> int:
    if len(e.args) == 1:
        return 0
    arg = e.args[1]
    if not isinstance(arg, X.Lit) or arg.value is None:
        raise unsupported(e, "the number of places must be a constant")
    return int(arg.value)


def _spark_arg(cc: ExprCompiler, e: Func) -> Column:
    """The first argument, cast to the type of the signature chosen (an integer's double
    precision or numeric)."""
    x = cc.compile(e.args[0])
    return x if e.args[0].type == e.type else x.cast(spark_type(e.type))


def _spark_round(cc: ExprCompiler, e: Func) -> Column:
    x = _spark_arg(cc, e)
    if e.type == FLOAT8:
        return F.rint(x)
    return F.round(x, _spark_places(e))


def _spark_float_trunc(x: Column) -> Column:
    return x - x % F.lit(1.0)


def _spark_trunc(cc: ExprCompiler, e: Func) -> Column:
    x = _spark_arg(cc, e)
    if e.type == FLOAT8:
        return _spark_float_trunc(x)
    places = F.lit(_spark_places(e))
    return F.when(x >= 0, F.floor(x, places)).otherwise(F.ceil(x, places))


def _spark_floor(up: bool) -> Builder:
    def build(cc: ExprCompiler, e: Func) -> Column:
        x = _spark_arg(cc, e)
        if e.type == NUMERIC:
            return F.ceil(x, F.lit(0)) if up else F.floor(x, F.lit(0))
        t = _spark_float_trunc(x)
        return F.when(t < x, t + 1.0).otherwise(t) if up else F.when(t > x, t - 1.0).otherwise(t)

    return build


def _spark_sign(cc: ExprCompiler, e: Func) -> Column:
    s = F.signum(cc.compile(e.args[0]))
    return s.cast("decimal(1,0)") if e.type == NUMERIC else s.cast(spark_type(e.type))


def _spark_sqrt(cc: ExprCompiler, e: Func) -> Column:
    x = _double(cc, e)
    bad = fail("cannot take square root of a negative number", "2201F")
    return _as_type(e, F.when(x < 0, bad).otherwise(F.sqrt(x)))


def _spark_ln(cc: ExprCompiler, e: Func) -> Column:
    x = _double(cc, e)
    return _as_type(
        e,
        F.when(x == 0, fail("cannot take logarithm of zero", "2201E"))
        .when(x < 0, fail("cannot take logarithm of a negative number", "2201E"))
        .otherwise(F.log(x)),
    )


def _spark_log(cc: ExprCompiler, e: Func) -> Column:
    args = [_double(cc, e, i) for i in range(len(e.args))]
    out = F.log10(args[0]) if len(args) == 1 else F.log(args[0], args[1])
    for x in args:
        out = (
            F.when(x == 0, fail("cannot take logarithm of zero", "2201E"))
            .when(x < 0, fail("cannot take logarithm of a negative number", "2201E"))
            .otherwise(out)
        )
    if len(args) == 2:
        out = F.when(args[0] == 1, fail("division by zero", "22012")).otherwise(out)
    return _as_type(e, out)


def _as_type(e: Func, out: Column) -> Column:
    """A double's result as ``e``'s type: a numeric through double precision, at the scale
    Spark holds numerics in."""
    if e.type == NUMERIC:
        return F.bround(out, NUMERIC.arrow.scale).cast(spark_type(NUMERIC))
    return out


def _spark_exp(cc: ExprCompiler, e: Func) -> Column:
    x = _double(cc, e)
    out = F.when(x > _MAX_DOUBLE_EXP, fail("value out of range: overflow", "22003"))
    return _as_type(e, out.otherwise(F.exp(x)))


def _spark_power(cc: ExprCompiler, e: Func) -> Column:
    x, y = _double(cc, e, 0), _double(cc, e, 1)
    inf = F.lit(math.inf)
    finite_y = ~F.isnan(y) & (F.abs(y) != inf)
    finite_xy = finite_y & ~F.isnan(x) & (F.abs(x) != inf)
    to_infinity = (  # C's pow of an infinite exponent (Java's answers NaN where |x| is 1)
        F.when(F.abs(x) == 1, F.lit(1.0)).when((F.abs(x) < 1) == (y > 0), F.lit(0.0)).otherwise(inf)
    )
    out = (
        F.when(F.isnan(x) | F.isnan(y), F.when((y == 0) | (x == 1), 1.0).otherwise(math.nan))
        .when((x == 0) & (y < 0), fail("zero raised to a negative power is undefined", "2201F"))
        .when(
            (x < 0) & finite_y & (y % F.lit(1.0) != 0),
            fail(
                "a negative number raised to a non-integer power yields a complex result", "2201F"
            ),
        )
        .when(~finite_y, to_infinity)
        .when(finite_xy, finite(F.pow(x, y)))
        .otherwise(F.pow(x, y))
    )
    return _as_type(e, out)


def _spark_extreme(fn: str) -> Builder:
    def build(cc: ExprCompiler, e: Func) -> Column:
        args = [cc._branch(a, e.type) for a in e.args]
        return args[0] if len(args) == 1 else getattr(F, fn)(*args)

    return build


MAX_FACTORIAL = 32177  # PostgreSQL's numeric holds n! up to here
_NUMBERS = (INT2, INT4, INT8, NUMERIC, FLOAT8)
_BUCKETS = (  # the array form: any number among any numbers, or a type among its own
    (NUMERIC, NUMERIC, NUMERIC, INT4),
    (FLOAT8, FLOAT8, FLOAT8, INT4),
    *((t, array_of(e)) for t in _NUMBERS for e in _NUMBERS),
    *((t, array_of(t)) for t in (TEXT, DATE, TIMESTAMP, TIMESTAMPTZ)),
)


def _factorial(n: int) -> Decimal:
    if n < 0:
        raise EvalError("factorial of a negative number is undefined", sqlstate="22003")
    if n > MAX_FACTORIAL:
        raise EvalError("value overflows numeric format", sqlstate="22003")
    return Decimal(math.factorial(n))


def _width_bucket(operand: Any, low: Any, high: Any = None, count: int = 0) -> int:
    """The bucket of ``operand`` among ``count`` equal ones from ``low`` to ``high`` (0 before
    them, ``count + 1`` after; reversed where ``low > high``), as PostgreSQL's; of an array
    of thresholds (``low``, sorted), how many of them ``operand`` is at or after."""
    if isinstance(low, tuple):
        if nested(low):
            raise EvalError("thresholds must be one-dimensional array", sqlstate="2202E")
        if any(v is None for v in low):
            raise EvalError("thresholds array must not contain NULLs", sqlstate="22004")
        return bisect.bisect_right(low, operand)
    if count <= 0:
        raise EvalError("count must be greater than zero", sqlstate="2201G")
    if any(v != v for v in (operand, low, high)):  # NaN
        raise EvalError("operand, lower bound, and upper bound cannot be NaN", sqlstate="2201G")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise EvalError("lower and upper bounds must be finite", sqlstate="2201G")
    if low == high:
        raise EvalError("lower bound cannot equal upper bound", sqlstate="2201G")
    rising = low < high
    below = operand < low if rising else operand > low
    above = operand >= high if rising else operand <= high
    if below:
        return 0
    if above:
        if count == 2**31 - 1:
            raise EvalError("integer out of range", sqlstate="22003")
        return count + 1
    share = (operand - low) / (high - low)  # in [0, 1)
    return min(math.floor(share * count), count - 1) + 1


FUNCTIONS = [
    Function(
        "factorial",
        Overloads("factorial", (((INT8,), NUMERIC),)),
        _factorial,
        spark=in_process("factorial is computed in the process"),
    ),
    Function(
        "width_bucket",
        Overloads("width_bucket", tuple((args, INT4) for args in _BUCKETS)),
        _width_bucket,
        spark=in_process("width_bucket is computed in the process"),
    ),
    Function(
        "abs",
        Overloads("abs", same(INT2, INT4, INT8, NUMERIC, FLOAT4, FLOAT8)),
        abs,
        spark=lambda cc, e: _spark_same(cc, e, F.abs(cc.compile(e.args[0]))),
        arrow=pc.abs_checked,
    ),
    Function("round", Overloads("round", _ROUND), _round, spark=_spark_round),
    # a cast to numeric(p,s): rounded to s (its type modifier is the cast's, not round's)
    Function(
        "numeric_n",
        _sig((NUMERIC, "int", "int"), result=NUMERIC),
        lambda x, places, _precision: _round(x, places),
        spark=_spark_round,
    ),
    Function(
        "trunc", Overloads("trunc", (*_ROUND, ((MACADDR,), MACADDR))), _trunc, spark=_spark_trunc
    ),
    *(
        Function(name, Overloads(name, _OF_FLOAT_OR_NUMERIC), impl, spark=_spark_floor(up))
        for name, impl, up in (
            ("floor", _floor, False),
            ("ceil", _ceil, True),
            ("ceiling", _ceil, True),
        )
    ),
    Function("sign", Overloads("sign", _OF_FLOAT_OR_NUMERIC), _sign, spark=_spark_sign),
    Function("pi", _sig((), result=FLOAT8), lambda: math.pi, spark=_simple("pi")),
    Function(
        "sqrt", float_or_numeric("sqrt", 1), numeric_form(sqrt_numeric, _sqrt), spark=_spark_sqrt
    ),
    Function("ln", float_or_numeric("ln", 1), numeric_form(ln_numeric, _ln), spark=_spark_ln),
    Function("exp", float_or_numeric("exp", 1), numeric_form(exp_numeric, _exp), spark=_spark_exp),
    Function("log", _log_type, _log, spark=_spark_log),
    Function(
        "cbrt",
        _sig(("num",), result=FLOAT8),
        lambda x: math.cbrt(float(x)),
        spark=lambda cc, e: F.cbrt(_double(cc, e)),
    ),
    Function(
        "degrees",
        _sig(("num",), result=FLOAT8),
        lambda x: math.degrees(float(x)),
        spark=lambda cc, e: F.degrees(_double(cc, e)),
    ),
    Function(
        "radians",
        _sig(("num",), result=FLOAT8),
        lambda x: math.radians(float(x)),
        spark=lambda cc, e: F.radians(_double(cc, e)),
    ),
    Function(
        "power",
        float_or_numeric("power", 2),
        numeric_form(power_numeric, _power),
        spark=_spark_power,
    ),
    Function(
        "pow",
        float_or_numeric("pow", 2),
        numeric_form(power_numeric, _power),
        spark=_spark_power,
    ),
    Function(
        "greatest", _extreme_rule, _extreme(max), strict=False, spark=_spark_extreme("greatest")
    ),
    Function("least", _extreme_rule, _extreme(min), strict=False, spark=_spark_extreme("least")),
    Function("oid_of_bigint", _sig((INT8,), result=INT8), _oid_of, spark=_spark_oid_of),
    Function("scale", _of_numeric(INT4), _scale, spark=_OWN_SCALE),
    Function("min_scale", _of_numeric(INT4), _min_scale, spark=_OWN_SCALE),
    Function("trim_scale", _of_numeric(NUMERIC), _trim_scale, spark=_OWN_SCALE),
]
