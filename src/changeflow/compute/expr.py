"""Scalar expressions: a typed tree with PostgreSQL's semantics.

Every node knows its type and nullability when it is built, so an ill-typed expression is a
:class:`PlanError` before anything runs. ``eval(row, now)`` is the reference semantics, row by
row, on the value operations of :mod:`scalars`: NULL is ``None`` and propagates, AND/OR/NOT are
three-valued, integer overflow and division by zero are :class:`EvalError`. The other backends
(:mod:`columnar` on Arrow batches, :mod:`spark_expr` on Spark Columns) compile the same tree.
``str(expr)`` is SQL text (for EXPLAIN). ``mz_now()`` is the time at which a row is read (an int
time, epoch milliseconds for tables).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from changeflow.compute.intervals import arith_type, interval_arith
from changeflow.compute.scalars import (
    ARITH,
    CMP,
    as_type,
    cast_value,
    castable,
    check_range,
    coerce,
    comparable,
    compare_values,
    date_arith,
    like_regex,
    to_text,
)
from changeflow.compute.time_of_day import time_arith, time_arith_type
from changeflow.compute.types import (
    BOOL,
    DATE,
    FLOAT8,
    INT4,
    INT8,
    INTERVAL,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
    array_of,
    common_numeric,
    operand_numeric,
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
    return _columns_made(expr, lambda c: replace(c, index=fn(c.index)))


def with_columns(expr: Expr, values: Sequence[Expr]) -> Expr:
    """``expr`` with each column reference ``i`` replaced by the expression ``values[i]``."""
    return _columns_made(expr, lambda c: values[c.index])


def _columns_made(expr: Expr, made: Callable[[Col], Expr]) -> Expr:
    if isinstance(expr, Col):
        return made(expr)
    changed = {f.name: _mapped(getattr(expr, f.name), made) for f in fields(expr) if f.init}  # type: ignore[arg-type]
    return replace(expr, **changed)  # type: ignore[type-var]


def _mapped(value: Any, made: Callable[[Col], Expr]) -> Any:
    if isinstance(value, Expr):
        return _columns_made(value, made)
    if isinstance(value, tuple):
        return tuple(_mapped(v, made) for v in value)
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


# -- operators -------------------------------------------------------------------------------


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
        if self.op not in ARITH:
            raise PlanError(f"unknown operator {self.op!r}")
        ta, tb = self.a.type, self.b.type
        nullable = self.a.nullable or self.b.nullable
        if (kind := arith_type(self.op, ta, tb) or time_arith_type(self.op, ta, tb)) is not None:
            return _typed(self, kind, nullable)
        if ta == DATE and tb.integer and self.op in "+-":
            return _typed(self, DATE, nullable)
        if ta == DATE and tb == DATE and self.op == "-":
            return _typed(self, INT4, nullable)
        ta, tb = (tb if ta == NULLTYPE else ta), (ta if tb == NULLTYPE else tb)
        if not (ta.numeric and tb.numeric):
            raise _mismatch(f"operator {self.op}", self.a.type, self.b.type)
        _typed(self, operand_numeric(ta, tb), nullable)

    def apply(self, a: Any, b: Any) -> Any:
        if TIME in (self.a.type, self.b.type):
            return time_arith(self.op, a, b)
        if INTERVAL in (self.type, self.a.type, self.b.type):
            return interval_arith(self.op, a, b)
        if self.type == DATE:
            return date_arith(self.op, a, b)
        if self.a.type == DATE:
            return (a - b).days
        kind = self.type
        a, b = as_type(a, kind), as_type(b, kind)
        out = ARITH[self.op](a, b, kind)
        if kind.floating and math.isinf(out) and (math.isinf(a) or math.isinf(b)):
            return out  # an infinite operand's infinity, no overflow (as PostgreSQL)
        return check_range(out, kind)


@dataclass(frozen=True)
class Neg(Expr):
    """``-a``."""

    a: Expr

    def __post_init__(self) -> None:
        if not self.a.type.numeric and self.a.type != INTERVAL:
            raise _mismatch("unary -", self.a.type)
        _typed(self, self.a.type, self.a.nullable)

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        a = self.a.eval(row, now)
        if a is None or self.type == INTERVAL:
            return None if a is None else -a
        return -a if self.type.floating else check_range(-a, self.type)  # -Infinity too

    def __str__(self) -> str:
        return f"(-{self.a})"


class Cmp(_Binary):
    """``a op b`` for ``= <> < <= > >=``; NULL if either side is NULL."""

    def __post_init__(self) -> None:
        if self.op not in CMP:
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
    elements = [k.element for k in kinds]
    if all(e is not None and e.numeric for e in elements) and len(set(kinds)) > 1:
        element = elements[0]  # arrays of numbers: of the widest of their elements
        for e in elements[1:]:
            element = common_numeric(element, e)  # type: ignore[arg-type]
        return array_of(element)  # type: ignore[arg-type]
    if any(k != kinds[0] for k in kinds):
        raise PlanError(
            f"{where} types {' and '.join(sorted({str(k) for k in kinds}))} cannot be matched",
            sqlstate="42804",
        )
    return kinds[0]


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
                return coerce(result.eval(row, now), self.type)
        return coerce(self.otherwise.eval(row, now), self.type)

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
                return coerce(v, self.type)
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
