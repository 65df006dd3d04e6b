"""Scalar expressions compiled to Spark Columns, with the semantics :mod:`expr` and
:mod:`functions` define (PostgreSQL's): NULLs and three-valued logic are Spark's own; integer
division truncates toward zero, ``%`` keeps the dividend's sign; overflow and division by zero
fail the job (the session runs ANSI) and come back, through :func:`changeflow.spark.spark_errors`,
as :class:`EvalError` with PostgreSQL's sqlstate. What Spark cannot compute the same way (a
double printed as text, a numeric product wider than Spark's 38 digits, LIKE with a pattern that
is not a constant…) is a :class:`PlanError` naming it, never a different answer.

Input columns are named by position (``c0``, ``c1``…) so that repeated plan names stay
unambiguous. Build columns inside :func:`exact_decimals`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from decimal import Decimal

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.types import (
    BOOL,
    DATE,
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
)
from changeflow.errors import EvalError, PlanError
from changeflow.spark import raise_column, session_conf

SPARK_TYPES = {
    BOOL: "boolean",
    INT2: "smallint",
    INT4: "int",
    INT8: "bigint",
    NUMERIC: "decimal(38,10)",
    FLOAT8: "double",
    TEXT: "string",
    DATE: "date",
    TIMESTAMP: "timestamp_ntz",
    TIMESTAMPTZ: "timestamp",
}
_EXACT_DECIMAL = {INT2: "decimal(5,0)", INT4: "decimal(10,0)", INT8: "decimal(20,0)"}
NUMERIC_SCALE = 10  # the scale numeric values are stored at (decimal128(38, 10))
_MAX_DOUBLE_EXP = 709.782712893384  # exp() of more overflows a double


def exact_decimals(spark: SparkSession) -> AbstractContextManager[None]:
    """The session setting under which columns must be built: decimal arithmetic keeps every
    decimal place it can (a product of two ``decimal(38, 10)`` is ``decimal(38, 20)``) and
    fails on overflow, instead of rounding to 6 places; a built DataFrame keeps it."""
    return session_conf(spark, {"spark.sql.decimalOperations.allowPrecisionLoss": "false"})


def name(i: int) -> str:
    """The Spark name of plan column ``i``."""
    return f"c{i}"


def spark_type(kind: SqlType) -> str:
    """The Spark type that holds values of ``kind`` (``void`` for a bare NULL)."""
    return SPARK_TYPES.get(kind, "void")


def fail(message: str, sqlstate: str) -> Column:
    """A column that fails the job with an :class:`EvalError`."""
    return raise_column(EvalError(message, sqlstate=sqlstate))


def _unsupported(e: X.Expr, why: str) -> PlanError:
    return PlanError(f"{e} cannot be computed on Spark: {why}", sqlstate="0A000")


def _finite(c: Column) -> Column:
    """``c`` (a double), failing like PostgreSQL on an infinite result."""
    overflow = fail("value out of range: overflow", "22003")
    return F.when(F.abs(c) == float("inf"), overflow).otherwise(c)


class ExprCompiler:
    """Compiles expressions over the columns of ``frame`` (named by :func:`name`); ``now`` is
    the value of ``mz_now()``."""

    def __init__(self, frame: DataFrame, now: int | None = None) -> None:
        self.frame = frame
        self.now = now

    def type_of(self, c: Column) -> DataType:
        """The Spark type of ``c`` over the frame (Spark's analysis, no job)."""
        return self.frame.select(c).schema[0].dataType

    def compile(self, e: X.Expr) -> Column:
        """``e`` as a Spark Column of the Spark type of ``e.type`` (numerics: any decimal)."""
        method = getattr(self, "_" + type(e).__name__.lower(), None)
        if method is None:
            raise _unsupported(e, f"{type(e).__name__} is not known here")
        return method(e)

    def typed(self, e: X.Expr, kind: SqlType) -> Column:
        """``e`` as a value of ``kind`` (a numeric promotion; numeric keeps its own decimal)."""
        c = self.compile(e)
        if e.type == kind or (kind == NUMERIC and e.type == NUMERIC):
            return c
        if kind == NUMERIC and e.type.integer:
            return c.cast(_EXACT_DECIMAL[e.type])
        return c.cast(spark_type(kind))

    # -- leaves ------------------------------------------------------------------------------

    def _col(self, e: X.Col) -> Column:
        return F.col(name(e.index))

    def _lit(self, e: X.Lit) -> Column:
        if e.value is None:
            return F.lit(None).cast(spark_type(e.type))
        if e.type == NUMERIC:
            return F.lit(Decimal(e.value))
        if e.type in (TIMESTAMP, TIMESTAMPTZ):
            return F.lit(e.value.isoformat()).cast(spark_type(e.type))
        return F.lit(e.value).cast(spark_type(e.type))

    def _mznow(self, e: X.MzNow) -> Column:
        if self.now is None:
            raise PlanError("mz_now() may appear only where a time is known (a view's filter)")
        return F.lit(self.now).cast("bigint")

    def _raise(self, e: X.Raise) -> Column:
        return fail(e.message, e.sqlstate)

    # -- arithmetic --------------------------------------------------------------------------

    def _arith(self, e: X.Arith) -> Column:
        if e.type == DATE:
            a, days = self.compile(e.a), self.compile(e.b).cast("int")
            out = F.date_add(a, days) if e.op == "+" else F.date_sub(a, days)
            return _eager(e, a, days, out)
        if e.a.type == DATE:
            a, b = self.compile(e.a), self.compile(e.b)
            return _eager(e, a, b, F.datediff(a, b))
        a, b = self.typed(e.a, e.type), self.typed(e.b, e.type)
        if e.type.integer:
            if e.op == "/":
                out = F.call_function("div", a, b).cast(spark_type(e.type))
            else:
                out = _BINARY[e.op](a, b)
        elif e.type == FLOAT8:
            out = _finite(_BINARY[e.op](a, b))
        else:
            a, b, out = self._numeric(e, a, b)
        return _eager(e, a, b, out)

    def _numeric(self, e: X.Arith, a: Column, b: Column) -> tuple[Column, Column, Column]:
        """A numeric operation, refused where Spark's 38 digits would round the result."""
        if e.op == "/":  # a wide divisor makes Spark keep at least 18 decimal places
            b = b.cast(f"decimal(38,{self._scale(b)})")
        out = _BINARY[e.op](a, b)
        sa, sb, so = (self._scale(c) for c in (a, b, out))
        need = {"*": sa + sb, "/": NUMERIC_SCALE}.get(e.op, max(sa, sb))
        if so < min(need, 38):
            raise _unsupported(e, f"Spark keeps {so} decimal places of the {need} the result needs")
        return a, b, out

    def _scale(self, c: Column) -> int:
        kind = self.type_of(c)
        return kind.scale if isinstance(kind, DecimalType) else 0

    def _neg(self, e: X.Neg) -> Column:
        return -self.compile(e.a)

    # -- comparison and logic ----------------------------------------------------------------

    def _cmp(self, e: X.Cmp) -> Column:
        a, b = self.compile(e.a), self.compile(e.b)
        return _eager(e, a, b, _COMPARE[e.op](a, b))

    def _bool(self, e: X.Expr) -> Column:
        c = self.compile(e)
        return c.cast("boolean") if e.type == NULLTYPE else c

    def _and(self, e: X.And) -> Column:
        out = self._bool(e.args[0])
        for a in e.args[1:]:
            out = out & self._bool(a)
        return out

    def _or(self, e: X.Or) -> Column:
        out = self._bool(e.args[0])
        for a in e.args[1:]:
            out = out | self._bool(a)
        return out

    def _not(self, e: X.Not) -> Column:
        return ~self._bool(e.a)

    def _isnull(self, e: X.IsNull) -> Column:
        c = self.compile(e.a)
        return c.isNotNull() if e.negated else c.isNull()

    def _branch(self, e: X.Expr, kind: SqlType) -> Column:
        return self.typed(e, kind) if kind != NULLTYPE else self.compile(e)

    def _case(self, e: X.Case) -> Column:
        cond, result = e.whens[0]
        out = F.when(self._bool(cond), self._branch(result, e.type))
        for cond, result in e.whens[1:]:
            out = out.when(self._bool(cond), self._branch(result, e.type))
        return out.otherwise(self._branch(e.otherwise, e.type))

    def _coalesce(self, e: X.Coalesce) -> Column:
        return F.coalesce(*(self._branch(a, e.type) for a in e.args))

    def _nullif(self, e: X.NullIf) -> Column:
        a, b = self.compile(e.a), self.compile(e.b)
        out = F.when(a == b, F.lit(None).cast(spark_type(e.type))).otherwise(a)
        return _eager(e, a, b, out)

    def _inlist(self, e: X.InList) -> Column:
        found = self.compile(e.a).isin(*(self.compile(i) for i in e.items))
        return ~found if e.negated else found

    def _like(self, e: X.Like) -> Column:
        if not isinstance(e.pattern, X.Lit):
            raise _unsupported(e, "the LIKE pattern must be a constant")
        a = self.compile(e.a)
        if e.pattern.value is None:
            return F.lit(None).cast("boolean")
        try:
            regex = like_java_regex(e.pattern.value, e.case_insensitive)
        except EvalError as bad:
            return F.when(a.isNotNull(), raise_column(bad)).cast("boolean")
        found = a.rlike(regex)
        return ~found if e.negated else found

    # -- casts -------------------------------------------------------------------------------

    def _cast(self, e: X.Cast) -> Column:
        return self.cast(self.compile(e.a), e.a.type, e.to, e)

    def cast(self, c: Column, source: SqlType, target: SqlType, e: X.Expr) -> Column:
        """``c`` (of ``source``) as ``target``, as :func:`expr.cast_value` does."""
        if source == target:
            return c
        if source == NULLTYPE:
            return F.lit(None).cast(spark_type(target))
        if target == TEXT:
            return self._to_text(c, source, e)
        if source == TEXT:
            return _from_text(c, target)
        if target.integer and source == FLOAT8:
            return F.rint(c).cast(spark_type(target))  # NaN and infinity overflow (22003)
        if target.integer and source == NUMERIC:
            return F.round(c, 0).cast(spark_type(target))  # half away from zero
        if target == NUMERIC and source == FLOAT8:
            bad = F.isnan(c) | (F.abs(c) == float("inf"))
            return F.when(bad, fail("cannot convert infinity to numeric", "22003")).otherwise(
                c.cast(spark_type(NUMERIC))
            )
        if target == NUMERIC and source.integer:
            return c.cast("decimal(20,0)")
        if target == BOOL and source.integer:
            return c != 0
        return c.cast(spark_type(target))

    def _to_text(self, c: Column, source: SqlType, e: X.Expr) -> Column:
        if source in (FLOAT8, NUMERIC):
            raise _unsupported(e, f"{source} is printed as text differently by Spark")
        if source in (TIMESTAMP, TIMESTAMPTZ):
            whole = F.date_format(c, "yyyy-MM-dd HH:mm:ss")
            micros = F.unix_micros(c.cast("timestamp")) % 1_000_000
            text = F.when(micros == 0, whole).otherwise(
                F.concat(whole, F.lit("."), F.lpad(micros.cast("string"), 6, "0"))
            )
            return F.concat(text, F.lit("+00")) if source == TIMESTAMPTZ else text
        return c.cast("string")

    # -- functions ---------------------------------------------------------------------------

    def _func(self, e: Func) -> Column:
        build = _FUNCTIONS.get(e.name.lower())
        if build is None:
            raise _unsupported(e, f"function {e.name}() is not compiled for Spark")
        return build(self, e)


def _eager(e: X.Expr, a: Column, b: Column, out: Column) -> Column:
    """``out``, computed from ``a`` and ``b`` so that both are evaluated, as the reference
    evaluates both operands: Spark skips the second operand when the first is NULL, which
    would turn an error in it (overflow, division by zero) into NULL."""
    second = e.children()[1]
    if isinstance(second, X.Col | X.Lit | X.MzNow):  # cannot fail: nothing to force
        return out
    return F.when(a.isNull() & b.isNull(), F.lit(None)).otherwise(out)


_BINARY: dict[str, Callable[[Column, Column], Column]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "%": lambda a, b: a % b,
}
_COMPARE: dict[str, Callable[[Column, Column], Column]] = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def like_java_regex(pattern: str, case_insensitive: bool = False) -> str:
    """A LIKE pattern (``%``, ``_``, backslash escapes) as an anchored Java regular expression."""
    flags = "(?siu)" if case_insensitive else "(?s)"
    return flags + r"\A" + X.like_pattern(pattern, _quote) + r"\z"


def _quote(ch: str) -> str:
    return "\\" + ch if ch.isascii() and not ch.isalnum() else ch


# -- text to values ----------------------------------------------------------------------------

_DATE_RE = r"^\d{4}-\d{2}-\d{2}$"
_STAMP_RE = r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?$"
_STAMPTZ_RE = _STAMP_RE[:-1] + r"(Z|[+-]\d{2}(:\d{2})?)?$"


def _syntax(c: Column, kind: SqlType) -> Column:
    bad = EvalError(f'invalid input syntax for type {kind}: "', sqlstate="22P02")
    return raise_column(bad, F.concat(c, F.lit('"')))


def _from_text(c: Column, target: SqlType) -> Column:
    s = F.trim(c)
    if target == BOOL:
        low = F.lower(s)
        return (
            F.when(low.isin("t", "true", "y", "yes", "on", "1"), F.lit(True))
            .when(low.isin("f", "false", "n", "no", "off", "0"), F.lit(False))
            .when(c.isNotNull(), _syntax(c, target))
            .cast("boolean")
        )
    pattern = {DATE: _DATE_RE, TIMESTAMP: _STAMP_RE, TIMESTAMPTZ: _STAMPTZ_RE}.get(target)
    if pattern is not None:
        return F.when(s.rlike(pattern) | c.isNull(), s.cast(spark_type(target))).otherwise(
            _syntax(c, target)
        )
    return c.cast(spark_type(target))


# -- functions -----------------------------------------------------------------------------------

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
        raise _unsupported(e, "the number of places must be a constant")
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
        .otherwise(_finite(F.pow(x, y)))
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
        raise _unsupported(e, "the unit must be a constant")
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


_FUNCTIONS: dict[str, Builder] = {
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
