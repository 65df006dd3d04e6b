"""``time`` (without time zone), PostgreSQL's: a Python ``time`` to the microsecond, and
:data:`END_OF_DAY`, PostgreSQL's ``24:00:00`` (after every other time; Python's ``time`` stops
at 23:59:59.999999). Its text in and out, and its arithmetic: ``time ± interval`` (the
interval's time part, around the clock), ``time - time`` (an interval), ``date + time`` (a
timestamp). A stored ``24:00:00`` is a ``time64`` of a whole day's microseconds (Arrow's
``to_pylist`` would read it as midnight: it is read as microseconds, :func:`time_from_micros`)."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from changeflow.compute.intervals import Interval
from changeflow.compute.types import DATE, INTERVAL, TIME, TIMESTAMP, TIMESTAMPTZ, SqlType
from changeflow.errors import EvalError, PlanError

DAY_MICROS = 86_400_000_000
_TEXT = re.compile(
    r"\s*(?:\d{4}-\d{1,2}-\d{1,2}(?:\s+|T))?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(\.\d*)?)?"
    r"\s*([ap]\.?m\.?)?\s*",
    re.IGNORECASE,
)


class _EndOfDay(time):
    """``24:00:00``: hour 24, equal only to itself, after every other time of day."""

    @property
    def hour(self) -> int:  # type: ignore[override]
        return 24

    def _key(self, other: object) -> tuple[int, int] | None:
        if isinstance(other, _EndOfDay):
            return (0, 0)
        if isinstance(other, time):
            return (1, 0)
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _EndOfDay)

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, _EndOfDay)

    def __hash__(self) -> int:
        return hash(DAY_MICROS)

    def __lt__(self, other: object) -> bool:
        if self._key(other) is None:
            return NotImplemented
        return False

    def __le__(self, other: object) -> bool:
        if self._key(other) is None:
            return NotImplemented
        return isinstance(other, _EndOfDay)

    def __gt__(self, other: object) -> bool:
        if self._key(other) is None:
            return NotImplemented
        return not isinstance(other, _EndOfDay)

    def __ge__(self, other: object) -> bool:
        if self._key(other) is None:
            return NotImplemented
        return True

    def isoformat(self, timespec: str = "auto") -> str:
        return "24:00:00"

    __str__ = isoformat

    def __repr__(self) -> str:
        return "END_OF_DAY"

    def __reduce_ex__(self, protocol: object) -> tuple[object, tuple[()]]:
        return (_end_of_day, ())


def _end_of_day() -> time:
    return END_OF_DAY


END_OF_DAY: time = _EndOfDay(0, 0)


def time_from_micros(micros: int) -> time:
    """The time ``micros`` after midnight, a whole day's being 24:00:00 (as stored)."""
    return END_OF_DAY if micros == DAY_MICROS else time_of(micros)


def micros_of(t: time) -> int:
    """Microseconds since midnight."""
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def time_of(micros: int) -> time:
    """The time ``micros`` after midnight (within one day)."""
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return time(hour, minute, second, micro)


def parse_time(text: str) -> time:
    """``text`` read as PostgreSQL's ``time_in`` reads the common forms: ``HH:MM[:SS[.frac]]``,
    an AM/PM mark, a leading date ignored; 22007 if it is not one, 22008 out of range."""
    if text.strip().lower() == "allballs":  # PostgreSQL's word for midnight UTC
        return time(0)
    m = _TEXT.fullmatch(text)
    if m is None:
        raise EvalError(f'invalid input syntax for type time: "{text}"', sqlstate="22007")
    hour, minute = int(m.group(1)), int(m.group(2))
    second = int(m.group(3) or 0)
    fraction = Decimal("0" + (m.group(4) or ".0"))
    micros = int((fraction * 1_000_000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    if m.group(5):
        if hour > 12:
            raise EvalError(f'date/time field value out of range: "{text}"', sqlstate="22008")
        hour = hour % 12 + (12 if m.group(5)[0].lower() == "p" else 0)
    total = ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros
    if hour > 24 or minute > 59 or second > 59 or total > DAY_MICROS:
        raise EvalError(f'date/time field value out of range: "{text}"', sqlstate="22008")
    return END_OF_DAY if total == DAY_MICROS else time_of(total)


def time_text(t: time) -> str:
    """PostgreSQL's text of a time: ``HH:MM:SS``, a fraction without trailing zeros."""
    text = f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return text + f".{t.microsecond:06d}".rstrip("0") if t.microsecond else text


def round_time(t: time, places: int) -> time:
    """``t`` at ``places`` fractional digits (half away from zero, as PostgreSQL's typmod),
    around the clock."""
    unit = 10 ** (6 - max(0, min(places, 6)))
    micros = (micros_of(t) + unit // 2) // unit * unit
    return time_of(micros % DAY_MICROS)


def time_arith(op: str, a: object, b: object) -> object:
    """``time ± interval``, ``interval + time``, ``time - time``, ``date ± time`` and
    ``timestamp ± time`` (the time read as an interval, as PostgreSQL's implicit cast does)."""
    if isinstance(a, time) and isinstance(b, Interval):
        shift = b.micros if op == "+" else -b.micros
        return time_of((micros_of(a) + shift) % DAY_MICROS)
    if isinstance(a, Interval) and isinstance(b, time):
        return time_of((micros_of(b) + a.micros) % DAY_MICROS)
    if isinstance(a, time) and isinstance(b, time):
        return Interval(0, 0, micros_of(a) - micros_of(b))
    if isinstance(a, datetime) and isinstance(b, time):  # the time read as an interval
        shift = timedelta(microseconds=micros_of(b))
        return a + shift if op == "+" else a - shift
    if isinstance(a, time) and isinstance(b, datetime):
        return b + timedelta(microseconds=micros_of(a))
    if isinstance(a, date) and isinstance(b, time):
        shift = timedelta(microseconds=micros_of(b))
        midnight = datetime(a.year, a.month, a.day)
        return midnight + shift if op == "+" else midnight - shift
    if isinstance(a, time) and isinstance(b, date):
        return datetime(b.year, b.month, b.day) + timedelta(microseconds=micros_of(a))
    raise EvalError(f"operator {op} on {type(a).__name__} and {type(b).__name__}")


def time_arith_type(op: str, ta: SqlType, tb: SqlType) -> SqlType | None:
    """The type of ``a op b`` where a time is involved; None where there is no such operator."""
    if op == "+" and ta == tb == TIME:  # time + interval and date + time both might be meant
        raise PlanError(f"operator is not unique: {ta} + {tb}", sqlstate="42725")
    if op in "+-" and tb == TIME and ta in (TIMESTAMP, TIMESTAMPTZ):  # the time an interval
        return ta
    if op == "+" and ta == TIME and tb in (TIMESTAMP, TIMESTAMPTZ):
        return tb
    if op == "+" and {ta, tb} in ({TIME, INTERVAL}, {TIME, DATE}):
        return TIMESTAMP if DATE in (ta, tb) else TIME
    if op == "-" and tb == INTERVAL and ta == TIME:
        return TIME
    if op == "-" and tb == TIME and ta in (TIME, DATE):
        return INTERVAL if ta == TIME else TIMESTAMP
    return None
