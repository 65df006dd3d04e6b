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

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType

from changeflow.compute import expr as X
from changeflow.compute import scalars as S
from changeflow.compute.arrays import ArrayOf, Subscript
from changeflow.compute.types import (
    BOOL,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSONB,
    NULLTYPE,
    NUMERIC,
    NUMERIC_SCALE,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    SqlType,
)
from changeflow.errors import EvalError, PlanError
from changeflow.spark import raise_column, session_conf

if TYPE_CHECKING:
    from changeflow.compute.functions import Func

SPARK_TYPES = {
    BOOL: "boolean",
    INT2: "smallint",
    INT4: "int",
    INT8: "bigint",
    NUMERIC: f"decimal(38,{NUMERIC_SCALE})",
    FLOAT4: "float",
    FLOAT8: "double",
    TEXT: "string",
    DATE: "date",
    TIMESTAMP: "timestamp_ntz",
    TIMESTAMPTZ: "timestamp",
    UUID: "binary",  # its 16 bytes: Spark compares them as PostgreSQL does
    BYTEA: "binary",
    # carried only (never compared on Spark): the fields of their Arrow structs
    INTERVAL: "struct<months:int,days:int,micros:bigint>",
    JSONB: "struct<jsonb:string>",
}
_EXACT_DECIMAL = {INT2: "decimal(5,0)", INT4: "decimal(10,0)", INT8: "decimal(20,0)"}


def exact_decimals(spark: SparkSession) -> AbstractContextManager[None]:
    """The session setting under which columns must be built: decimal arithmetic keeps every
    decimal place it can (a product of decimal(38, 10) and decimal(38, 2) is decimal(38, 12)) and
    fails on overflow, instead of rounding to 6 places; a built DataFrame keeps it."""
    return session_conf(spark, {"spark.sql.decimalOperations.allowPrecisionLoss": "false"})


def name(i: int) -> str:
    """The Spark name of plan column ``i``."""
    return f"c{i}"


def spark_type(kind: SqlType) -> str:
    """The Spark type that holds values of ``kind`` (``void`` for a bare NULL)."""
    if kind.element is not None:
        return f"array<{spark_type(kind.element)}>"
    return SPARK_TYPES.get(kind, "void")


def from_spark(table: pa.Table, kinds: Sequence[SqlType], names: Sequence[str] = ()) -> pa.Table:
    """Spark's Arrow ``table`` with its uuid columns (``names``, else the first ``len(kinds)``)
    back in their 16-byte type, which rows read as ``UUID`` s (Spark holds them as binary)."""
    for column, kind in zip(names or table.column_names, kinds, strict=False):
        if kind == UUID:
            where = table.schema.get_field_index(column)
            table = table.set_column(where, column, table.column(column).cast(UUID.arrow))
    return table


def fail(message: str, sqlstate: str) -> Column:
    """A column that fails the job with an :class:`EvalError`."""
    return raise_column(EvalError(message, sqlstate=sqlstate))


def unsupported(e: X.Expr, why: str) -> PlanError:
    return PlanError(f"{e} cannot be computed on Spark: {why}", sqlstate="0A000")


def finite(c: Column) -> Column:
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
            raise unsupported(e, f"{type(e).__name__} is not known here")
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
            out = finite(_BINARY[e.op](a, b))
            if e.op == "/":  # NaN divided by anything, zero too, is NaN
                out = F.when(F.isnan(a), a).otherwise(out)
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
            raise unsupported(e, f"Spark keeps {so} decimal places of the {need} the result needs")
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
            raise unsupported(e, "the LIKE pattern must be a constant")
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

    def _arrayof(self, e: ArrayOf) -> Column:
        assert e.type.element is not None
        return F.array(*(self.typed(i, e.type.element) for i in e.items))

    def _subscript(self, e: Subscript) -> Column:
        return F.get(self.compile(e.array), self.compile(e.index).cast("int") - 1)

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
            raise unsupported(e, f"{source} is printed as text differently by Spark")
        if source in (TIMESTAMP, TIMESTAMPTZ):
            whole = F.date_format(c, "yyyy-MM-dd HH:mm:ss")
            micros = F.unix_micros(c.cast("timestamp")) % 1_000_000
            text = F.when(micros == 0, whole).otherwise(
                F.concat(  # the fraction without trailing zeros, as PostgreSQL prints it
                    whole,
                    F.lit("."),
                    F.regexp_replace(F.lpad(micros.cast("string"), 6, "0"), "0+$", ""),
                )
            )
            return F.concat(text, F.lit("+00")) if source == TIMESTAMPTZ else text
        return c.cast("string")

    # -- functions ---------------------------------------------------------------------------

    def _func(self, e: Func) -> Column:
        build = e.function.spark
        if build is None:
            raise unsupported(e, f"function {e.name}() is not compiled for Spark")
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
    return flags + r"\A" + S.like_pattern(pattern, _quote) + r"\z"


def _quote(ch: str) -> str:
    return "\\" + ch if ch.isascii() and not ch.isalnum() else ch


# -- text to values ----------------------------------------------------------------------------

# the plain ISO 8601 forms Spark's cast reads as PostgreSQL does (hour 24 and offsets beyond
# 15 hours excluded); PostgreSQL's other date/time forms only the row evaluator reads
_DATE_RE = r"^\d{4}-\d{2}-\d{2}$"
_STAMP_RE = r"^\d{4}-\d{2}-\d{2}([ T]([01]\d|2[0-3]):\d{2}(:\d{2}(\.\d{1,6})?)?)?$"
_STAMPTZ_RE = _STAMP_RE[:-1] + r"(Z|[+-](0\d|1[0-5])(:\d{2})?)?$"


def _syntax(c: Column, kind: SqlType) -> Column:
    code = "22007" if kind in (DATE, TIMESTAMP, TIMESTAMPTZ) else "22P02"  # as PostgreSQL
    bad = EvalError(f'invalid input syntax for type {kind}: "', sqlstate=code)
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
        value = s.try_cast(spark_type(target))
        range_ = EvalError('date/time field value out of range: "', sqlstate="22008")
        other = EvalError(
            "date/time input other than plain ISO 8601 cannot be read on Spark "
            "(the row evaluator reads PostgreSQL's other forms): \"",
            sqlstate="0A000",
        )
        quoted = F.concat(c, F.lit('"'))
        return (
            F.when(c.isNull(), F.lit(None).cast(spark_type(target)))
            .when(s.rlike(pattern) & value.isNotNull(), value)
            .when(s.rlike(pattern), raise_column(range_, quoted))
            .otherwise(raise_column(other, quoted))
            .cast(spark_type(target))
        )
    return c.cast(spark_type(target))
