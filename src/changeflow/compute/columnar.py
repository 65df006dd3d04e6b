"""Scalar expressions evaluated on Arrow columns with ``pyarrow.compute`` kernels.

The row evaluator (``Expr.eval``) is the meaning; this backend computes the same values a column
at a time. Where a node has no kernel here (a function, a numeric quotient, ILIKE…) the whole
expression is evaluated row by row over the batch (:func:`evaluate` does it); where a kernel
*might* disagree with the rows (an overflow, a division by zero, a numeric too wide for
decimal256) it does not guess: :class:`Rows` is raised and the caller evaluates the expression
(or the operator) row by row, which raises the exact error the rows raise, or none when the
offending row is one the rows never evaluate (a FALSE AND, a CASE branch not taken).

Values are held in each SQL type's Arrow type, except numerics: an exact decimal of any scale
(``a * b`` of two scale-10 numerics has scale 20, as Python's ``Decimal`` product has).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import expr as X
from changeflow.compute import scaled
from changeflow.compute.functions import Func
from changeflow.compute.scalars import like_pattern, unstorable_nan
from changeflow.compute.types import (
    BOOL,
    DATE,
    FLOAT4,
    FLOAT8,
    NULLTYPE,
    NUMERIC,
    TIMESTAMP,
    SqlType,
    rows_only,
)
from changeflow.compute.values import arrow_values, python_values
from changeflow.errors import EvalError

Value = pa.Array | pa.Scalar
_EPOCH = date(1970, 1, 1).toordinal()
_DAYS = (date(1, 1, 1).toordinal() - _EPOCH, date(9999, 12, 31).toordinal() - _EPOCH)
_EXACT_FLOAT_INT = 2**53  # integers up to this compare with a double exactly once converted


class NoKernel(Exception):
    """No kernel for a node of the expression: evaluate it row by row."""


class Rows(Exception):
    """The kernels might not give what the rows give (an error, a rounding): use the rows."""


def evaluate(e: X.Expr, columns: list[pa.Array], n: int, now: int | None = None) -> pa.Array:
    """``e`` over ``n`` rows of ``columns``: with kernels, or row by row where one is missing.
    Raises :class:`Rows` when only the rows can tell (an error among them)."""
    try:
        return full(_eval(e, _Cx(columns, n, now)), n, e.type)
    except NoKernel:
        return row_values(e, columns, n, now)


def row_values(e: X.Expr, columns: list[pa.Array], n: int, now: int | None = None) -> pa.Array:
    """``e`` evaluated row by row (the reference), as an Arrow array."""
    used = sorted(e.columns())
    values = {i: python_values(columns[i]) for i in used}
    width = max(used, default=-1) + 1
    out = []
    for r in range(n):
        row = [None] * width
        for i in used:
            row[i] = values[i][r]
        out.append(e.eval(tuple(row), now))
    return to_array(out, e.type)


def to_array(values: list[Any], kind: SqlType) -> pa.Array:
    """Python values of ``kind`` as an array (numerics exactly, at their largest scale)."""
    if kind == NUMERIC:
        if any(v != v for v in values if v is not None):  # only a NaN is unequal to itself
            raise unstorable_nan("an Arrow column")
        for v in values:
            if v is not None and not v.is_finite():
                raise EvalError(f"numeric value {v} cannot be computed here", sqlstate="0A000")
            if v is not None and _width(v) > 76:
                raise EvalError(
                    f"a numeric value of {_width(v)} digits cannot be computed here: at most "
                    "76 digits are; round it to fewer decimal places",
                    sqlstate="0A000",
                )
        scale = max((-v.as_tuple().exponent for v in values if v is not None), default=0)
        return pa.array(values, pa.decimal256(76, max(scale, 0)))
    return pa.array(arrow_values(values, kind.arrow), _arrow(kind))


def _width(v: Decimal) -> int:
    """The digits a finite decimal needs at its own scale (before and after the point)."""
    return max(v.adjusted() + 1, 1) - min(v.as_tuple().exponent, 0)


def full(v: Value, n: int, kind: SqlType) -> pa.Array:
    """An array of ``n`` values from a kernel's result (a scalar repeated)."""
    if isinstance(v, pa.ChunkedArray):
        v = v.combine_chunks()
    if isinstance(v, pa.Scalar):
        if not v.is_valid:
            return pa.nulls(n, _arrow(kind) if v.type == pa.null() else v.type)
        return pa.repeat(v, n)
    if v.type == pa.null() and kind != NULLTYPE:
        return pa.nulls(n, _arrow(kind))
    return v


@dataclass(frozen=True)
class _Cx:
    """What a kernel evaluates over: the batch's columns, its length and ``mz_now()``."""

    columns: list[pa.Array]
    n: int
    now: int | None


def _any(v: Value) -> bool:
    """Is any value TRUE?"""
    if isinstance(v, pa.Scalar):
        return v.as_py() is True
    return pc.any(v).as_py() is True


def full_or_scalar_all(v: Value) -> bool:
    """Is no value FALSE (NULLs aside)?"""
    if isinstance(v, pa.Scalar):
        return v.as_py() is not False
    return pc.all(v).as_py() is not False


def _arrow(kind: SqlType) -> pa.DataType:
    return kind.arrow


def _eval(e: X.Expr, cx: _Cx) -> Value:
    fn = _KERNELS.get(type(e))
    if fn is None:
        raise NoKernel(type(e).__name__)
    if not isinstance(e, X.Col) and any(rows_only(x.type) for x in (e, *e.children())):
        raise NoKernel(f"{e.type}")  # Arrow's kernels do not mean SQL's on these
    return fn(e, cx)


def _col(e: X.Col, cx: _Cx) -> Value:
    return cx.columns[e.index]


def _lit(e: X.Lit, cx: _Cx) -> Value:
    if e.value is None:
        return pa.scalar(None, _arrow(e.type))
    if e.type == NUMERIC:
        value = e.value
        if not value.is_finite() or _width(value) > 38:  # NaN, infinity, past decimal128
            raise NoKernel("numeric literal")  # the rows say what is wrong with it
        try:
            return pa.scalar(value)  # a decimal at its own scale, as the rows keep it
        except pa.ArrowInvalid:
            raise NoKernel("numeric literal") from None
    return pa.scalar(e.value, _arrow(e.type))


def _mznow(e: X.MzNow, cx: _Cx) -> Value:
    if cx.now is None:
        raise NoKernel("mz_now() without a time")  # the rows raise the planning error
    return pa.scalar(cx.now, pa.int64())


# -- numbers ---------------------------------------------------------------------------------


def _as(v: Value, source: SqlType, kind: SqlType) -> Value:
    """An operand in the representation of ``kind`` (``_as`` of the rows)."""
    if v.type == pa.null():
        return v.cast(_arrow(kind)) if kind != NUMERIC else v.cast(pa.decimal128(1, 0))
    if kind == NUMERIC:
        return v if pa.types.is_decimal(v.type) else v.cast(pa.decimal128(19, 0))
    if kind == FLOAT8 and source == NUMERIC:
        raise NoKernel("numeric to double")  # Arrow's conversion is not correctly rounded
    if kind == FLOAT8:
        return v.cast(pa.float64(), safe=False)  # rounds to nearest, as float(int)
    return v.cast(_arrow(kind))  # a widening of integers


def _max_abs(v: Value) -> Decimal | None:
    if isinstance(v, pa.Scalar):
        x = v.as_py()
        return None if x is None else abs(Decimal(x))
    x = pc.max(pc.abs(v)).as_py()
    return None if x is None else Decimal(x)


def _digits(x: Decimal | None) -> int:
    """Digits left of the point of ``x`` (at least 1)."""
    return 1 if x is None or x < 1 else x.adjusted() + 1


def narrow(v: Value) -> Value:
    """A decimal in a decimal256 just wide enough for its values (so products fit)."""
    scale = v.type.scale
    precision = _digits(_max_abs(v)) + scale
    if precision > 76:
        raise Rows("numeric too wide")
    return v.cast(pa.decimal256(max(precision, 1), scale))


def _numeric(op: str, a: Value, b: Value) -> Value:
    if op not in ("+", "-", "*"):
        raise NoKernel(f"numeric {op}")
    if (fast := scaled.arith(op, a, b)) is not None:
        return fast
    a, b = narrow(a), narrow(b)
    pa_, pb = a.type.precision, b.type.precision
    sa, sb = a.type.scale, b.type.scale
    width = pa_ + pb + 1 if op == "*" else max(pa_ - sa, pb - sb) + max(sa, sb) + 1
    if width > 76:
        raise Rows("numeric too wide")
    kernel = {"+": pc.add, "-": pc.subtract, "*": pc.multiply}[op]
    return kernel(a, b)  # exact, as the rows' numeric arithmetic


def _fails_on_zero(b: Value, a: Value) -> None:
    """Division by zero: where both operands are present and the divisor is 0."""
    zero = pc.and_kleene(pc.equal(b, 0), pc.is_valid(a))
    if _any(zero):
        raise Rows("division by zero")


def _arith(e: X.Arith, cx: _Cx) -> Value:
    a, b = _eval(e.a, cx), _eval(e.b, cx)
    if e.type == DATE:
        kernel = pc.add if e.op == "+" else pc.subtract
        days = kernel(a.cast(pa.int32()).cast(pa.int64()), b.cast(pa.int64()))
        outside = pc.or_(pc.less(days, _DAYS[0]), pc.greater(days, _DAYS[1]))
        if _any(outside):
            raise Rows("date out of range")
        return days.cast(pa.int32()).cast(pa.date32())
    if e.a.type == DATE:
        return pc.subtract(a.cast(pa.int32()), b.cast(pa.int32()))
    kind = e.type
    a, b = _as(a, e.a.type, kind), _as(b, e.b.type, kind)
    if kind == NUMERIC:
        return _numeric(e.op, a, b)
    if e.op in "/%":
        _fails_on_zero(b, a)
    try:
        if kind == FLOAT4:
            raise NoKernel("real arithmetic")  # rounded to float32, underflow an error: rows
        if kind == FLOAT8:
            if e.op == "%":
                raise NoKernel("double %")  # fmod
            out = {"+": pc.add, "-": pc.subtract, "*": pc.multiply, "/": pc.divide}[e.op](a, b)
            if _any(pc.is_inf(out)):
                raise Rows("double overflow")
            return out
        if e.op == "%":
            return pc.subtract(a, pc.multiply(b, pc.divide_checked(a, b)))  # dividend's sign
        kernel = {
            "+": pc.add_checked,
            "-": pc.subtract_checked,
            "*": pc.multiply_checked,
            "/": pc.divide_checked,  # truncates toward zero, as the rows do
        }[e.op]
        return kernel(a, b)
    except pa.ArrowInvalid:
        raise Rows("integer overflow") from None


def _neg(e: X.Neg, cx: _Cx) -> Value:
    a = _eval(e.a, cx)
    if e.type.integer:
        try:
            return pc.negate_checked(a)
        except pa.ArrowInvalid:
            raise Rows("integer overflow") from None
    return pc.negate(a)


# -- comparison and logic --------------------------------------------------------------------


def _comparable(a: Value, ta: SqlType, b: Value, tb: SqlType) -> tuple[Value, Value]:
    """Both sides in one Arrow type, compared as the rows compare them."""
    if NULLTYPE in (ta, tb):
        kind = tb if ta == NULLTYPE else ta
        return a.cast(_arrow(kind)), b.cast(_arrow(kind))
    if ta.numeric and tb.numeric and ta != tb:
        if ta.floating or tb.floating:
            if NUMERIC in (ta, tb):
                raise NoKernel("numeric against double")
            ints = None if ta.floating and tb.floating else b if ta.floating else a
            big = None if ints is None else _max_abs(ints)
            if big is not None and big > _EXACT_FLOAT_INT:
                raise NoKernel("integer beyond a double's exact range")
            return a.cast(pa.float64()), b.cast(pa.float64())
        if NUMERIC in (ta, tb):
            return _as(a, ta, NUMERIC), _as(b, tb, NUMERIC)
        return a.cast(pa.int64()), b.cast(pa.int64())
    if ta != tb:  # a date against a timestamp: its midnight
        return a.cast(_arrow(TIMESTAMP)), b.cast(_arrow(TIMESTAMP))
    return a, b


_CMP: dict[str, Callable[[Value, Value], Value]] = {
    "=": pc.equal,
    "<>": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


def _compare(op: str, a: Value, ta: SqlType, b: Value, tb: SqlType) -> Value:
    a, b = _comparable(a, ta, b, tb)
    if pa.types.is_floating(a.type) and (_any(pc.is_nan(a)) or _any(pc.is_nan(b))):
        return _compare_nan(op, a, b)
    try:
        return _CMP[op](a, b)
    except pa.ArrowInvalid as error:  # decimals with no common type of 76 digits or fewer
        raise Rows("numeric too wide") from error


def _compare_nan(op: str, a: Value, b: Value) -> Value:
    """``a op b`` for doubles as PostgreSQL compares them: NaN equals NaN and is greater than
    every other value (Arrow's NaN is unequal to everything). NULLs stay NULL."""
    a_nan, b_nan = pc.is_nan(a), pc.is_nan(b)
    a, b = pc.if_else(a_nan, 0.0, a), pc.if_else(b_nan, 0.0, b)
    same = pc.and_(pc.equal(a_nan, b_nan), pc.equal(a, b))
    less = pc.or_(pc.less(a_nan, b_nan), pc.and_(pc.equal(a_nan, b_nan), pc.less(a, b)))
    match op:
        case "=":
            return same
        case "<>":
            return pc.invert(same)
        case "<":
            return less
        case "<=":
            return pc.or_(less, same)
        case ">":
            return pc.invert(pc.or_(less, same))
    return pc.invert(less)


def _cmp(e: X.Cmp, cx: _Cx) -> Value:
    a, b = _eval(e.a, cx), _eval(e.b, cx)
    return _compare(e.op, a, e.a.type, b, e.b.type)


def _bool(v: Value) -> Value:
    return v.cast(pa.bool_()) if v.type == pa.null() else v


def _and(e: X.And, cx: _Cx) -> Value:
    out = pa.scalar(True)
    for a in e.args:
        out = pc.and_kleene(out, _bool(_eval(a, cx)))
    return out


def _or(e: X.Or, cx: _Cx) -> Value:
    out = pa.scalar(False)
    for a in e.args:
        out = pc.or_kleene(out, _bool(_eval(a, cx)))
    return out


def _not(e: X.Not, cx: _Cx) -> Value:
    return pc.invert(_bool(_eval(e.a, cx)))


def _isnull(e: X.IsNull, cx: _Cx) -> Value:
    a = _eval(e.a, cx)
    if isinstance(a, pa.Scalar):
        return pa.scalar(a.is_valid == e.negated)
    return pc.is_valid(a) if e.negated else pc.is_null(a)


def _branch(v: Value, source: SqlType, kind: SqlType) -> Value:
    """A CASE or COALESCE branch in the unified type."""
    if kind == NUMERIC and source != NUMERIC:
        if v.type != pa.null() and not source.integer:
            raise NoKernel("branch type")
        return v.cast(pa.decimal128(19, 0))
    if kind == NUMERIC:
        return v
    return _as(v, source, kind) if kind.numeric else v.cast(_arrow(kind))


def _unified(values: list[Value], kind: SqlType) -> list[Value]:
    """Branches in one Arrow type; numerics only when they share a scale (so each value's
    digits are those the rows give)."""
    if kind != NUMERIC:
        return values
    scales = {v.type.scale for v in values if pa.types.is_decimal(v.type)}
    if len(scales) > 1:
        raise NoKernel("numeric branches of different scales")
    return [v.cast(pa.decimal256(76, next(iter(scales), 0))) for v in values]


def _case(e: X.Case, cx: _Cx) -> Value:
    n = cx.n
    conds = [full(_bool(_eval(c, cx)), n, BOOL) for c, _ in e.whens]
    results = [_branch(_eval(r, cx), r.type, e.type) for _, r in e.whens]
    results.append(_branch(_eval(e.otherwise, cx), e.otherwise.type, e.type))
    results = [full(r, n, e.type) for r in _unified(results, e.type)]
    if e.type == NULLTYPE:
        return pa.nulls(n)
    taken = pa.StructArray.from_arrays(conds, names=[str(i) for i in range(len(conds))])
    return pc.case_when(taken, *results)


def _coalesce(e: X.Coalesce, cx: _Cx) -> Value:
    args = [_branch(_eval(a, cx), a.type, e.type) for a in e.args]
    if e.type == NULLTYPE:
        return pa.scalar(None)
    return pc.coalesce(*_unified(args, e.type))


def _nullif(e: X.NullIf, cx: _Cx) -> Value:
    a, b = _eval(e.a, cx), _eval(e.b, cx)
    if e.a.type == NULLTYPE:
        return a
    same = pc.fill_null(_compare("=", a, e.a.type, b, e.b.type), False)
    return pc.if_else(same, pa.scalar(None, a.type), a)


def _inlist(e: X.InList, cx: _Cx) -> Value:
    a = _eval(e.a, cx)
    out = pa.scalar(False)
    for item in e.items:
        v = _eval(item, cx)
        out = pc.or_kleene(out, _bool(_compare("=", a, e.a.type, v, item.type)))
    return pc.invert(out) if e.negated else out


def _quote(ch: str) -> str:
    return "\\" + ch if ch.isascii() and not ch.isalnum() and ch != " " else ch


def _like(e: X.Like, cx: _Cx) -> Value:
    if e.case_insensitive or not isinstance(e.pattern, X.Lit):
        raise NoKernel("ILIKE or a pattern that is not a constant")
    a = _eval(e.a, cx)
    if e.pattern.value is None or e.a.type == NULLTYPE:
        return pa.scalar(None, pa.bool_())
    try:
        regex = r"(?s)\A" + like_pattern(e.pattern.value, _quote) + r"\z"
    except EvalError:
        raise Rows("bad LIKE pattern") from None
    out = pc.match_substring_regex(a, regex)
    return pc.invert(out) if e.negated else out


def _cast(e: X.Cast, cx: _Cx) -> Value:
    a, source, target = _eval(e.a, cx), e.a.type, e.to
    if source in (target, NULLTYPE):
        return a if source == target else a.cast(_arrow(target)) if target != NUMERIC else a
    try:
        if source.integer and target.integer:
            return a.cast(_arrow(target))  # a safe cast: out of range raises
        if source.integer and target in (FLOAT8, NUMERIC):
            return _as(a, source, target)
    except pa.ArrowInvalid:
        raise Rows("integer out of range") from None
    if source == BOOL and target.integer:
        return a.cast(_arrow(target))
    if source.integer and target == BOOL:
        return pc.not_equal(a, 0)
    if source == DATE and target == TIMESTAMP:
        return a.cast(_arrow(TIMESTAMP))
    raise NoKernel(f"cast {source} to {target}")


def _func(e: Any, cx: _Cx) -> Value:
    """A function with an Arrow form (:attr:`Function.arrow`); the others have no kernel."""
    kernel = e.function.arrow
    if kernel is None or not e.function.strict:
        raise NoKernel(f"{e.name}()")
    args = [_eval(a, cx) for a in e.args]
    try:
        out = kernel(*args)
    except pa.ArrowInvalid:
        raise Rows(f"{e.name}() failed") from None
    if e.type == NUMERIC or out.type == _arrow(e.type):
        return out
    return out.cast(_arrow(e.type))


_KERNELS: dict[type, Callable[[Any, _Cx], Value]] = {
    X.Col: _col,
    X.Lit: _lit,
    X.MzNow: _mznow,
    X.Arith: _arith,
    X.Neg: _neg,
    X.Cmp: _cmp,
    X.And: _and,
    X.Or: _or,
    X.Not: _not,
    X.IsNull: _isnull,
    X.Case: _case,
    X.Coalesce: _coalesce,
    X.NullIf: _nullif,
    X.InList: _inlist,
    X.Like: _like,
    X.Cast: _cast,
    Func: _func,
}
