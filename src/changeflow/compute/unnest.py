"""Unnest: the :class:`Unnest` plan node and its meaning.

``Unnest(input, array)`` gives each input row once per element of its ``array`` (an expression
over the row): the row, then the element and, with ``ordinality``, its position from 1. A row
whose array is NULL or empty gives nothing, as ``FROM t, unnest(t.a)`` does in PostgreSQL. The
operator is linear (each update maps on its own), so a view maintains it row by row; it runs on
the in-process tier.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, localcontext
from typing import Any

from changeflow.compute import plan as P
from changeflow.compute.array_shape import flat
from changeflow.compute.expr import Expr, _typed
from changeflow.compute.intervals import Interval, add_to_stamp, stamp_of
from changeflow.compute.jsonb import as_text, from_value
from changeflow.compute.types import (
    DATE,
    INT4,
    INT8,
    INTERVAL,
    JSONB,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    Column,
    Schema,
    SqlType,
    array_of,
)
from changeflow.errors import EvalError, PlanError

MAX_ROWS = 1_000_000  # the most values one generate_series gives here

Row = tuple[Any, ...]


def no_unnest(kind: SqlType) -> PlanError:
    """The error of ``unnest`` of a value that is no array: 42725 for a NULL or a quoted
    literal's unknown type (PostgreSQL has several unnests), else 42883."""
    if kind is NULLTYPE:
        return PlanError("function unnest(unknown) is not unique", sqlstate="42725")
    return PlanError(f"function unnest({kind}) does not exist", sqlstate="42883")


@dataclass(frozen=True)
class Unnest(P.Plan):
    """Each input row once per element of ``array`` (see the module docstring)."""

    input: P.Plan
    array: Expr
    ordinality: bool = False
    names: tuple[str, ...] = ("unnest", "ordinality")
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        P.check_expr(self.array, self.input.schema, "Unnest")
        element = self.array.type.element
        if element is None:
            raise no_unnest(self.array.type)
        added = [Column(self.names[0], element, True)]
        if self.ordinality:
            added.append(Column(self.names[1], INT8, False))
        P._schema(self, (*self.input.schema, *added))

    def inputs(self) -> tuple[P.Plan, ...]:
        return (self.input,)

    def describe(self) -> str:
        return f"Unnest {self.array}" + (" WITH ORDINALITY" if self.ordinality else "")

    def rows(self, row: Row) -> list[Row]:
        """The output rows of one input row."""
        values = flat(self.array.eval(row) or ())
        if self.ordinality:
            return [(*row, v, i) for i, v in enumerate(values, 1)]
        return [(*row, v) for v in values]


def has_unnest(plan: P.Plan) -> bool:
    """Does ``plan`` unnest a column anywhere (an in-process-tier operator)?"""
    return isinstance(plan, Unnest) or any(has_unnest(p) for p in plan.inputs())


_STAMPS = (DATE, TIMESTAMP, TIMESTAMPTZ)


def series_type(args: list[Expr]) -> SqlType:
    """The element type of ``generate_series(start, stop[, step])``: the widest of integer
    or numeric arguments; timestamps stepped by an interval (timestamptz unless both bounds are
    timestamps: a date is its midnight, UTC); 42883 for anything else."""
    kinds = [a.type for a in args]
    known = [k for k in kinds if k is not NULLTYPE]
    bounds = kinds[:2]
    if len(kinds) == 3 and kinds[2] in (INTERVAL, NULLTYPE) and any(k in _STAMPS for k in bounds):
        if all(k in (*_STAMPS, NULLTYPE) for k in bounds):
            return TIMESTAMP if all(k in (TIMESTAMP, NULLTYPE) for k in bounds) else TIMESTAMPTZ
    elif all(k.numeric and k.rank <= NUMERIC.rank for k in known):
        return max(known, key=lambda k: k.rank) if known else INT4
    shown = ", ".join(str(k) for k in kinds)
    raise PlanError(f"function generate_series({shown}) does not exist", sqlstate="42883")


@dataclass(frozen=True)
class Series(Expr):
    """``generate_series(start, stop[, step])`` of a row as an array, for an :class:`Unnest`
    (``SELECT generate_series(1, n)``, ``FROM t, generate_series(1, t.n)``): integers,
    numerics or timestamps (:func:`series_type`), NULL when an argument is NULL; at most
    :data:`MAX_ROWS` elements."""

    start: Expr
    stop: Expr
    step: Expr | None = None

    def __post_init__(self) -> None:
        args = [a for a in (self.start, self.stop, self.step) if a is not None]
        _typed(self, array_of(series_type(args)), any(a.nullable for a in args))

    def children(self) -> tuple[Expr, ...]:
        return tuple(a for a in (self.start, self.stop, self.step) if a is not None)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        values = [a.eval(row, now) for a in self.children()]
        if any(v is None for v in values):
            return None
        return tuple(series(values, self.type.element))

    def __str__(self) -> str:
        return f"generate_series({', '.join(map(str, self.children()))})"


def series(values: list[Any], kind: SqlType) -> list[Any]:
    """The values of ``generate_series(first, last[, by])`` of element type ``kind``; a zero
    step or too many values are errors."""
    if kind in (TIMESTAMP, TIMESTAMPTZ):
        return _stamps(*values, zone=kind is TIMESTAMPTZ)
    first, last, by = (*values, 1) if len(values) == 2 else values
    for what, v in (("start value", first), ("stop value", last), ("step size", by)):
        if isinstance(v, Decimal) and not v.is_finite():
            shown = "NaN" if v.is_nan() else "infinity"
            raise EvalError(f"{what} cannot be {shown}", sqlstate="22023")
    if by == 0:
        raise EvalError("step size cannot equal zero", sqlstate="22023")
    with localcontext() as ctx:
        ctx.prec = 1000  # the count of a wide numeric range, exactly (then checked)
        count = 0 if (last - first) * by < 0 else int((last - first) // by) + 1
    _check_count(count)
    convert = Decimal if kind is NUMERIC else int
    return [convert(first) + i * convert(by) for i in range(count)]


def _stamps(first: date, last: date, by: Interval, zone: bool) -> list[datetime]:
    """Timestamps from ``first`` by ``by`` (each added to the one before, as PostgreSQL
    adds them) while not past ``last``."""
    if by.span() == 0:
        raise EvalError("step size cannot equal zero", sqlstate="22023")
    start, stop = (stamp_of(v) for v in (first, last))
    if zone:
        start, stop = (s if s.tzinfo else s.replace(tzinfo=UTC) for s in (start, stop))
    out, now = [], start
    while now <= stop if by.span() > 0 else now >= stop:
        out.append(now)
        _check_count(len(out))
        now = add_to_stamp(now, by)
    return out


def _check_count(count: int) -> None:
    if count > MAX_ROWS:
        raise EvalError(
            f"generate_series of {count} rows: at most {MAX_ROWS} are supported here",
            sqlstate="0A000",
        )


@dataclass(frozen=True)
class JsonbElements(Expr):
    """The elements of a jsonb array as an array (``jsonb[]``, or ``text[]`` as ``->>`` reads
    them): what ``jsonb_array_elements[_text](t.j)`` unnests (22023 for a non-array). With
    ``each``, an object's members as ``[key, value]`` pairs (``jsonb[]``): what
    ``jsonb_each[_text](t.j)`` unnests and splits (22023 for a non-object)."""

    j: Expr
    text: bool = False
    each: bool = False

    def __post_init__(self) -> None:
        if self.j.type not in (JSONB, NULLTYPE):
            raise PlanError(
                f"function {self._name()}({self.j.type}) does not exist", sqlstate="42883"
            )
        _typed(self, array_of(TEXT if self.text and not self.each else JSONB), self.j.nullable)

    def _name(self) -> str:
        return ("jsonb_each" if self.each else "jsonb_array_elements") + "_text" * self.text

    def children(self) -> tuple[Expr, ...]:
        return (self.j,)

    def eval(self, row: Row, now: int | None = None) -> Any:
        j = self.j.eval(row, now)
        if j is None:
            return None
        value = j.value()
        if self.each:
            if not isinstance(value, dict):
                raise EvalError("cannot call jsonb_each on a non-object", sqlstate="22023")
            return tuple(from_value([k, v]) for k, v in value.items())
        if not isinstance(value, list):
            what = "a scalar" if not isinstance(value, dict) else "a non-array"
            raise EvalError(f"cannot extract elements from {what}", sqlstate="22023")
        elements = [from_value(v) for v in value]
        return tuple(as_text(e) for e in elements) if self.text else tuple(elements)

    def __str__(self) -> str:
        return f"{self._name()}({self.j})"
