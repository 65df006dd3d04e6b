"""PostgreSQL's array containment and overlap (``a @> b``: arraycontains, ``a <@ b``:
arraycontained, ``a && b``: arrayoverlap) and slices (``a[lo:hi]``, ``a[:hi]``, ``a[lo:]``:
array_slice_of). Containment and overlap compare the elements of arrays of one type, whatever
their dimensions; a NULL element matches nothing. A slice keeps the elements from ``lo`` to
``hi`` (from 1) of the first dimension, ``{}`` when none are in range; a NULL bound gives
NULL. They run on rows, in the process."""

from __future__ import annotations

from typing import Any

from changeflow.compute.array_shape import flat
from changeflow.compute.functions.base import Function, determined, in_process
from changeflow.compute.scalars import compare_values
from changeflow.compute.types import BOOL, NULLTYPE, SqlType
from changeflow.errors import PlanError

# the bounds an omitted side of a slice stands for: every element is within them
LOWEST, HIGHEST = -(2**31), 2**31 - 1

_ON_ROWS = in_process("array containment, overlap and slices run in the process")


def _no_match() -> PlanError:
    return PlanError("no match", sqlstate="42883")


def _pair_rule(args: tuple[SqlType, ...]) -> SqlType:
    """Two arrays of one type (a NULL beside an array takes its type)."""
    if len(args) != 2:
        raise _no_match()
    kinds = {k for k in args if k is not NULLTYPE}
    if not kinds:
        determined(NULLTYPE)
    if len(kinds) != 1 or next(iter(kinds)).element is None:
        raise _no_match()
    return BOOL


def _slice_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 3 or determined(args[0]).element is None:
        raise _no_match()
    if not all(k.integer or k is NULLTYPE for k in args[1:]):
        raise PlanError(
            f"array subscript must have type integer, not {next(k for k in args[1:])}",
            sqlstate="42804",
        )
    return args[0]


def _within(value: Any, values: list[Any]) -> bool:
    return value is not None and any(compare_values("=", value, v) for v in values)


def _contains(a: tuple, b: tuple) -> bool:
    """Is every element of ``b`` one of ``a``'s (a NULL element never is)?"""
    have = [v for v in flat(a) if v is not None]
    return all(_within(v, have) for v in flat(b))


def _contained(a: tuple, b: tuple) -> bool:
    return _contains(b, a)


def _overlap(a: tuple, b: tuple) -> bool:
    """Do ``a`` and ``b`` share an element (NULLs aside)?"""
    have = [v for v in flat(a) if v is not None]
    return any(_within(v, have) for v in flat(b))


def _slice(values: tuple, low: int, high: int) -> tuple:
    """The elements from ``low`` to ``high`` (from 1) of the first dimension."""
    start, end = max(low, 1), min(high, len(values))
    return values[start - 1 : end] if start <= end else ()


FUNCTIONS = [
    Function("arraycontains", _pair_rule, _contains, spark=_ON_ROWS),
    Function("arraycontained", _pair_rule, _contained, spark=_ON_ROWS),
    Function("arrayoverlap", _pair_rule, _overlap, spark=_ON_ROWS),
    Function("array_slice_of", _slice_rule, _slice, spark=_ON_ROWS),
]
