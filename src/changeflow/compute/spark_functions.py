"""SQL functions compiled to Spark Columns (:class:`~changeflow.compute.spark_expr.ExprCompiler`
calls them by name), each with the meaning its :class:`~changeflow.compute.functions.Function`
defines; what Spark cannot compute the same way is a :class:`PlanError`, never another answer."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.spark_expr import (
    ExprCompiler,
    fail,
    finite,
    spark_type,
    unsupported,
)
from changeflow.compute.types import (
    DATE,
    FLOAT8,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIMESTAMP,
)
from changeflow.errors import PlanError

_MAX_DOUBLE_EXP = 709.782712893384  # exp() of more overflows a double

Builder = Callable[[ExprCompiler, Func], Column]


def _args(cc: ExprCompiler, e: Func) -> list[Column]:
    return [cc.compile(a) for a in e.args]


def _simple(fn: Callable[..., Column]) -> Builder:
    return lambda cc, e: fn(*_args(cc, e))


def _substr(cc: ExprCompiler, e: Func) -> Column:
    s, start = cc.compile(e.args[0]), cc.compile(e.args[1]).cast("bigint")
    lo = F.greatest(start, F.lit(1).cast("bigint"))
    past = (F.length(s) + 1).cast("bigint")
    if len(e.args) == 2:
        return F.substr(s, F.least(lo, past).cast("int"))
    count = cc.compile(e.args[2]).cast("bigint")
    length = start + count - lo
    taken = F.substr(s, F.least(lo, past).cast("int"), F.least(length, past).cast("int"))
    return (
        F.when(count < 0, fail("negative substring length not allowed", "22011"))
        .when(length <= 0, F.substr(s, F.lit(1), F.lit(0)))  # '' (NULL for a NULL string)
        .otherwise(taken)
    )


def _trim(fn: Callable[..., Column]) -> Builder:
    def build(cc: ExprCompiler, e: Func) -> Column:
        args = _args(cc, e)
        return fn(args[0], args[1] if len(args) > 1 else F.lit(" "))

    return build


def _replace(cc: ExprCompiler, e: Func) -> Column:
    s, search, by = _args(cc, e)
    literal = F.regexp_replace(by, r"([\\$])", r"\\$1")
    return F.when(search == "", F.regexp_replace(s, F.lit(""), literal)).otherwise(
        F.replace(s, search, by)
    )


def _left(cc: ExprCompiler, e: Func) -> Column:
    s, n = cc.compile(e.args[0]), cc.compile(e.args[1]).cast("bigint")
    keep = F.when(n >= 0, n).otherwise(F.greatest(F.length(s) + n, F.lit(0)))
    return F.substr(s, F.lit(1), F.least(keep, F.length(s).cast("bigint")).cast("int"))


def _right(cc: ExprCompiler, e: Func) -> Column:
    s, n = cc.compile(e.args[0]), cc.compile(e.args[1]).cast("bigint")
    size = F.length(s).cast("bigint")
    start = F.when(n > 0, F.greatest(size - n + 1, F.lit(1))).otherwise(F.least(1 - n, size + 1))
    nothing = F.substr(s, F.lit(1), F.lit(0))  # '' (NULL for a NULL string)
    return F.when(n == 0, nothing).otherwise(F.substr(s, start.cast("int")))


def _text(cc: ExprCompiler, a: X.Expr, e: Func) -> Column:
    return cc.cast(cc.compile(a), a.type, TEXT, e)


def _concat(cc: ExprCompiler, e: Func) -> Column:
    parts = [_text(cc, a, e) for a in e.args if a.type != NULLTYPE]
    return F.concat_ws("", *parts) if parts else F.lit("")


def _same(cc: ExprCompiler, e: Func, c: Column) -> Column:
    """``c`` cast back to the argument's own type (numeric keeps its decimal)."""
    return c if e.type == NUMERIC else c.cast(spark_type(e.type))


def _places(e: Func) -> int:
    if len(e.args) == 1:
        return 0
    arg = e.args[1]
    if not isinstance(arg, X.Lit) or arg.value is None:
        raise unsupported(e, "the number of places must be a constant")
    return int(arg.value)


def _round(cc: ExprCompiler, e: Func) -> Column:
    x = cc.compile(e.args[0])
    if e.type.integer:
        return x
    if e.type == FLOAT8:
        if len(e.args) > 1:
            raise PlanError("round(double precision, integer) does not exist; cast to numeric")
        return F.rint(x)
    return F.round(x, _places(e))


def _float_trunc(x: Column) -> Column:
    return x - x % F.lit(1.0)  # fmod is exact, so this is exact for every finite double


def _trunc(cc: ExprCompiler, e: Func) -> Column:
    x = cc.compile(e.args[0])
    if e.type.integer:
        return x
    if e.type == FLOAT8:
        return _float_trunc(x)
    places = F.lit(_places(e))
    return F.when(x >= 0, F.floor(x, places)).otherwise(F.ceil(x, places))


def _floor(up: bool) -> Builder:
    def build(cc: ExprCompiler, e: Func) -> Column:
        x = cc.compile(e.args[0])
        if e.type.integer:
            return x
        if e.type == NUMERIC:
            return F.ceil(x, F.lit(0)) if up else F.floor(x, F.lit(0))
        t = _float_trunc(x)
        return F.when(t < x, t + 1.0).otherwise(t) if up else F.when(t > x, t - 1.0).otherwise(t)

    return build


def _sign(cc: ExprCompiler, e: Func) -> Column:
    s = F.signum(cc.compile(e.args[0]))
    return s.cast("decimal(1,0)") if e.type == NUMERIC else s.cast(spark_type(e.type))


def _double(cc: ExprCompiler, e: Func, i: int = 0) -> Column:
    return cc.compile(e.args[i]).cast("double")


def _sqrt(cc: ExprCompiler, e: Func) -> Column:
    x = _double(cc, e)
    bad = fail("cannot take square root of a negative number", "2201F")
    return F.when(x < 0, bad).otherwise(F.sqrt(x))


def _ln(cc: ExprCompiler, e: Func) -> Column:
    x = _double(cc, e)
    return (
        F.when(x == 0, fail("cannot take logarithm of zero", "2201E"))
        .when(x < 0, fail("cannot take logarithm of a negative number", "2201E"))
        .otherwise(F.log(x))
    )


def _exp(cc: ExprCompiler, e: Func) -> Column:
    x = _double(cc, e)
    return F.when(x > _MAX_DOUBLE_EXP, fail("value out of range: overflow", "22003")).otherwise(
        F.exp(x)
    )


def _power(cc: ExprCompiler, e: Func) -> Column:
    x, y = _double(cc, e, 0), _double(cc, e, 1)
    return (
        F.when((x == 0) & (y < 0), fail("zero raised to a negative power is undefined", "2201F"))
        .when(
            (x < 0) & (y % F.lit(1.0) != 0),
            fail(
                "a negative number raised to a non-integer power yields a complex result", "2201F"
            ),
        )
        .otherwise(finite(F.pow(x, y)))
    )


def _extreme(fn: Callable[..., Column]) -> Builder:
    def build(cc: ExprCompiler, e: Func) -> Column:
        args = [cc._branch(a, e.type) for a in e.args]
        return args[0] if len(args) == 1 else fn(*args)

    return build


def _unit(e: Func, known: tuple[str, ...]) -> str | None:
    """The constant unit argument of ``e`` (lower case), None if it is not one of ``known``."""
    unit = e.args[0]
    if not isinstance(unit, X.Lit) or not isinstance(unit.value, str):
        raise unsupported(e, "the unit must be a constant")
    return unit.value.lower() if unit.value.lower() in known else None


_PARTS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "dow", "doy")


def _stamp(cc: ExprCompiler, a: X.Expr) -> Column:
    """A date, timestamp or timestamptz as a Spark timestamp (a date is its UTC midnight)."""
    c = cc.compile(a)
    return c.cast("timestamp") if a.type in (DATE, TIMESTAMP) else c


def _epoch_micros(cc: ExprCompiler, a: X.Expr) -> Column:
    return F.unix_micros(_stamp(cc, a))


def _part(cc: ExprCompiler, e: Func, numeric: bool) -> Column:
    unit = _unit(e, (*_PARTS, "epoch"))
    value = e.args[1]
    if unit is None:
        units = ", ".join((*_PARTS, "epoch"))
        shown = e.args[0].value  # type: ignore[attr-defined]
        bad = fail(f"unit {shown!r} not recognized; the units are {units}", "22023")
        return F.when(cc.compile(value).isNotNull(), bad).cast(spark_type(e.type))
    if unit == "epoch":
        micros = _epoch_micros(cc, value)
        if numeric:
            return micros.cast("decimal(20,0)") * F.lit(Decimal("0.000001"))
        return micros.cast("double") / 1e6
    stamp = _stamp(cc, value)
    part = F.dayofweek(stamp) - 1 if unit == "dow" else F.date_part(F.lit(unit), stamp)
    return part if numeric and unit == "second" else part.cast(spark_type(e.type))


def _date_trunc(cc: ExprCompiler, e: Func) -> Column:
    units = ("microseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year")
    unit = _unit(e, units)
    value = e.args[1]
    if unit is None:
        shown = e.args[0].value  # type: ignore[attr-defined]
        bad = fail(f"unit {shown!r} not recognized; the units are {', '.join(units)}", "22023")
        return F.when(cc.compile(value).isNotNull(), bad).cast(spark_type(e.type))
    stamp = _stamp(cc, value)
    if unit != "microseconds":
        stamp = F.date_trunc(unit, stamp)
    return stamp.cast(spark_type(e.type))


def _to_timestamp(cc: ExprCompiler, e: Func) -> Column:
    s = _double(cc, e)
    in_range = (s >= -62135596800) & (s < 253402300800)
    micros = F.bround(s * 1e6, 0).cast("bigint")
    return F.when(~in_range, fail("timestamp out of range", "22008")).otherwise(
        F.timestamp_micros(micros)
    )


def _epoch_ms(cc: ExprCompiler, e: Func) -> Column:
    micros = _epoch_micros(cc, e.args[0])
    return F.bround(micros.cast("decimal(20,0)") / F.lit(Decimal(1000)), 0).cast("bigint")


SPARK_FUNCTIONS: dict[str, Builder] = {
    "lower": _simple(F.lower),
    "upper": _simple(F.upper),
    "length": _simple(F.length),
    "char_length": _simple(F.length),
    "substr": _substr,
    "substring": _substr,
    "btrim": _trim(F.btrim),
    "trim": _trim(F.btrim),
    "ltrim": _trim(F.ltrim),
    "rtrim": _trim(F.rtrim),
    "replace": _replace,
    "strpos": _simple(lambda s, sub: F.call_function("instr", s, sub)),
    "position": _simple(lambda sub, s: F.call_function("instr", s, sub)),
    "left": _left,
    "right": _right,
    "starts_with": _simple(F.startswith),
    "reverse": _simple(F.reverse),
    "repeat": _simple(lambda s, n: F.call_function("repeat", s, n.cast("int"))),
    "concat": _concat,
    "textcat": _simple(F.concat),
    "abs": lambda cc, e: _same(cc, e, F.abs(cc.compile(e.args[0]))),
    "round": _round,
    "trunc": _trunc,
    "floor": _floor(up=False),
    "ceil": _floor(up=True),
    "ceiling": _floor(up=True),
    "sign": _sign,
    "sqrt": _sqrt,
    "ln": _ln,
    "exp": _exp,
    "power": _power,
    "pow": _power,
    "greatest": _extreme(F.greatest),
    "least": _extreme(F.least),
    "date_part": lambda cc, e: _part(cc, e, numeric=False),
    "extract": lambda cc, e: _part(cc, e, numeric=True),
    "date_trunc": _date_trunc,
    "make_date": _simple(lambda y, m, d: F.make_date(y, m, d)),
    "to_timestamp": _to_timestamp,
    "epoch_ms": _epoch_ms,
}
