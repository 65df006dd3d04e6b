"""Values made of their fields: ``make_time``, ``make_interval`` (the planner fills the fields
a call names or leaves out: ``make_interval(days => 3)``) and ``make_timestamptz`` (in UTC,
the session's zone, or in a named zone), as PostgreSQL's."""

from __future__ import annotations

from datetime import UTC, datetime, time
from decimal import Decimal

from changeflow.compute.functions.base import Function, _sig, in_process
from changeflow.compute.functions.times import _make_timestamp
from changeflow.compute.functions.zones import zone
from changeflow.compute.intervals import Interval
from changeflow.compute.time_of_day import DAY_MICROS, time_from_micros
from changeflow.compute.types import INTERVAL, TEXT, TIME, TIMESTAMPTZ
from changeflow.errors import EvalError

_IN_PROCESS = in_process("times of day and intervals are made in the process")


def make_time(h: int, m: int, sec: float | Decimal) -> time:
    """A time of day as PostgreSQL's: a 60th second carries over, and 24:00:00 (a whole day,
    :data:`END_OF_DAY`) is the last; past it, 22008."""
    micros = round(Decimal(str(sec)) * 1_000_000)
    total = (h * 60 + m) * 60_000_000 + micros
    if not (0 <= h <= 24 and 0 <= m < 60 and 0 <= micros <= 60_000_000) or total > DAY_MICROS:
        raise EvalError(
            f"time field value out of range: {h:02d}:{m:02d}:{float(sec):02g}", sqlstate="22008"
        )
    return time_from_micros(total)


def make_interval(
    years: int, months: int, weeks: int, days: int, hours: int, mins: int, secs: float | Decimal
) -> Interval:
    """An interval of the seven fields (months, days and microseconds kept apart)."""
    if isinstance(secs, float) and secs != secs:
        raise EvalError("interval out of range", sqlstate="22008")
    micros = (hours * 3600 + mins * 60) * 1_000_000 + round(Decimal(str(secs)) * 1_000_000)
    return Interval(years * 12 + months, weeks * 7 + days, micros)


def make_timestamptz(
    y: int, mo: int, d: int, h: int, mi: int, sec: float | Decimal, tz: str = "UTC"
) -> datetime:
    """The instant of the wall time in zone ``tz`` (UTC, the session's, by default)."""
    wall = _make_timestamp(y, mo, d, h, mi, sec)
    return wall.replace(tzinfo=zone(tz)).astimezone(UTC)


_STAMP = ("int", "int", "int", "int", "int", "num")
FUNCTIONS = [
    Function("make_time", _sig(("int", "int", "num"), result=TIME), make_time, spark=_IN_PROCESS),
    Function(
        "make_interval",
        _sig(("int", "int", "int", "int", "int", "int", "num"), result=INTERVAL),
        make_interval,
        spark=_IN_PROCESS,
    ),
    Function(
        "make_timestamptz",
        _sig(_STAMP, (*_STAMP, TEXT), result=TIMESTAMPTZ),
        make_timestamptz,
        spark=_IN_PROCESS,
    ),
]
