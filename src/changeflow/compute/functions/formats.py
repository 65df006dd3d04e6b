"""``to_char`` (PostgreSQL's): a timestamp, date, interval (a time as its interval) or number as
text by a template, defined once, on Python values and on Spark (timestamps by a template
Spark's ``date_format`` can say)."""

from __future__ import annotations

import re
from datetime import date, datetime, time
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP
from typing import TYPE_CHECKING, Any

from changeflow.compute.functions.base import F, Function, unsupported
from changeflow.compute.functions.number_format import FLOAT_DIGITS, number_text
from changeflow.compute.functions.text import _constant
from changeflow.compute.intervals import Interval
from changeflow.compute.time_of_day import micros_of
from changeflow.compute.types import (
    DATE,
    FLOAT4,
    FLOAT8,
    INTERVAL,
    NULLTYPE,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
)
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler

# The template words, longest first; a case-sensitive word's case says the output's.
_WORDS = re.compile(
    r'FM|"(?:[^"\\]|\\.)*"|HH24|HH12|HH|YYYY|YYY|YY|MONTH|Month|month|MON|Mon|mon|MM|MI|MS|'
    r"DDD|DD|DAY|Day|day|DY|Dy|dy|D|SS|US|AM|PM|am|pm|A\.M\.|P\.M\.|a\.m\.|p\.m\.|Q|.",
    re.S,
)


def _cased(word: str, text: str) -> str:
    if word.isupper():
        return text.upper()
    return text.lower() if word.islower() else text


def _time_word(word: str, t: datetime) -> tuple[str, bool]:
    """One template word's text for ``t``, and whether FM may strip its padding."""
    upper = word.upper()
    numbers = {
        "HH24": (t.hour, 2),
        "HH12": ((t.hour - 1) % 12 + 1, 2),
        "HH": ((t.hour - 1) % 12 + 1, 2),
        "YYYY": (t.year, 4),
        "YYY": (t.year % 1000, 3),
        "YY": (t.year % 100, 2),
        "MM": (t.month, 2),
        "MI": (t.minute, 2),
        "MS": (t.microsecond // 1000, 3),
        "US": (t.microsecond, 6),
        "DDD": (t.timetuple().tm_yday, 3),
        "DD": (t.day, 2),
        "D": (t.isoweekday() % 7 + 1, 1),
        "SS": (t.second, 2),
        "Q": ((t.month - 1) // 3 + 1, 1),
    }
    if upper in numbers:
        value, width = numbers[upper]
        return str(value).zfill(width), True
    if upper in ("MONTH", "DAY"):
        return _cased(word, t.strftime("%B" if upper == "MONTH" else "%A")).ljust(9), True
    if upper in ("MON", "DY"):
        return _cased(word, t.strftime("%b" if upper == "MON" else "%a")), False
    if upper in ("AM", "PM", "A.M.", "P.M."):
        noon = "PM" if t.hour >= 12 else "AM"
        text = noon if "." not in word else f"{noon[0]}.{noon[1]}."
        return (text if word[0].isupper() else text.lower()), False
    if word.startswith('"'):
        return re.sub(r"\\(.)", r"\1", word[1:-1]), False
    return word, False


def _trunc_div(a: int, b: int) -> tuple[int, int]:
    """C's integer division: the quotient toward zero and its remainder."""
    q = abs(a) // b * (1 if a >= 0 else -1)
    return q, a - q * b


def _interval_word(word: str, v: Interval, fill_mode: bool) -> str:
    """One template word's text for an interval, as PostgreSQL's ``interval_to_char`` writes
    it: fields with their own signs (a negative one a place wider), 22007 for the words of a
    date's calendar (month and day names, day of the week)."""
    upper = word.upper()
    years, months = _trunc_div(v.months, 12)
    hours, rest = _trunc_div(v.micros, 3_600_000_000)
    minutes, rest = _trunc_div(rest, 60_000_000)
    seconds, fraction = _trunc_div(rest, 1_000_000)
    half_day = _trunc_div(hours, 12)[1] or 12
    numbers = {  # the value, its width, and the field whose sign makes it a place wider
        "YYYY": (years, 4, years),
        "YYY": (_trunc_div(years, 1000)[1], 3, years),
        "YY": (_trunc_div(years, 100)[1], 2, years),
        "MM": (months, 2, months),
        "DD": (v.days, 2, 0),
        "DDD": ((years * 12 + months) * 30 + v.days, 3, 0),
        "HH24": (hours, 2, hours),
        "HH12": (half_day, 2, hours),
        "HH": (half_day, 2, hours),
        "MI": (minutes, 2, minutes),
        "SS": (seconds, 2, seconds),
        "MS": (_trunc_div(fraction, 1000)[0], 3, 0),
        "US": (fraction, 6, 0),
    }
    if upper in numbers:
        value, width, sign = numbers[upper]
        return str(value).zfill(0 if fill_mode else width + (sign < 0))
    if upper == "Q":
        return str(_trunc_div(months - 1, 3)[0] + 1) if months else ""
    if upper in ("MONTH", "MON", "DAY", "DY", "D"):
        raise EvalError("invalid format specification for an interval value", sqlstate="22007")
    if upper in ("AM", "PM", "A.M.", "P.M."):
        return _time_word(word, datetime(1, 1, 1, 12 * (_trunc_div(hours, 24)[1] >= 12)))[0]
    return _time_word(word, datetime(1, 1, 1))[0]


def _interval_text(value: Interval, template: str) -> str:
    out, fill_mode = [], False
    for m in _WORDS.finditer(template):
        word = m.group(0)
        if word == "FM":
            fill_mode = True
            continue
        out.append(_interval_word(word, value, fill_mode))
        fill_mode = False
    return "".join(out)


def _time_text(value: date, template: str) -> str:
    t = value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)
    out, fill_mode = [], False
    for m in _WORDS.finditer(template):
        word = m.group(0)
        if word == "FM":
            fill_mode = True
            continue
        text, padded = _time_word(word, t)
        if fill_mode and padded:
            text = text.rstrip() if not text.strip().isdigit() else (text.lstrip("0") or "0")
        fill_mode = False
        out.append(text)
    return "".join(out)


def _to_char(typed: tuple[Any, SqlType], template: tuple[str | None, SqlType]) -> str | None:
    """PostgreSQL's to_char (given each argument with its type: a real shows 6 significant
    digits where a double shows 15)."""
    value, kind = typed
    if value is None or template[0] is None:
        return None
    if kind == FLOAT4:
        return number_text(value, template[0], ROUND_HALF_EVEN, digits=FLOAT_DIGITS)
    return _to_char_of(value, template[0])


def _to_char_of(value: Any, template: str) -> str:
    if isinstance(value, time):  # PostgreSQL casts a time to an interval for to_char
        value = Interval(0, 0, micros_of(value))
    if isinstance(value, Interval):
        return _interval_text(value, template)
    if isinstance(value, date):
        return _time_text(value, template)
    half = ROUND_HALF_EVEN if isinstance(value, float) else ROUND_HALF_UP
    return number_text(value, template, half)


def _rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2 or args[1] not in (TEXT, NULLTYPE):
        raise PlanError("no match", sqlstate="42883")
    if args[0] == NULLTYPE:  # a number's, a timestamp's, an interval's…
        shown = ", ".join(map(str, args))
        raise PlanError(f"function to_char({shown}) is not unique", sqlstate="42725")
    if args[0] in (TIMESTAMP, TIMESTAMPTZ, DATE, TIME, INTERVAL, FLOAT8) or args[0].numeric:
        return TEXT
    raise PlanError("no match", sqlstate="42883")


# Template words Spark's date_format says the same way.
_SPARK = {
    "YYYY": "yyyy",
    "YY": "yy",
    "MM": "MM",
    "DD": "dd",
    "HH24": "HH",
    "HH12": "hh",
    "HH": "hh",
    "MI": "mm",
    "SS": "ss",
    "MS": "SSS",
    "US": "SSSSSS",
    "AM": "a",
    "PM": "a",
    "Mon": "MMM",
    "Dy": "EEE",
    "FMMonth": "MMMM",
    "FMDay": "EEEE",
    "DDD": "DDD",
}


def _spark_to_char(cc: ExprCompiler, e: Func) -> Column:
    template = _constant(e, 1, "template")
    if e.args[0].type not in (TIMESTAMP, TIMESTAMPTZ, DATE):
        raise unsupported(e, f"to_char of a {e.args[0].type} on the cluster tier")
    out: list[str] = []
    words = iter(_WORDS.finditer(template))
    for m in words:
        word = m.group(0)
        if word == "FM":
            word += next(words).group(0)
        if word in _SPARK:
            out.append(_SPARK[word])
        elif word.startswith('"') or not word.isalnum():
            text = word[1:-1] if word.startswith('"') else word
            out.append("'" + text.replace("'", "''") + "'" if text else "")
        else:
            raise unsupported(e, f"the to_char template word {word} on the cluster tier")
    return F.date_format(cc.compile(e.args[0]), "".join(out))


FUNCTIONS = [Function("to_char", _rule, _to_char, strict=False, spark=_spark_to_char)]
