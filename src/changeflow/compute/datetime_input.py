"""PostgreSQL 15's date and timestamp input forms beyond ISO 8601 (datestyle ``ISO, MDY``,
TimeZone UTC): month names, MDY numbers, ``yyyymmdd``, year.day-of-year, Julian days, AM/PM,
and zones (offsets, common abbreviations, IANA names). Errors are worded as PostgreSQL's."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import ROUND_HALF_EVEN, Decimal
from functools import cache

from changeflow.errors import EvalError

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august")
_MONTH_NAMES += ("september", "october", "november", "december")
_MONTHS = {name[:3]: i + 1 for i, name in enumerate(_MONTH_NAMES)}
_MONTHS |= {name: i + 1 for i, name in enumerate(_MONTH_NAMES)} | {"sept": 9}
_DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAYS = {name[:3] for name in _DAY_NAMES} | set(_DAY_NAMES) | {"tues", "wednes", "thur", "thurs"}
# PostgreSQL's default abbreviations (pg_timezone_abbrevs), seconds east of UTC
_ZONES = {"acst": 34200, "aedt": 39600, "aest": 36000, "akdt": -28800, "akst": -32400}
_ZONES |= {"awst": 28800, "bst": 3600, "cdt": -18000, "cest": 7200, "cet": 3600}
_ZONES |= {"cst": -21600, "edt": -14400, "eest": 10800, "eet": 7200, "est": -18000}
_ZONES |= {"gmt": 0, "hkt": 28800, "hst": -36000, "ist": 7200, "jst": 32400, "kst": 32400}
_ZONES |= {"mdt": -21600, "msk": 10800, "mst": -25200, "nzdt": 46800, "nzst": 43200}
_ZONES |= {"pdt": -25200, "pst": -28800, "sast": 7200, "ut": 0, "utc": 0, "wet": 0}
_ZONES |= {"z": 0, "zulu": 0}
_TOKEN = re.compile(
    r"(?P<time>\d{1,2}:\d{1,2}(?::\d{1,2}(?:\.\d*)?)?)"
    r"|(?P<offset>[+-]\d{3,4}(?![\d:])|[+-]\d{1,2}(?::\d{2}(?::\d{2})?)?)"
    r"|(?P<num>\d+(?:[-/.]\w+)*)"
    r"|(?P<word>[a-z][\w+-]*(?:[/.][\w+-]+)*)"
    r"|(?P<skip>[\s,]+)"
)
_JULIAN_TO_ORDINAL = 1721425  # Julian day of 0001-01-01 minus one
_PLAIN_ISO = re.compile(
    r"\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d(?:\.\d{1,6})?)?)?"
    r"(?:Z|[+-](?:0\d|1[0-5])(?::?\d\d)?)?",
    re.IGNORECASE,
)
HINT = 'Perhaps you need a different "datestyle" setting.'


class _Bad(Exception):
    """A field that is not a date's (22007)."""


class _Zone(Exception):
    """A zone offset beyond 15 hours (22009)."""


class _NoZone(Exception):
    """A time zone name no zone has (22023)."""


class _Unheld(Exception):
    """A date PostgreSQL holds and a Python date cannot (BC, or after 9999)."""


class _Range(Exception):
    """A field whose value no date has (22008), with PostgreSQL's hint when it gives one."""

    def __init__(self, hint: str = "") -> None:
        super().__init__(hint)
        self.hint = hint


def plain_iso(text: str) -> bool:
    """Whether ``text`` is a plain ISO 8601 date or timestamp, read the same by Python's
    ``fromisoformat`` and PostgreSQL (the fast path)."""
    return _PLAIN_ISO.fullmatch(text) is not None


def _type_name(kind: str) -> str:
    return {"timestamptz": "timestamp with time zone"}.get(kind, kind)


def parse_datetime_input(text: str, kind: str) -> date | datetime:
    """``text`` read as PostgreSQL reads a ``kind`` (``date``, ``timestamp`` or
    ``timestamptz``): a date, a naive timestamp, or an aware UTC timestamp."""
    try:
        return _parse(text, kind)
    except _Range as e:
        raise EvalError(
            f'date/time field value out of range: "{text}"', sqlstate="22008", hint=e.hint
        ) from None
    except _Unheld:
        raise EvalError(
            f'date "{text}" is out of the supported range: only years 1 to 9999 AD are held here',
            sqlstate="22008",
        ) from None
    except _NoZone as e:
        raise EvalError(f'time zone "{e}" not recognized', sqlstate="22023") from None
    except _Zone:
        raise EvalError(
            f'time zone displacement out of range: "{text}"', sqlstate="22009"
        ) from None
    except (_Bad, ValueError, OverflowError):
        raise EvalError(
            f'invalid input syntax for type {_type_name(kind)}: "{text}"', sqlstate="22007"
        ) from None


def _two_digit(text: str, value: int) -> int:
    if len(text) > 2:
        return value
    return value + (1900 if value >= 70 else 2000)


def _parse(text: str, kind: str) -> date | datetime:
    s = re.sub(r"(?<=\d)t(?=\d)", " ", text.strip().lower())
    words: list[tuple[str, str]] = []
    pos = 0
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m is None or m.end() == pos:
            raise _Bad
        pos = m.end()
        if m.lastgroup != "skip":
            words.append((m.lastgroup or "", m.group()))
    day_of: date | None = None
    parts: list[tuple[str, int]] = []  # ("m", month) from a name, or ("n" + digits, value)
    clock: list[Decimal] | None = None
    meridian = ""
    zone: tzinfo | None = None
    bc = False
    for what, word in words:
        if what == "time":
            if clock is not None:
                raise _Bad
            clock = [Decimal(x) for x in word.split(":")]
        elif what == "offset":
            if zone is not None:
                raise _Bad
            zone = _offset(word)
        elif what == "num":
            pieces = re.split(r"[-/.]", word)
            if len(pieces) == 1 and parts == [] and day_of is None and len(word) in (6, 8):
                day_of = _compact(word)
            elif len(pieces) == 1 and day_of is not None and clock is None and len(word) == 6:
                clock = [Decimal(word[:2]), Decimal(word[2:4]), Decimal(word[4:])]
            elif len(pieces) == 2 and len(pieces[1]) == 3 and not parts:
                year, doy = int(pieces[0]), int(pieces[1])
                if not 1 <= doy <= 366:
                    raise _Bad
                if not 1 <= year <= 9999:
                    raise _Range if year < 1 else _Unheld
                day_of = date(year, 1, 1) + timedelta(days=doy - 1)
            elif len(pieces) == 1:
                parts.append(("n" + word, int(word)))
            elif len(pieces) == 3 and not parts and day_of is None and clock is None:
                day_of = _ymd([_piece(p) for p in pieces])
            else:
                raise _Bad
        elif word in _MONTHS:
            parts.append(("m", _MONTHS[word]))
        elif "-" in word or ("/" in word and word.split("/")[0] in _MONTHS):
            pieces = re.split(r"[-/]", word)
            if len(pieces) != 3 or parts or day_of is not None:
                raise _Bad
            day_of = _ymd([_piece(p) for p in pieces])
        elif word in _DAYS or word == "ad":
            continue
        elif word == "bc":
            bc = True
        elif word in ("am", "pm"):
            meridian = word
        elif word in ("today", "tomorrow", "yesterday") and day_of is None and not parts:
            day_of = _today() + timedelta(days={"today": 0, "tomorrow": 1}.get(word, -1))
        elif word == "allballs":
            clock = [Decimal(0)] * 3
        elif re.fullmatch(r"j\d+", word):
            ordinal = int(word[1:]) - _JULIAN_TO_ORDINAL
            if not 1 <= ordinal <= date.max.toordinal():
                raise _Unheld
            day_of = date.fromordinal(ordinal)
        elif word in _ZONES and zone is None:
            zone = timezone(timedelta(seconds=_ZONES[word]))
        elif zone is None and (found := _iana(word)) is not None:
            zone = found
        elif "/" in word and kind != "date":  # a zone's name, but no zone's
            raise _NoZone(word)
        else:
            raise _Bad
    if parts:
        if day_of is not None:
            raise _Bad
        day_of = _ymd(parts)
    if day_of is None:
        raise _Bad
    if bc:
        raise _Unheld
    if kind == "date":
        return day_of
    stamp = datetime.combine(day_of, time(0)) + _clock(clock or [Decimal(0)] * 3, meridian)
    if kind != "timestamptz" and "with time zone" not in kind:
        return stamp
    zone = zone or UTC
    # a local time a zone's clock skips or repeats: the smaller offset, as PostgreSQL picks
    local = min((stamp.replace(tzinfo=zone, fold=f) for f in (0, 1)), key=_utcoffset)
    return local.astimezone(UTC)


def _utcoffset(stamp: datetime) -> timedelta:
    return stamp.utcoffset() or timedelta(0)


def _today() -> date:
    from changeflow.compute.scalars import STATEMENT_TIME

    return (STATEMENT_TIME.get() or datetime.now(UTC)).astimezone(UTC).date()


def _piece(p: str) -> tuple[str, int]:
    if p in _MONTHS:
        return ("m", _MONTHS[p])
    if not p.isdigit():
        raise _Bad
    return ("n" + p, int(p))


def _ymd(parts: list[tuple[str, int]]) -> date:
    """A date from three fields in the order PostgreSQL's MDY datestyle reads them."""
    if len(parts) != 3:
        raise _Bad
    names = [i for i, (tag, _) in enumerate(parts) if tag == "m"]
    if len(names) > 1:
        raise _Bad
    if names:
        month = parts[names[0]][1]
        rest = [p for p in parts if p[0] != "m"]
        long_ones = [p for p in rest if len(p[0]) > 3]
        if long_ones:
            year_part = long_ones[0]
            day_part = next(p for p in rest if p is not year_part)
        else:
            day_part, year_part = rest
    else:
        first = parts[0]
        if len(first[0]) > 3:  # yyyy-mm-dd
            year_part, (_, month), day_part = parts
        else:  # mm/dd/yy
            (_, month), day_part, year_part = parts
    if not 1 <= month <= 12:
        raise _Range(HINT)
    year = _two_digit(year_part[0][1:], year_part[1])
    if year < 1:
        raise _Range
    return _date(year, month, day_part[1])


def _date(year: int, month: int, day: int) -> date:
    if not 1 <= month <= 12:
        raise _Range(HINT)
    if year > 9999 and 1 <= day <= 31:
        raise _Unheld
    try:
        return date(year, month, day)
    except ValueError:
        raise _Range from None


def _compact(word: str) -> date:
    """``yyyymmdd`` or ``yymmdd``."""
    if len(word) == 8:
        return _date(int(word[:4]), int(word[4:6]), int(word[6:]))
    return _date(_two_digit(word[:2], int(word[:2])), int(word[2:4]), int(word[4:]))


def _clock(fields: list[Decimal], meridian: str) -> timedelta:
    """The time since midnight (``24:00:00`` a whole day; a leap second ``:60`` rolls on)."""
    hour, minute = int(fields[0]), int(fields[1])
    seconds = fields[2] if len(fields) > 2 else Decimal(0)
    if meridian:
        if not 0 <= hour <= 12:
            raise _Range
        hour = hour % 12 + (12 if meridian == "pm" else 0)
    if hour > 24 or minute > 59 or seconds >= 61 or (hour == 24 and (minute or seconds)):
        raise _Range
    micros = int((seconds * 1_000_000).quantize(Decimal(1), ROUND_HALF_EVEN))
    return timedelta(hours=hour, minutes=minute, microseconds=micros)


def _offset(word: str) -> tzinfo:
    sign = -1 if word[0] == "-" else 1
    body = word[1:]
    if ":" in body:
        pieces = [int(p) for p in body.split(":")] + [0, 0]
    elif len(body) > 2:
        pieces = [int(body[:-2]), int(body[-2:]), 0]
    else:
        pieces = [int(body), 0, 0]
    hours, minutes, seconds = pieces[:3]
    if hours > 15 or minutes > 59 or seconds > 59:
        raise _Zone
    return timezone(sign * timedelta(hours=hours, minutes=minutes, seconds=seconds))


@cache
def _iana_names() -> dict[str, str]:
    import zoneinfo

    return {name.lower(): name for name in zoneinfo.available_timezones()}


def _iana(word: str) -> tzinfo | None:
    import zoneinfo

    name = _iana_names().get(word)
    return zoneinfo.ZoneInfo(name) if name else None
