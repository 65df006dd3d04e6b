"""PostgreSQL's interval: months, days and microseconds kept apart, as PostgreSQL 15 keeps them.

Intervals compare (and group) by their total with 30-day months and 24-hour days, as
PostgreSQL's do, so ``'1 month' = '30 days'``; their text is IntervalStyle ``postgres``'s
(``1 year 2 mons 3 days 04:05:06``). Arithmetic with timestamps adds months first (clamped to
the month's last day), then days, then time; ``timestamp - timestamp`` is justified to days.
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from changeflow.compute.types import DATE, INTERVAL, TIMESTAMP, TIMESTAMPTZ, SqlType
from changeflow.errors import EvalError

DAY_US = 86_400_000_000
_HOUR_US = 3_600_000_000
_MINUTE_US = 60_000_000
_INT32 = 2**31
_INT64 = 2**63


def _out_of_range() -> EvalError:
    return EvalError("interval out of range", sqlstate="22008")


@dataclass(frozen=True, eq=False)
class Interval:
    """An interval: ``months``, ``days`` and ``micros`` (each with its own sign)."""

    months: int = 0
    days: int = 0
    micros: int = 0

    def __post_init__(self) -> None:
        if not (
            -_INT32 <= self.months < _INT32
            and -_INT32 <= self.days < _INT32
            and -_INT64 <= self.micros < _INT64
        ):
            raise _out_of_range()

    def span(self) -> int:
        """The total in microseconds with 30-day months: what intervals compare by."""
        return (self.months * 30 + self.days) * DAY_US + self.micros

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Interval) and self.span() == other.span()

    def __hash__(self) -> int:
        return hash(("interval", self.span()))

    def __lt__(self, other: Interval) -> bool:
        return self.span() < other.span()

    def __le__(self, other: Interval) -> bool:
        return self.span() <= other.span()

    def __gt__(self, other: Interval) -> bool:
        return self.span() > other.span()

    def __ge__(self, other: Interval) -> bool:
        return self.span() >= other.span()

    def __add__(self, other: Interval) -> Interval:
        return Interval(
            self.months + other.months, self.days + other.days, self.micros + other.micros
        )

    def __neg__(self) -> Interval:
        return Interval(-self.months, -self.days, -self.micros)

    def __sub__(self, other: Interval) -> Interval:
        return self + -other

    def __str__(self) -> str:
        return interval_text(self)

    def __repr__(self) -> str:
        return f"Interval({self.months}, {self.days}, {self.micros})"


def _trunc_div(a: int, b: int) -> tuple[int, int]:
    """C's division: the quotient truncated toward zero and its remainder."""
    q = abs(a) // b * (1 if a >= 0 else -1)
    return q, a - q * b


def fields(v: Interval) -> tuple[int, int, int, int, int, int, int]:
    """year, month, day, hour, minute, second, microsecond, each signed as PostgreSQL splits."""
    year, month = _trunc_div(v.months, 12)
    hour, rest = _trunc_div(v.micros, _HOUR_US)
    minute, rest = _trunc_div(rest, _MINUTE_US)
    second, micro = _trunc_div(rest, 1_000_000)
    return year, month, v.days, hour, minute, second, micro


def interval_text(v: Interval) -> str:
    """IntervalStyle ``postgres`` output."""
    year, month, day, hour, minute, second, micro = fields(v)
    out: list[str] = []
    before = False
    for value, unit in ((year, "year"), (month, "mon"), (day, "day")):
        if value:
            sign = "+" if before and value > 0 else ""
            out.append(f"{sign}{value} {unit}{'s' if value != 1 else ''}")
            before = value < 0
    if not out or hour or minute or second or micro:
        minus = min(hour, minute, second, micro) < 0
        sign = "-" if minus else ("+" if before else "")
        text = f"{sign}{abs(hour):02d}:{abs(minute):02d}:{abs(second):02d}"
        if micro:
            text += f".{abs(micro):06d}".rstrip("0")
        out.append(text)
    return " ".join(out)


# -- input -------------------------------------------------------------------------------------

_UNITS: dict[str, str] = {}
for _unit, _names in {
    "microsecond": ("microsecond", "microseconds", "us", "usec", "usecs", "useconds"),
    "millisecond": ("millisecond", "milliseconds", "ms", "msec", "msecs", "mseconds"),
    "second": ("second", "seconds", "s", "sec", "secs"),
    "minute": ("minute", "minutes", "m", "min", "mins"),
    "hour": ("hour", "hours", "h", "hr", "hrs"),
    "day": ("day", "days", "d"),
    "week": ("week", "weeks", "w"),
    "month": ("month", "months", "mon", "mons"),
    "year": ("year", "years", "y", "yr", "yrs"),
    "decade": ("decade", "decades", "dec", "decs"),
    "century": ("century", "centuries", "c", "cent"),
    "millennium": ("millennium", "millennia", "mil", "mils", "millenniums"),
}.items():
    for _name in _names:
        _UNITS[_name] = _unit

_YEARS = {"year": 1, "decade": 10, "century": 100, "millennium": 1000}
_TIME_US = {"hour": _HOUR_US, "minute": _MINUTE_US, "second": 10**6, "millisecond": 1000}
_TOKEN = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?::\d+(?::\d+(?:\.\d*)?)?)?|[a-z]+|@")
_ISO = re.compile(r"([+-]?\d+(?:\.\d+)?)([ymwd])|t|([+-]?\d+(?:\.\d+)?)([hms])", re.IGNORECASE)


def _syntax(text: str) -> EvalError:
    return EvalError(f'invalid input syntax for type interval: "{text}"', sqlstate="22007")


class _Sum:
    """Fields being read: whole months and days and exact microseconds; fractions spill down
    (a month's to 30 days, a day's to 24 hours, as PostgreSQL spills them)."""

    def __init__(self) -> None:
        self.months = 0
        self.days = 0
        self.micros = Fraction(0)

    def add(self, value: Fraction, unit: str) -> None:
        if unit in _YEARS:
            self.months += int(value * 12 * _YEARS[unit])
            frac = value * 12 * _YEARS[unit] - int(value * 12 * _YEARS[unit])
            self.months += round(frac)  # PostgreSQL rounds a year's fraction to whole months
        elif unit == "month":
            self._days(value * 30, months=int(value))
        elif unit in ("week", "day"):
            self._days(value * (7 if unit == "week" else 1))
        elif unit == "microsecond":
            self.micros += value
        else:
            self.micros += value * _TIME_US[unit]

    def _days(self, days: Fraction, months: int = 0) -> None:
        if months:
            self.months += months
            days -= months * 30
        whole = int(days)
        self.days += whole
        self.micros += (days - whole) * DAY_US

    def result(self, negate: bool) -> Interval:
        micros = round(self.micros)  # half to even, as rint
        v = Interval(self.months, self.days, micros)
        return -v if negate else v


def _time(token: str, text: str) -> Fraction:
    sign = -1 if token.startswith("-") else 1
    parts = token.lstrip("+-").split(":")
    hours, minutes = int(parts[0]), int(parts[1])
    seconds = Fraction(Decimal(parts[2])) if len(parts) > 2 else Fraction(0)
    if minutes > 59 or seconds >= 60:
        raise EvalError(f'interval field value out of range: "{text}"', sqlstate="22015")
    return sign * (hours * _HOUR_US + minutes * _MINUTE_US + seconds * 10**6)


def parse_interval(text: str) -> Interval:
    """PostgreSQL's interval input: verbose (``1 year 2 mons``, ``@ 1 day ago``), with a time
    (``1 day 02:03:04``), or ISO 8601 (``P1Y2M3DT4H5M6S``); 22007 when malformed."""
    s = text.strip().lower()
    try:
        if s.startswith("p"):
            return _iso(s[1:], text)
        return _verbose(s, text)
    except (ValueError, ArithmeticError):
        raise _syntax(text) from None


def _iso(s: str, text: str) -> Interval:
    total, pos, in_time = _Sum(), 0, False
    if not s:
        raise _syntax(text)
    for m in _ISO.finditer(s):
        if m.start() != pos:
            raise _syntax(text)
        pos = m.end()
        if m.group(0) == "t":
            in_time = True
            continue
        number, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        value = Fraction(Decimal(number))
        if unit == "m":
            total.add(value, "minute" if in_time else "month")
        else:
            names = {"y": "year", "w": "week", "d": "day", "h": "hour", "s": "second"}
            total.add(value, names[unit])
    if pos != len(s):
        raise _syntax(text)
    return total.result(False)


def _verbose(s: str, text: str) -> Interval:
    tokens = _TOKEN.findall(s)
    if "".join(tokens) != "".join(s.split()) or not tokens:
        raise _syntax(text)
    if tokens[0] == "@":
        tokens = tokens[1:]
    negate = bool(tokens) and tokens[-1] == "ago"
    if negate:
        tokens = tokens[:-1]
    total, i, seen = _Sum(), 0, False
    while i < len(tokens):
        token = tokens[i]
        if ":" in token:
            total.micros += _time(token, text)
            i += 1
        elif token[0] in "+-.0123456789":
            value = Fraction(Decimal(token))
            unit = tokens[i + 1] if i + 1 < len(tokens) else "second"
            if unit not in _UNITS:
                raise _syntax(text)
            total.add(value, _UNITS[unit])
            i += 2
        else:
            raise _syntax(text)
        seen = True
    if not seen:
        raise _syntax(text)
    return total.result(negate)


# -- arithmetic --------------------------------------------------------------------------------


def add_to_stamp(stamp: datetime, v: Interval) -> datetime:
    """``timestamp + interval``: months (the day clamped to the month's end), days, then time."""
    try:
        if v.months:
            months = stamp.year * 12 + stamp.month - 1 + v.months
            year, month = divmod(months, 12)
            day = min(stamp.day, calendar.monthrange(year, month + 1)[1])
            stamp = stamp.replace(year=year, month=month + 1, day=day)
        return stamp + timedelta(days=v.days, microseconds=v.micros)
    except (ValueError, OverflowError):
        raise EvalError("timestamp out of range", sqlstate="22008") from None


def stamp_of(value: date) -> datetime:
    """A date as the timestamp of its midnight."""
    if isinstance(value, datetime):
        return value
    return datetime(value.year, value.month, value.day)


def justify_hours(v: Interval) -> Interval:
    """Whole 24-hour spans of the time moved to days, the signs made to agree."""
    whole, micros = _trunc_div(v.micros, DAY_US)
    days = v.days + whole
    if days > 0 and micros < 0:
        micros, days = micros + DAY_US, days - 1
    elif days < 0 and micros > 0:
        micros, days = micros - DAY_US, days + 1
    return Interval(v.months, days, micros)


def justify_days(v: Interval) -> Interval:
    """Whole 30-day spans of the days moved to months, the signs made to agree."""
    whole, days = _trunc_div(v.days, 30)
    months = v.months + whole
    if months > 0 and days < 0:
        days, months = days + 30, months - 1
    elif months < 0 and days > 0:
        days, months = days - 30, months + 1
    return Interval(months, days, v.micros)


def justify_interval(v: Interval) -> Interval:
    """Whole days of the time moved to days and whole 30-day spans to months, the signs of
    all three made to agree (PostgreSQL's order of steps)."""
    months, days, micros = v.months, v.days, v.micros
    if (days > 0 and micros > 0) or (days < 0 and micros < 0):
        whole, days = _trunc_div(days, 30)
        months += whole
    whole, micros = _trunc_div(micros, DAY_US)
    days += whole
    whole, days = _trunc_div(days, 30)
    months += whole
    if months > 0 and (days < 0 or (days == 0 and micros < 0)):
        days, months = days + 30, months - 1
    elif months < 0 and (days > 0 or (days == 0 and micros > 0)):
        days, months = days - 30, months + 1
    if days > 0 and micros < 0:
        micros, days = micros + DAY_US, days - 1
    elif days < 0 and micros > 0:
        micros, days = micros - DAY_US, days + 1
    return Interval(months, days, micros)


def stamp_difference(a: datetime, b: datetime) -> Interval:
    """``timestamp - timestamp``: the time between, justified to days."""
    delta = a - b
    micros = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
    return justify_hours(Interval(0, 0, micros))


def _spill(month_days: float, day_part: float) -> tuple[int, float]:
    """A fraction of months (in days) and of days as whole days and seconds, rounded to
    microseconds as PostgreSQL rounds them (TSROUND)."""
    month_days = round(month_days * 1e6) / 1e6
    seconds = day_part + month_days - int(month_days)
    seconds = round(seconds * 86400 * 1e6) / 1e6  # rounded to microseconds
    extra = 0
    if abs(seconds) >= 86400:
        extra = int(seconds / 86400)
        seconds -= extra * 86400
    return extra + int(month_days), seconds


def multiply(v: Interval, factor: float) -> Interval:
    """``interval * number`` as PostgreSQL computes it (in doubles, fractions spilled down)."""
    if math.isnan(factor) or math.isinf(factor):
        raise _out_of_range()
    months = v.months * factor
    days = v.days * factor
    if abs(months) >= _INT32 or abs(days) >= _INT32:
        raise _out_of_range()
    month_days = (months - int(months)) * 30
    extra, seconds = _spill(month_days, days - int(days))
    micros = v.micros * factor + seconds * 1e6
    if abs(micros) >= _INT64:
        raise _out_of_range()
    return Interval(int(months), int(days) + extra, _rint(micros))


def divide(v: Interval, factor: float) -> Interval:
    """``interval / number`` (22012 for zero)."""
    if factor == 0:
        raise EvalError("division by zero", sqlstate="22012")
    if math.isnan(factor):
        raise _out_of_range()
    months = v.months / factor
    days = v.days / factor
    month_days = (months - int(months)) * 30
    extra, seconds = _spill(month_days, days - int(days))
    return Interval(int(months), int(days) + extra, _rint(v.micros / factor + seconds * 1e6))


def _rint(x: float) -> int:
    return int(round(x))


_DAYS_IN = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def age(a: datetime, b: datetime) -> Interval:
    """``age(a, b)``: field by field, borrowing from the next field up, as PostgreSQL does."""
    before = a < b
    first, second = (a, b) if not before else (b, a)
    micro = first.microsecond - second.microsecond
    sec = first.second - second.second
    minute = first.minute - second.minute
    hour = first.hour - second.hour
    day = first.day - second.day
    month = first.month - second.month
    year = first.year - second.year
    if micro < 0:
        micro, sec = micro + 10**6, sec - 1
    if sec < 0:
        sec, minute = sec + 60, minute - 1
    if minute < 0:
        minute, hour = minute + 60, hour - 1
    if hour < 0:
        hour, day = hour + 24, day - 1
    while day < 0:
        ref = a if before else b
        days = _DAYS_IN[ref.month - 1] + (ref.month == 2 and calendar.isleap(ref.year))
        day, month = day + days, month - 1
    while month < 0:
        month, year = month + 12, year - 1
    v = Interval(year * 12 + month, day, ((hour * 60 + minute) * 60 + sec) * 10**6 + micro)
    return -v if before else v


# -- operators -------------------------------------------------------------------------------


def arith_type(op: str, ta: SqlType, tb: SqlType) -> SqlType | None:
    """The type of ``a op b`` where an interval is involved (or timestamps are subtracted);
    None where no such operator exists."""
    stamps = (DATE, TIMESTAMP, TIMESTAMPTZ)
    if tb == INTERVAL and op in "+-" and ta in stamps:
        return TIMESTAMPTZ if ta == TIMESTAMPTZ else TIMESTAMP
    if ta == INTERVAL and op == "+" and tb in stamps:
        return TIMESTAMPTZ if tb == TIMESTAMPTZ else TIMESTAMP
    if op == "-" and ta == tb and ta in (TIMESTAMP, TIMESTAMPTZ):
        return INTERVAL
    if ta == tb == INTERVAL and op in "+-":
        return INTERVAL
    if op == "*" and INTERVAL in (ta, tb) and (ta.numeric or tb.numeric):
        return INTERVAL
    if op == "/" and ta == INTERVAL and tb.numeric:
        return INTERVAL
    return None


def interval_arith(op: str, a: object, b: object) -> object:
    """``a op b`` for the operators :func:`arith_type` types."""
    if isinstance(a, Interval) and isinstance(b, Interval):
        return a + b if op == "+" else a - b
    if isinstance(b, Interval) and isinstance(a, date):
        return add_to_stamp(stamp_of(a), b if op == "+" else -b)
    if isinstance(a, Interval) and isinstance(b, date):
        return add_to_stamp(stamp_of(b), a)
    if isinstance(a, date) and isinstance(b, date):
        return stamp_difference(stamp_of(a), stamp_of(b))
    if isinstance(a, Interval):
        return multiply(a, float(b)) if op == "*" else divide(a, float(b))  # type: ignore[arg-type]
    return multiply(b, float(a))  # type: ignore[arg-type]


_PARTS = ("microseconds", "milliseconds", "second", "minute", "hour", "day", "month", "quarter")
_PARTS += ("year", "decade", "century", "millennium", "epoch")
_ALIASES = {"microsecond": "microseconds", "millisecond": "milliseconds", "seconds": "second"}
_ALIASES |= {"minutes": "minute", "hours": "hour", "days": "day", "months": "month"}
_ALIASES |= {"years": "year", "mon": "month", "mons": "month", "sec": "second", "min": "minute"}


def interval_part(field_name: str, v: Interval) -> Decimal:
    """``extract(field from interval)``: exact, with PostgreSQL 15's scales."""
    f = field_name.lower()
    f = _ALIASES.get(f, f)
    year, month, day, hour, minute, second, micro = fields(v)
    us = second * 10**6 + micro
    whole = {"minute": minute, "hour": hour, "day": day, "month": month, "year": year}
    whole |= {"quarter": _trunc_div(month, 3)[0] + 1, "decade": _trunc_div(year, 10)[0]}
    whole |= {"century": _trunc_div(year, 100)[0], "millennium": _trunc_div(year, 1000)[0]}
    if f in whole:
        return Decimal(whole[f])
    if f == "microseconds":
        return Decimal(us)
    if f == "milliseconds":
        return Decimal(us).scaleb(-3)
    if f == "second":
        return Decimal(us).scaleb(-6)
    if f == "epoch":
        y, m = _trunc_div(v.months, 12)
        seconds = 31_557_600 * y + (30 * m + v.days) * 86_400  # 365.25-day years
        return Decimal(seconds * 10**6 + v.micros).scaleb(-6)
    if f in _UNITS or f in ("dow", "doy", "isodow", "isoyear", "julian", "timezone"):
        raise EvalError(f'unit "{field_name}" not supported for type interval', sqlstate="0A000")
    raise EvalError(f'unit "{field_name}" not recognized for type interval', sqlstate="22023")
