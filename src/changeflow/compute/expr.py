"""Scalar expressions: a typed tree with PostgreSQL's semantics, evaluated row by row.

Every node knows its type and nullability when it is built, so an ill-typed expression is a
:class:`PlanError` before anything runs. ``eval(row, now)`` is the reference semantics: NULL is
``None`` and propagates, AND/OR/NOT are three-valued, integer overflow and division by zero are
:class:`EvalError`. ``str(expr)`` is SQL text (for EXPLAIN). ``mz_now()`` is the time at which a
row is read (an int time, epoch milliseconds for tables).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from changeflow.compute.types import (
    BOOL,
    DATE,
    FLOAT8,
    INT4,
    INT8,
    INT_RANGES,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
    common_numeric,
)
from changeflow.errors import EvalError, PlanError


class Expr:
    """A scalar expression; subclasses are frozen dataclasses with ``type`` and ``nullable``."""

    type: SqlType
    nullable: bool

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        return ()

    def mentions_now(self) -> bool:
        """Does ``mz_now()`` occur in this expression?"""
        return isinstance(self, MzNow) or any(c.mentions_now() for c in self.children())

    def columns(self) -> set[int]:
        """The input columns the expression reads."""
        own = {self.index} if isinstance(self, Col) else set()
        return own.union(*(c.columns() for c in self.children()))


def map_columns(expr: Expr, fn: Callable[[int], int]) -> Expr:
    """``expr`` with every column reference's index mapped by ``fn`` (to move a predicate
    onto another input)."""
    if isinstance(expr, Col):
        return replace(expr, index=fn(expr.index))
    changed = {f.name: _mapped(getattr(expr, f.name), fn) for f in fields(expr) if f.init}  # type: ignore[arg-type]
    return replace(expr, **changed)  # type: ignore[type-var]


def _mapped(value: Any, fn: Callable[[int], int]) -> Any:
    if isinstance(value, Expr):
        return map_columns(value, fn)
    if isinstance(value, tuple):
        return tuple(_mapped(v, fn) for v in value)
    return value


def _typed(obj: Any, kind: SqlType, nullable: bool) -> None:
    object.__setattr__(obj, "type", kind)
    object.__setattr__(obj, "nullable", nullable)


def _mismatch(what: str, *types: SqlType) -> PlanError:
    shown = ", ".join(str(t) for t in types)
    return PlanError(f"{what} is not defined for {shown}", sqlstate="42883")


@dataclass(frozen=True)
class Col(Expr):
    """Input column ``index``, of a known type (plans check it against their input)."""

    index: int
    type: SqlType
    nullable: bool = True
    name: str = ""

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        return row[self.index]

    def __str__(self) -> str:
        return self.name or f"#{self.index}"


@dataclass(frozen=True)
class Lit(Expr):
    """A constant; ``None`` is NULL (of ``type``, or ``unknown`` until cast)."""

    value: Any
    type: SqlType = NULLTYPE
    nullable: bool = field(init=False, default=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nullable", self.value is None)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        return self.value

    def __str__(self) -> str:
        if self.value is None:
            return "NULL"
        if self.type == TEXT:
            return "'" + str(self.value).replace("'", "''") + "'"
        if self.type == BOOL:
            return "TRUE" if self.value else "FALSE"
        if self.type in (DATE, TIMESTAMP, TIMESTAMPTZ):
            return f"{self.type.name.upper()} '{to_text(self.value, self.type)}'"
        return to_text(self.value, self.type)


def lit(value: Any) -> Lit:
    """A literal typed from its Python value (int is bigint when out of integer's range)."""
    if value is None:
        return Lit(None)
    if isinstance(value, bool):
        return Lit(value, BOOL)
    if isinstance(value, int):
        return Lit(value, INT4 if -(2**31) <= value < 2**31 else INT8)
    if isinstance(value, float):
        return Lit(value, FLOAT8)
    if isinstance(value, Decimal):
        return Lit(value, NUMERIC)
    if isinstance(value, str):
        return Lit(value, TEXT)
    if isinstance(value, datetime):
        return Lit(value, TIMESTAMPTZ if value.tzinfo else TIMESTAMP)
    if isinstance(value, date):
        return Lit(value, DATE)
    raise PlanError(f"no SQL literal for {value!r}")


@dataclass(frozen=True)
class MzNow(Expr):
    """``mz_now()``: the time of the read, a bigint."""

    type: SqlType = field(init=False, default=INT8)
    nullable: bool = field(init=False, default=False)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        if now is None:
            raise PlanError("mz_now() may appear only where a time is known (a view's filter)")
        return now

    def __str__(self) -> str:
        return "mz_now()"


@dataclass(frozen=True)
class Raise(Expr):
    """An error when evaluated, of no type of its own (NULL-typed): with :class:`Case`, a
    condition that fails the query (a scalar subquery that returns more than one row)."""

    message: str
    sqlstate: str = "XX000"
    type: SqlType = field(init=False, default=NULLTYPE)
    nullable: bool = field(init=False, default=True)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        raise EvalError(self.message, sqlstate=self.sqlstate)

    def __str__(self) -> str:
        return "error(" + repr(self.message) + ")"


# -- arithmetic ------------------------------------------------------------------------------


def check_range(value: Any, kind: SqlType) -> Any:
    """``value`` if it fits ``kind``; an integer out of range or a float overflow is an error."""
    bound = INT_RANGES.get(kind)
    if bound is not None and not -bound <= value < bound:
        raise EvalError(f"{kind} out of range", sqlstate="22003")
    if kind == FLOAT8 and isinstance(value, float) and math.isinf(value):
        raise EvalError("value out of range: overflow", sqlstate="22003")
    return value


def _div(a: Any, b: Any, kind: SqlType) -> Any:
    if b == 0:
        raise EvalError("division by zero", sqlstate="22012")
    if kind.integer:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q  # truncates toward zero
    if kind == NUMERIC:
        return numeric_div(Decimal(a), Decimal(b))
    return a / b


def _weight(x: Decimal) -> tuple[int, int]:
    """A numeric's base-10000 weight and first base-10000 digit, as PostgreSQL stores it."""
    x = abs(x)
    if x == 0:
        return 0, 0
    weight = x.adjusted() // 4
    return weight, int(x.scaleb(-4 * weight))


def div_scale(a: Decimal, b: Decimal) -> int:
    """The scale of PostgreSQL's numeric quotient a / b (``select_div_scale``): at least 16
    significant digits, and no fewer decimals than either operand shows."""
    (w1, f1), (w2, f2) = _weight(a), _weight(b)
    qweight = w1 - w2 - (1 if f1 <= f2 else 0)
    scales = (max(-int(x.as_tuple().exponent), 0) for x in (a, b))
    return min(max(16 - qweight * 4, *scales, 0), 1000)


def numeric_div(a: Decimal, b: Decimal) -> Decimal:
    """``a / b`` rounded (half away from zero) to PostgreSQL's scale for it, but to no fewer
    than the 10 decimals a view stores numerics at: Spark's hydration of a view computes the
    quotient with at least that many, and the two must agree."""
    scale = max(div_scale(a, b), 10)
    with localcontext() as ctx:
        ctx.prec = max(a.adjusted() - b.adjusted(), 0) + scale + 10
        return (a / b).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def _mod(a: Any, b: Any, kind: SqlType) -> Any:
    if b == 0:
        raise EvalError("division by zero", sqlstate="22012")
    if kind == FLOAT8:
        return math.fmod(a, b)
    if kind == NUMERIC:
        with localcontext() as ctx:
            ctx.prec = 80
            return a % b  # Decimal's remainder has the dividend's sign, as PostgreSQL's
    return a - b * _div(a, b, kind)  # the sign of the dividend


_ARITH = {
    "+": lambda a, b, k: a + b,
    "-": lambda a, b, k: a - b,
    "*": lambda a, b, k: a * b,
    "/": _div,
    "%": _mod,
}


def _as(value: Any, kind: SqlType) -> Any:
    """A numeric operand in the representation of ``kind``."""
    if kind == FLOAT8:
        return float(value)
    if kind == NUMERIC and not isinstance(value, Decimal):
        return Decimal(value)
    return value


@dataclass(frozen=True)
class _Binary(Expr):
    """``a op b``: both sides evaluated (an error on either is raised), NULL if either is."""

    op: str
    a: Expr
    b: Expr

    def __post_init__(self) -> None:
        """Each operator checks its operands' types and sets its own."""
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        a, b = self.a.eval(row, now), self.b.eval(row, now)
        return None if a is None or b is None else self.apply(a, b)

    def apply(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def __str__(self) -> str:
        return f"({self.a} {self.op} {self.b})"


class Arith(_Binary):
    """``a op b`` for ``+ - * / %`` on numbers; ``date ± integer`` and ``date - date`` too."""

    def __post_init__(self) -> None:
        if self.op not in _ARITH:
            raise PlanError(f"unknown operator {self.op!r}")
        ta, tb = self.a.type, self.b.type
        nullable = self.a.nullable or self.b.nullable
        if ta == DATE and tb.integer and self.op in "+-":
            return _typed(self, DATE, nullable)
        if ta == DATE and tb == DATE and self.op == "-":
            return _typed(self, INT4, nullable)
        ta, tb = (tb if ta == NULLTYPE else ta), (ta if tb == NULLTYPE else tb)
        if not (ta.numeric and tb.numeric):
            raise _mismatch(f"operator {self.op}", self.a.type, self.b.type)
        _typed(self, common_numeric(ta, tb), nullable)

    def apply(self, a: Any, b: Any) -> Any:
        if self.type == DATE:
            return _date_arith(self.op, a, b)
        if self.a.type == DATE:
            return (a - b).days
        kind = self.type
        return check_range(_ARITH[self.op](_as(a, kind), _as(b, kind), kind), kind)


def _date_arith(op: str, a: date, days: int) -> date:
    try:
        return date.fromordinal(a.toordinal() + (days if op == "+" else -days))
    except (ValueError, OverflowError):
        raise EvalError("date out of range", sqlstate="22008") from None


@dataclass(frozen=True)
class Neg(Expr):
    """``-a``."""

    a: Expr

    def __post_init__(self) -> None:
        if not self.a.type.numeric:
            raise _mismatch("unary -", self.a.type)
        _typed(self, self.a.type, self.a.nullable)

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        a = self.a.eval(row, now)
        return None if a is None else check_range(-a, self.type)

    def __str__(self) -> str:
        return f"(-{self.a})"


# -- comparison and logic --------------------------------------------------------------------


def comparable(a: SqlType, b: SqlType) -> bool:
    """Can values of ``a`` and ``b`` be compared (and so be equal)?"""
    if NULLTYPE in (a, b) or a == b:
        return True
    if a.numeric and b.numeric:
        return True
    stamps = {DATE, TIMESTAMP, TIMESTAMPTZ}
    return a in stamps and b in stamps and TIMESTAMPTZ not in (a, b) or {a, b} == {DATE, TIMESTAMP}


def _stamp(value: Any) -> Any:
    """A date compared with a timestamp is its midnight."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day)
    return value


_CMP = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def compare_values(op: str, a: Any, b: Any) -> bool:
    """``a op b`` for non-NULL values of comparable types."""
    if isinstance(a, date) != isinstance(b, date) or type(a) is not type(b):
        if isinstance(a, date):
            a, b = _stamp(a), _stamp(b)
        elif isinstance(a, Decimal) or isinstance(b, Decimal):
            if isinstance(a, float) or isinstance(b, float):
                a, b = float(a), float(b)
            else:
                a, b = Decimal(a), Decimal(b)
    return _CMP[op](a, b)


class Cmp(_Binary):
    """``a op b`` for ``= <> < <= > >=``; NULL if either side is NULL."""

    def __post_init__(self) -> None:
        if self.op not in _CMP:
            raise PlanError(f"unknown comparison {self.op!r}")
        if not comparable(self.a.type, self.b.type):
            raise _mismatch(f"operator {self.op}", self.a.type, self.b.type)
        _typed(self, BOOL, self.a.nullable or self.b.nullable)

    def apply(self, a: Any, b: Any) -> Any:
        return compare_values(self.op, a, b)


def _check_bool(e: Expr, where: str) -> None:
    if e.type not in (BOOL, NULLTYPE):
        raise PlanError(
            f"argument of {where} must be type boolean, not type {e.type}", sqlstate="42804"
        )


@dataclass(frozen=True)
class _Junction(Expr):
    """Three-valued AND or OR: ``wins`` (FALSE for AND, TRUE for OR) beats NULL."""

    args: tuple[Expr, ...]
    wins = False
    word = "AND"

    def __post_init__(self) -> None:
        for a in self.args:
            _check_bool(a, self.word)
        _typed(self, BOOL, any(a.nullable for a in self.args))

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        result: bool | None = not self.wins
        for a in self.args:
            v = a.eval(row, now)
            if v is self.wins:
                return self.wins
            if v is None:
                result = None
        return result

    def __str__(self) -> str:
        return "(" + f" {self.word} ".join(map(str, self.args)) + ")"


class And(_Junction):
    """Three-valued AND: FALSE wins over NULL."""


class Or(_Junction):
    """Three-valued OR: TRUE wins over NULL."""

    wins = True
    word = "OR"


@dataclass(frozen=True)
class Not(Expr):
    """``NOT a``; NOT NULL is NULL."""

    a: Expr

    def __post_init__(self) -> None:
        _check_bool(self.a, "NOT")
        _typed(self, BOOL, self.a.nullable)

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        v = self.a.eval(row, now)
        return None if v is None else not v

    def __str__(self) -> str:
        return f"(NOT {self.a})"


@dataclass(frozen=True)
class IsNull(Expr):
    """``a IS NULL`` (``negated``: ``IS NOT NULL``); never NULL itself."""

    a: Expr
    negated: bool = False

    def __post_init__(self) -> None:
        _typed(self, BOOL, False)

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        return (self.a.eval(row, now) is None) != self.negated

    def __str__(self) -> str:
        return f"({self.a} IS {'NOT ' if self.negated else ''}NULL)"


def common_type(exprs: tuple[Expr, ...], where: str) -> SqlType:
    """The type that the branches of CASE, COALESCE or IN unify to."""
    kinds = [e.type for e in exprs if e.type != NULLTYPE]
    if not kinds:
        return NULLTYPE
    if all(k.numeric for k in kinds):
        best = kinds[0]
        for k in kinds[1:]:
            best = common_numeric(best, k)
        return best
    if any(k != kinds[0] for k in kinds):
        raise PlanError(
            f"{where} types {' and '.join(sorted({str(k) for k in kinds}))} cannot be matched",
            sqlstate="42804",
        )
    return kinds[0]


def _coerce(value: Any, kind: SqlType) -> Any:
    """A branch's value in the unified type (numbers promoted; others as they are)."""
    return _as(value, kind) if value is not None and kind.numeric else value


@dataclass(frozen=True)
class Case(Expr):
    """``CASE WHEN c THEN r … ELSE e END``: the first TRUE condition's result."""

    whens: tuple[tuple[Expr, Expr], ...]
    otherwise: Expr = field(default_factory=lambda: Lit(None))

    def __post_init__(self) -> None:
        for cond, _ in self.whens:
            _check_bool(cond, "CASE/WHEN")
        results = (*(r for _, r in self.whens), self.otherwise)
        _typed(self, common_type(results, "CASE"), any(r.nullable for r in results))

    def children(self) -> tuple[Expr, ...]:
        return (*(e for pair in self.whens for e in pair), self.otherwise)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        for cond, result in self.whens:
            if cond.eval(row, now) is True:
                return _coerce(result.eval(row, now), self.type)
        return _coerce(self.otherwise.eval(row, now), self.type)

    def __str__(self) -> str:
        body = " ".join(f"WHEN {c} THEN {r}" for c, r in self.whens)
        return f"CASE {body} ELSE {self.otherwise} END"


@dataclass(frozen=True)
class Coalesce(Expr):
    """``COALESCE(a, b, …)``: the first non-NULL argument."""

    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        _typed(self, common_type(self.args, "COALESCE"), all(a.nullable for a in self.args))

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        for a in self.args:
            v = a.eval(row, now)
            if v is not None:
                return _coerce(v, self.type)
        return None

    def __str__(self) -> str:
        return f"COALESCE({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class NullIf(Expr):
    """``NULLIF(a, b)``: NULL if ``a = b``, else ``a``."""

    a: Expr
    b: Expr

    def __post_init__(self) -> None:
        if not comparable(self.a.type, self.b.type):
            raise _mismatch("NULLIF", self.a.type, self.b.type)
        _typed(self, self.a.type, True)

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        a, b = self.a.eval(row, now), self.b.eval(row, now)
        if a is not None and b is not None and compare_values("=", a, b):
            return None
        return a

    def __str__(self) -> str:
        return f"NULLIF({self.a}, {self.b})"


@dataclass(frozen=True)
class InList(Expr):
    """``a IN (x, y, …)``: TRUE on a match, else NULL if any side is NULL, else FALSE."""

    a: Expr
    items: tuple[Expr, ...]
    negated: bool = False

    def __post_init__(self) -> None:
        for item in self.items:
            if not comparable(self.a.type, item.type):
                raise _mismatch("IN", self.a.type, item.type)
        nullable = self.a.nullable or any(i.nullable for i in self.items)
        _typed(self, BOOL, nullable)

    def children(self) -> tuple[Expr, ...]:
        return (self.a, *self.items)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        a = self.a.eval(row, now)
        if a is None:
            return None
        result: bool | None = False
        for item in self.items:
            v = item.eval(row, now)
            if v is None:
                result = None
            elif compare_values("=", a, v):
                return not self.negated
        return None if result is None else self.negated

    def __str__(self) -> str:
        items = ", ".join(map(str, self.items))
        return f"({self.a} {'NOT ' if self.negated else ''}IN ({items}))"


def like_pattern(pattern: str, quote: Callable[[str], str] = re.escape) -> str:
    """A LIKE pattern (``%``, ``_``, backslash escapes) as regular-expression text, each literal
    character quoted by ``quote`` (Python's or Java's way)."""
    out, escaped = [], False
    for ch in pattern:
        if escaped:
            out.append(quote(ch))
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(quote(ch))
    if escaped:
        raise EvalError("LIKE pattern must not end with escape character", sqlstate="22025")
    return "".join(out)


def like_regex(pattern: str, case_insensitive: bool = False) -> re.Pattern[str]:
    """A LIKE pattern as a compiled regular expression (matched against the whole value)."""
    flags = re.DOTALL | (re.IGNORECASE if case_insensitive else 0)
    return re.compile(like_pattern(pattern), flags)


@dataclass(frozen=True)
class Like(Expr):
    """``a [NOT] [I]LIKE pattern``."""

    a: Expr
    pattern: Expr
    negated: bool = False
    case_insensitive: bool = False

    def __post_init__(self) -> None:
        for e in (self.a, self.pattern):
            if e.type not in (TEXT, NULLTYPE):
                raise _mismatch("LIKE", self.a.type, self.pattern.type)
        _typed(self, BOOL, self.a.nullable or self.pattern.nullable)

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.pattern)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        a, p = self.a.eval(row, now), self.pattern.eval(row, now)
        if a is None or p is None:
            return None
        return (like_regex(p, self.case_insensitive).fullmatch(a) is not None) != self.negated

    def __str__(self) -> str:
        op = ("NOT " if self.negated else "") + ("ILIKE" if self.case_insensitive else "LIKE")
        return f"({self.a} {op} {self.pattern})"


# -- casts -----------------------------------------------------------------------------------


def float_text(f: float) -> str:
    """A double as PostgreSQL prints it: the shortest exact digits, an exponent beyond 1e15."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    d = Decimal(repr(f))
    exponent = d.adjusted()
    if -4 <= exponent < 15:
        text = format(d, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    sign, digits, _ = d.as_tuple()
    mantissa = "".join(map(str, digits)).rstrip("0") or "0"
    body = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
    return f"{'-' if sign else ''}{body}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def to_text(value: Any, kind: SqlType) -> str:
    """A non-NULL value as PostgreSQL's text output."""
    if kind == BOOL:
        return "true" if value else "false"
    if kind == FLOAT8:
        return float_text(value)
    if kind in (TIMESTAMP, TIMESTAMPTZ):
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        return text + ("+00" if kind == TIMESTAMPTZ else "")
    if kind == DATE:
        return value.isoformat()
    return str(value)


_TRUE = {"t", "true", "y", "yes", "on", "1"}
_FALSE = {"f", "false", "n", "no", "off", "0"}


def _syntax(kind: SqlType, text: str) -> EvalError:
    return EvalError(f'invalid input syntax for type {kind}: "{text}"', sqlstate="22P02")


def from_text(text: str, kind: SqlType) -> Any:
    """Text read as a value of ``kind``, as a PostgreSQL cast from text does."""
    s = text.strip()
    try:
        if kind == BOOL:
            if s.lower() in _TRUE | _FALSE:
                return s.lower() in _TRUE
            raise _syntax(kind, text)
        if kind.integer:
            return check_range(int(s), kind)
        if kind == NUMERIC:
            return Decimal(s)
        if kind == FLOAT8:
            return float(s)
        if kind == DATE:
            return date.fromisoformat(s)
        if kind in (TIMESTAMP, TIMESTAMPTZ):
            stamp = datetime.fromisoformat(s)
            if kind == TIMESTAMPTZ:
                from datetime import UTC

                stamp = stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)
            else:
                stamp = stamp.replace(tzinfo=None)
            return stamp
    except (ValueError, InvalidOperation):
        raise _syntax(kind, text) from None
    return text


def cast_value(value: Any, source: SqlType, target: SqlType) -> Any:
    """``value::target`` for a non-NULL value of ``source``."""
    if source in (target, NULLTYPE):
        return value
    if target == TEXT:
        return to_text(value, source)
    if source == TEXT:
        return from_text(value, target)
    if target.integer and source.numeric:
        if source == FLOAT8:
            if math.isnan(value) or math.isinf(value):
                raise EvalError(f"{target} out of range", sqlstate="22003")
            return check_range(round(value), target)  # half to even, as rint
        if source == NUMERIC:
            return check_range(int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP)), target)
        return check_range(value, target)
    if target == NUMERIC and source.numeric:
        if source == FLOAT8 and (math.isnan(value) or math.isinf(value)):
            raise EvalError("cannot convert infinity to numeric", sqlstate="22003")
        return Decimal(repr(value)) if source == FLOAT8 else Decimal(value)
    if target == FLOAT8 and source.numeric:
        return float(value)
    if target == BOOL and source.integer:
        return value != 0
    if target.integer and source == BOOL:
        return int(value)
    if target == DATE and source in (TIMESTAMP, TIMESTAMPTZ):
        return value.date()
    if target == TIMESTAMP and source == DATE:
        return datetime(value.year, value.month, value.day)
    if target == TIMESTAMPTZ and source == DATE:
        from datetime import UTC

        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if {source, target} == {TIMESTAMP, TIMESTAMPTZ}:
        from datetime import UTC

        return value.replace(tzinfo=UTC if target == TIMESTAMPTZ else None)
    raise EvalError(f"cannot cast type {source} to {target}", sqlstate="42846")


def castable(source: SqlType, target: SqlType) -> bool:
    """Is there a cast from ``source`` to ``target``?"""
    if source in (target, NULLTYPE) or TEXT in (source, target):
        return True
    if source.numeric and target.numeric:
        return True
    if (source.integer and target == BOOL) or (source == BOOL and target.integer):
        return True
    stamps = {DATE, TIMESTAMP, TIMESTAMPTZ}
    return source in stamps and target in stamps


@dataclass(frozen=True)
class Cast(Expr):
    """``CAST(a AS type)``."""

    a: Expr
    to: SqlType

    def __post_init__(self) -> None:
        if not castable(self.a.type, self.to):
            raise PlanError(f"cannot cast type {self.a.type} to {self.to}", sqlstate="42846")
        _typed(self, self.to, self.a.nullable)

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        v = self.a.eval(row, now)
        return None if v is None else cast_value(v, self.a.type, self.to)

    def __str__(self) -> str:
        return f"CAST({self.a} AS {self.to})"
