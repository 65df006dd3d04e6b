"""``(s1, e1) OVERLAPS (s2, e2)`` as PostgreSQL's ``overlaps`` computes it (the planner reads
the operator as ``overlaps_of(s1, e1, s2, e2)``): an end may be an interval after its start;
each pair is put in order; NULL where the answer depends on a NULL end. Times of day
overlap as PostgreSQL's ``overlaps(time, …)`` (an interval end goes around the clock)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from changeflow.compute.functions.base import Function, in_process
from changeflow.compute.intervals import Interval, add_to_stamp, stamp_of
from changeflow.compute.time_of_day import micros_of, time_arith
from changeflow.compute.types import (
    BOOL,
    DATE,
    INTERVAL,
    NULLTYPE,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
)
from changeflow.errors import PlanError

_IN_PROCESS = in_process("OVERLAPS is computed in the process")


def _stamp(value: Any, zoned: bool) -> datetime | None:
    if value is None:
        return None
    stamp = stamp_of(value) if isinstance(value, date) else value
    if zoned and stamp.tzinfo is None:
        return stamp.replace(tzinfo=UTC)
    return stamp


def _pair(start: Any, end: Any, zoned: bool) -> tuple[datetime | None, datetime | None]:
    """A period's start and end (an interval end added to its start), in order; a NULL
    start takes the end's place (PostgreSQL's reading)."""
    s = _stamp(start, zoned)
    e = (None if s is None else add_to_stamp(s, end)) if isinstance(end, Interval) else end
    e = _stamp(e, zoned)
    if s is None:
        return e, None
    if e is not None and s > e:
        return e, s
    return s, e


def _time_pair(start: Any, end: Any) -> tuple[int | None, int | None]:
    """A period of times of day as microseconds (an interval end added around the clock)."""
    if isinstance(end, Interval):
        end = None if start is None else time_arith("+", start, end)
    s, e = (None if v is None else micros_of(v) for v in (start, end))
    if s is None:
        return e, None
    return (e, s) if e is not None and s > e else (s, e)


def overlaps(*args: tuple[Any, SqlType]) -> bool | None:
    if any(kind == TIME for _, kind in args):
        s1, e1 = _time_pair(args[0][0], args[1][0])
        s2, e2 = _time_pair(args[2][0], args[3][0])
    else:
        zoned = any(kind == TIMESTAMPTZ for _, kind in args)
        s1, e1 = _pair(args[0][0], args[1][0], zoned)
        s2, e2 = _pair(args[2][0], args[3][0], zoned)
    if s1 is None or s2 is None:
        return None
    if s1 > s2:
        return None if e2 is None else True if s1 < e2 else None if e1 is None else False
    if s1 < s2:
        return None if e1 is None else True if s2 < e1 else None if e2 is None else False
    return None if e1 is None or e2 is None else True


_STAMPS = (DATE, TIMESTAMP, TIMESTAMPTZ, NULLTYPE)


def _rule(args: tuple[SqlType, ...]) -> SqlType:
    kinds = (TIME, NULLTYPE) if TIME in args else _STAMPS  # times of day, or dates and stamps
    ok = len(args) == 4 and all(
        kind in kinds or (i % 2 == 1 and kind == INTERVAL) for i, kind in enumerate(args)
    )
    if not ok:
        shown = ", ".join(str(k) for k in args)
        raise PlanError(f"function overlaps({shown}) does not exist", sqlstate="42883", named=True)
    return BOOL


FUNCTIONS = [Function("overlaps_of", _rule, overlaps, strict=False, spark=_IN_PROCESS)]
