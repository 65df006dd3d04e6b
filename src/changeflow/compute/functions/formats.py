"""``to_char`` (PostgreSQL's): a timestamp, date or number as text by a template, defined once,
on Python values and on Spark (timestamps by a template Spark's ``date_format`` can say)."""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from changeflow.compute.functions.base import F, Function, unsupported
from changeflow.compute.functions.text import _constant
from changeflow.compute.types import DATE, FLOAT8, TEXT, TIMESTAMP, TIMESTAMPTZ, SqlType
from changeflow.errors import PlanError

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


def _number_text(value: Any, template: str, half: str) -> str:
    """A number by a template of ``9`` and ``0`` digits, ``.`` (or ``D``), ``,`` (or ``G``)
    and the ``FM`` prefix: a sign place before the digits, ``#`` when the digits do not fit."""
    fill_mode = "FM" in template.upper()
    body = re.sub("(?i)fm", "", template).replace("D", ".").replace("G", ",")
    whole, _, fraction = body.partition(".")
    places = sum(ch in "90" for ch in fraction)
    amount = Decimal(str(value)).quantize(Decimal(1).scaleb(-places), rounding=half)
    negative = amount < 0
    digits, _, decimals = f"{abs(amount):f}".partition(".")
    positions = sum(ch in "90" for ch in whole)
    if digits == "0" and (places or "0" not in whole):
        digits = "" if places else "0"
    if len(digits) > positions:
        hashes = re.sub("[90]", "#", body)
        return hashes if fill_mode else " " + hashes
    left, pending = [], list(digits)
    for ch in reversed(whole):
        if ch in "90":
            left.append(pending.pop() if pending else ("0" if ch == "0" else " "))
        elif ch == ",":
            left.append("," if pending or (left and left[-1] not in " ") else " ")
        else:
            left.append(ch)
    text = "".join(reversed(left))
    if "0" in whole:
        first = whole.index("0")
        text = text[:first] + text[first:].replace(" ", "0")
    start = len(text) - len(text.lstrip(" "))
    sign = "-" if negative else ("" if fill_mode else " ")
    text = text[:start] + sign + text[start:]
    if fraction:
        shown = list(decimals.ljust(places, "0"))
        if fill_mode:
            nines = [i for i, ch in enumerate(c for c in fraction if c in "90") if ch == "9"]
            while shown and len(shown) - 1 in nines and shown[-1] == "0":
                shown.pop()
        text += "." + "".join(shown)
    if fill_mode and not any(ch.isdigit() for ch in text):
        text = text.replace(".", "0.") if "." in text else text + "0"
    return text.lstrip(" ") if fill_mode else text


def _to_char(value: Any, template: str) -> str:
    if isinstance(value, date):
        return _time_text(value, template)
    half = ROUND_HALF_EVEN if isinstance(value, float) else ROUND_HALF_UP
    return _number_text(value, template, half)


def _rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2 or args[1] != TEXT:
        raise PlanError("no match", sqlstate="42883")
    if args[0] in (TIMESTAMP, TIMESTAMPTZ, DATE, FLOAT8) or args[0].numeric:
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
        raise unsupported(e, "to_char of a number on the cluster tier")
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


FUNCTIONS = [Function("to_char", _rule, _to_char, spark=_spark_to_char)]
