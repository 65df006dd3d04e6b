"""Dates and timestamps read from text in the forms PostgreSQL 15 reads (its "Date/Time Input"
with DateStyle ``ISO, MDY``), beyond ISO 8601, which ``from_text`` reads first: month names
and abbreviations (``January 8, 1999``, ``08-Jan-1999``, ``1999-Jan-08``), day names
(ignored), ``1/8/1999`` and ``01/02/03`` month first, two-digit years (70-99 the 1900s, else
the 2000s), ``19990108`` and ``990108``, ``1999.008`` (a day of the year), ``J2451187`` (a
Julian day), a time with AM/PM and a fraction, and a time zone (``+02``, ``-08:00``,
``+0530``, ``Z``, ``UTC``, ``PST`` and PostgreSQL's other default abbreviations, an IANA name
such as ``America/New_York``), which a timestamp with time zone is converted by and a
timestamp or date ignores, as there. Errors are PostgreSQL's: 22007 for text that is no date,
22008 for a field out of range (with its DateStyle hint where a month would be out of range).
A date before the year 1 (``BC``) or after 9999 cannot be held here (22008, said so)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import ROUND_HALF_EVEN, Decimal
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from changeflow.compute.types import DATE, TIMESTAMPTZ, SqlType
from changeflow.errors import EvalError

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ]
    )
    for name in names
}
_DAYS = {"sun", "sunday", "mon", "monday", "tue", "tues", "tuesday", "wed", "wednesday"}
_DAYS |= {"thu", "thur", "thurs", "thursday", "fri", "friday", "sat", "saturday"}
_ZONES = {  # PostgreSQL's default abbreviations (hours east of UTC)
    **dict.fromkeys(("z", "zulu", "utc", "gmt", "ut", "wet"), 0.0),
    **{"pst": -8, "pdt": -7, "mst": -7, "mdt": -6, "cst": -6, "cdt": -5, "est": -5, "edt": -4},
    **{"akst": -9, "akdt": -8, "hst": -10, "ast": -4, "adt": -3, "nst": -3.5, "ndt": -2.5},
    **{"bst": 1, "cet": 1, "cest": 2, "met": 1, "mest": 2, "eet": 2, "eest": 3, "west": 1},
    **{"msk": 3, "ist": 2, "jst": 9, "kst": 9, "hkt": 8, "sgt": 8, "awst": 8, "acst": 9.5},
    **{"aest": 10, "aedt": 11, "acdt": 10.5, "nzst": 12, "nzdt": 13, "sast": 2, "cat": 2},
    **{"eat": 3, "wat": 1, "brt": -3, "art": -3, "pht": 8, "wib": 7},
}
_TOKEN = re.compile(
    r"(?P<time>\d+:[\d:.]*)"  # 04:05:06.789
    r"|(?P<date>[A-Za-z0-9]+(?:[-/.][A-Za-z0-9_+]+)+)"  # 1999-01-08, 08-Jan-99, Europe/Paris
    r"|(?P<zone>[-+]\d[\d:]*)"  # -08:00
    r"|(?P<number>\d+)"
    r"|(?P<word>[A-Za-z][A-Za-z0-9_]*)"
    r"|(?P<skip>[\s,]+)"
)


_FINE_FRACTION = re.compile(r"\.\d{7}")


class _Fields:
    """What the text's tokens said: each field once."""

    def __init__(self, text: str, kind: str) -> None:
        self.text, self.kind = text, kind
        self.year: int | None = None
        self.short_year = False  # written with at most two digits
        self.month: int | None = None
        self.day: int | None = None
        self.yday: int | None = None
        self.julian: int | None = None
        self.clock: tuple[int, int, int, int] | None = None  # hour, minute, second, micros
        self.ampm: str | None = None
        self.zone: timezone | ZoneInfo | None = None
        self.bc = False
        self.month_named = False

    def syntax(self) -> EvalError:
        return EvalError(
            f'invalid input syntax for type {self.kind}: "{self.text}"', sqlstate="22007"
        )

    def range(self, hint: bool = False) -> EvalError:
        message = f'date/time field value out of range: "{self.text}"'
        if hint:
            style = 'Perhaps you need a different "datestyle" setting.'
            return EvalError(message, sqlstate="22008", hint=style)
        return EvalError(message, sqlstate="22008")

    def set(self, field: str, value: object) -> None:
        if getattr(self, field) is not None:
            raise self.syntax()
        setattr(self, field, value)

    def set_year(self, digits: str) -> None:
        self.set("year", int(digits))
        self.short_year = len(digits) <= 2


def read_stamp(s: str, text: str, kind: SqlType) -> date | datetime:
    """``text`` (``s`` stripped) as a date, a naive timestamp or a UTC one: ISO 8601 read by
    Python, else PostgreSQL's other forms."""
    try:
        if _FINE_FRACTION.search(s):  # (Python cuts a fraction past 6 digits; PostgreSQL rounds)
            raise ValueError(s)
        if kind == DATE:
            return date.fromisoformat(s)
        stamp = datetime.fromisoformat(s)
    except ValueError:
        return read_datetime(text, str(kind))
    if kind == TIMESTAMPTZ:
        return stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    return stamp.replace(tzinfo=None)


def read_datetime(text: str, kind: str) -> date | datetime:
    """``text`` as a ``kind`` (``date``, ``timestamp`` or ``timestamp with time zone``):
    a date, a naive datetime, or a UTC datetime."""
    f = _Fields(text, kind)
    s = re.sub(r"(?<=\d)[Tt](?=\d)", " ", text.strip())  # ISO's T between date and time
    at = 0
    while at < len(s):
        m = _TOKEN.match(s, at)
        if m is None:
            raise f.syntax()
        at = m.end()
        token, what = m.group(), m.lastgroup
        if what == "time":
            _clock(f, token)
        elif what == "date":
            _date(f, token)
        elif what == "zone":
            _offset(f, token)
        elif what == "number":
            _number(f, token)
        elif what == "word":
            _word(f, token)
    return _result(f)


def _clock(f: _Fields, token: str) -> None:
    m = re.fullmatch(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(\.\d*)?)?", token)
    if m is None:
        raise f.syntax()
    fraction = Decimal("0" + (m.group(4) or ".0")) * 1_000_000
    micros = int(fraction.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))  # (as rint)
    f.set("clock", (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), micros))


def _date(f: _Fields, token: str) -> None:
    parts = re.split(r"[-/.]", token)
    if "/" in token and any(p[:1].isalpha() for p in parts) and not _month(parts[0]):
        _zone_name(f, token)  # America/New_York
        return
    if len(parts) == 2 and "." in token and all(p.isdigit() for p in parts) and f.month is None:
        if len(parts[0]) >= 3 and len(parts[1]) == 3:  # 1999.008
            f.set_year(parts[0])
            f.set("yday", int(parts[1]))
            return
        raise f.syntax()
    if len(parts) != 3 or f.month is not None or f.day is not None:
        raise f.syntax()
    named = [i for i, p in enumerate(parts) if not p.isdigit()]
    if named:
        if len(named) != 1 or not _month(parts[named[0]]):
            raise f.syntax()
        f.set("month", _month(parts[named[0]]))
        f.month_named = True
        first, second = (p for i, p in enumerate(parts) if i != named[0])
        if len(first) > 2:  # 1999-Jan-08
            f.set_year(first)
            f.set("day", int(second))
        else:  # 08-Jan-1999, Jan-08-99
            f.set("day", int(first))
            f.set_year(second)
        return
    if len(parts[0]) > 2:  # 1999-01-08
        f.set_year(parts[0])
        f.set("month", int(parts[1]))
        f.set("day", int(parts[2]))
    else:  # 1/8/1999, month first
        f.set("month", int(parts[0]))
        f.set("day", int(parts[1]))
        f.set_year(parts[2])


def _number(f: _Fields, digits: str) -> None:
    if f.month is None and f.day is None and f.year is None and len(digits) in (6, 8):
        cut = len(digits) - 4  # 19990108, 990108
        f.set_year(digits[:cut])
        f.set("month", int(digits[cut : cut + 2]))
        f.set("day", int(digits[cut + 2 :]))
    elif f.month is not None and f.day is not None and f.clock is None and len(digits) == 6:
        f.set("clock", (int(digits[:2]), int(digits[2:4]), int(digits[4:]), 0))  # 040506
    elif f.month_named and f.day is None and len(digits) <= 2:
        f.set("day", int(digits))  # January 8
    elif f.year is None and (f.month is not None or len(digits) > 2):
        f.set_year(digits)  # January 8 1999, 1999 alone after a time
    else:
        raise f.syntax()


def _word(f: _Fields, word: str) -> None:
    low = word.lower()
    if _month(low):
        f.set("month", _month(low))
        f.month_named = True
    elif low in _DAYS or low == "ad":
        return
    elif low in ("am", "pm", "a.m", "p.m"):
        f.set("ampm", low[0])
    elif low == "bc":
        f.bc = True
    elif low[0] == "j" and low[1:].isdigit():
        f.set("julian", int(low[1:]))
    elif low in _ZONES:
        f.set("zone", timezone(timedelta(hours=_ZONES[low])))
    else:
        _zone_name(f, word)


def _month(word: str) -> int | None:
    return _MONTHS.get(word.lower())


def _zone_name(f: _Fields, name: str) -> None:
    """An IANA time zone, named in any case (``America/New_York``, ``pst8pdt``)."""
    found = _zone_names().get(name.lower())
    if found is None:
        if "/" in name and f.kind != "date":
            message = f'time zone "{name.lower()}" not recognized'
            raise EvalError(message, sqlstate="22023")
        raise f.syntax()
    f.set("zone", ZoneInfo(found))


@cache
def _zone_names() -> dict[str, str]:
    return {n.lower(): n for n in available_timezones()}


def _offset(f: _Fields, token: str) -> None:
    sign, body = (-1 if token[0] == "-" else 1), token[1:]
    if ":" in body:
        parts = [int(p or 0) for p in body.split(":")]
    elif len(body) <= 2:
        parts = [int(body)]
    elif len(body) in (3, 4):
        parts = [int(body[:-2]), int(body[-2:])]
    else:
        raise f.syntax()
    hours, minutes, seconds = (parts + [0, 0])[:3]
    if hours > 15 or minutes > 59 or seconds > 59 or len(parts) > 3:
        raise f.range()
    f.set("zone", timezone(sign * timedelta(hours=hours, minutes=minutes, seconds=seconds)))


def _result(f: _Fields) -> date | datetime:
    if f.julian is not None:
        if f.year is not None or f.month is not None:
            raise f.syntax()
        if not 1721426 <= f.julian <= 5373484:  # 0001-01-01 to 9999-12-31
            raise _years(f.text)
        day = date.fromordinal(f.julian - 1721425)
    else:
        day = _calendar(f)
    hour, minute, second, micros = f.clock or (0, 0, 0, 0)
    if f.ampm is not None:
        if hour > 12:
            raise f.range()
        hour = hour % 12 + (12 if f.ampm == "p" else 0)
    if hour > 24 or minute > 59 or second > 60 or (hour == 24 and (minute or second or micros)):
        raise f.range()
    if f.kind == "date":
        return day
    stamp = datetime(day.year, day.month, day.day) + timedelta(
        hours=hour, minutes=minute, seconds=second, microseconds=micros
    )
    if f.kind == "timestamp":
        return stamp
    zone = f.zone or UTC
    return stamp.replace(tzinfo=zone).astimezone(UTC)


def _calendar(f: _Fields) -> date:
    if f.year is None or (f.month is None and f.yday is None) or (f.yday is None and f.day is None):
        raise f.syntax()
    year = f.year
    if f.short_year and not f.bc:
        year += 2000 if year < 70 else 1900
    if f.bc or not 1 <= year <= 9999:
        raise _years(f.text)
    if f.yday is not None:
        if not 1 <= f.yday <= (366 if _leap(year) else 365):
            raise f.range()
        return date(year, 1, 1) + timedelta(days=f.yday - 1)
    month, day = f.month, f.day
    assert month is not None and day is not None
    if not 1 <= month <= 12:
        raise f.range(hint=not f.month_named)
    try:
        return date(year, month, day)
    except ValueError:
        raise f.range(hint=not f.month_named and day > 31) from None


def _years(text: str) -> EvalError:
    return EvalError(
        f'date out of range: "{text}": dates here are from the year 1 to 9999', sqlstate="22008"
    )


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
