"""Array expressions: ``ARRAY[…]``, subscripts and ``x op ANY/ALL(array)``.

An array value is a tuple of its elements (subscripts from 1), or of its sub-arrays for
several dimensions (``array_shape``). The functions on
arrays (``cardinality``, ``array_length``…) are in ``functions/arrays.py``; the text form
(``{1,2,NULL}``) is in ``scalars.py`` with the other casts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from changeflow.compute.array_shape import element_at, flat, nested, of_arrays
from changeflow.compute.expr import Expr, _mismatch, _typed, common_type
from changeflow.compute.scalars import (
    CMP,
    cast_value,
    coerce,
    comparable,
    compare_values,
    like_regex,
)
from changeflow.compute.types import BOOL, NULLTYPE, TEXT, array_of
from changeflow.errors import PlanError


@dataclass(frozen=True)
class ArrayOf(Expr):
    """``ARRAY[a, b, …]``: its elements unified to one type (NULLs of it kept)."""

    items: tuple[Expr, ...]

    def __post_init__(self) -> None:
        element = common_type(self.items, "ARRAY")
        if element is NULLTYPE:
            element = TEXT  # ARRAY[NULL] is text[], as PostgreSQL's
        # ARRAY[] of arrays: one more dimension, of the same type (int[] holds both)
        _typed(self, element if element.element is not None else array_of(element), False)

    def children(self) -> tuple[Expr, ...]:
        return self.items

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        element = self.type.element
        assert element is not None
        if any(i.type.element is not None for i in self.items):
            values = [(i.eval(row, now), i.type) for i in self.items]
            return of_arrays([v if v is None else cast_value(v, t, self.type) for v, t in values])
        return tuple(coerce(i.eval(row, now), element) for i in self.items)

    def __str__(self) -> str:
        return f"ARRAY[{', '.join(map(str, self.items))}]"


@dataclass(frozen=True)
class Subscript(Expr):
    """``a[i]``: the ``i``-th element (from 1); NULL when ``i`` is out of range or NULL."""

    array: Expr
    index: Expr
    more: tuple[Expr, ...] = ()  # a[i][j]…: the indexes after the first

    def __post_init__(self) -> None:
        element = self.array.type.element
        if element is None:
            raise PlanError(
                f"cannot subscript type {self.array.type} because it does not support subscripting",
                sqlstate="42804",
            )
        for index in (self.index, *self.more):
            if not (index.type.integer or index.type is NULLTYPE):
                raise PlanError(
                    f"array subscript must have type integer, not {index.type}",
                    sqlstate="42804",
                )
        _typed(self, element, True)

    def children(self) -> tuple[Expr, ...]:
        return (self.array, self.index, *self.more)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        values, i = self.array.eval(row, now), self.index.eval(row, now)
        if self.more or nested(values):
            indexes = [i, *(m.eval(row, now) for m in self.more)]
            return None if values is None or None in indexes else element_at(values, indexes)
        if values is None or i is None or not 1 <= i <= len(values):
            return None
        return values[i - 1]

    def __str__(self) -> str:
        return f"{self.array}" + "".join(f"[{i}]" for i in (self.index, *self.more))


LIKE_OPS = {"~~": (False, False), "!~~": (True, False), "~~*": (False, True), "!~~*": (True, True)}
"""PostgreSQL's names of [NOT] [I]LIKE: (negated, case-insensitive)."""


@dataclass(frozen=True)
class AnyOf(Expr):
    """``a op ANY(array)`` (``every``: ``op ALL``): TRUE if some (every) element compares
    TRUE; otherwise NULL if an element or ``a`` is NULL, else FALSE (TRUE for ALL)."""

    op: str
    a: Expr
    array: Expr
    every: bool = False

    def __post_init__(self) -> None:
        element = self.array.type.element
        if self.array.type is not NULLTYPE and element is None:
            raise PlanError(
                f"op ANY/ALL (array) requires array on right side, not {self.array.type}",
                sqlstate="42809",
            )
        if self.op in LIKE_OPS:
            if {self.a.type, element} - {TEXT, NULLTYPE, None}:
                raise _mismatch(f"operator {self.op}", self.a.type, element or NULLTYPE)
        elif self.op not in CMP:
            raise PlanError(f"unknown comparison {self.op!r}")
        elif element is not None and not comparable(self.a.type, element):
            raise _mismatch(f"operator {self.op}", self.a.type, element)
        _typed(self, BOOL, True)

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.array)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        a, values = self.a.eval(row, now), self.array.eval(row, now)
        if values is None:
            return None
        values = flat(values)
        if not values:
            return self.every
        if a is None:
            return None
        unknown = False
        for v in values:
            if v is None:
                unknown = True
            elif self._holds(a, v) != self.every:
                return not self.every
        return None if unknown else self.every

    def _holds(self, a: Any, v: Any) -> bool:
        like = LIKE_OPS.get(self.op)
        if like is None:
            return compare_values(self.op, a, v)
        negated, case_insensitive = like
        return (like_regex(v, case_insensitive).fullmatch(a) is not None) != negated

    def __str__(self) -> str:
        return f"({self.a} {self.op} {'ALL' if self.every else 'ANY'}({self.array}))"
