"""``to_date`` and ``to_timestamp(text, template)`` (PostgreSQL's): text read by a template of
``to_char``'s words, leniently as PostgreSQL reads it (a number takes up to its field's digits,
a separator matches any one non-alphanumeric character, spaces are skipped). Computed in the
process: Spark's parsers are stricter, so a view of them on the cluster tier is refused."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from changeflow.compute.functions.base import Function, _sig, in_process
from changeflow.compute.functions.formats import _WORDS
from changeflow.compute.types import DATE, TEXT
from changeflow.errors import EvalError

# The number fields: their widest reading in digits.
_WIDTHS = {
    "YYYY": 4,
    "YYY": 3,
    "YY": 2,
    "MM": 2,
    "DDD": 3,
    "DD": 2,
    "D": 1,
    "HH24": 2,
    "HH12": 2,
    "HH": 2,
    "MI": 2,
    "SS": 2,
    "MS": 3,
    "US": 6,
    "Q": 1,
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _bad(value: str, word: str) -> EvalError:
    return EvalError(f'invalid value "{value}" for "{word}"', sqlstate="22007")


def parse_template(text: str, template: str) -> datetime:
    """The timestamp ``text`` says by ``template`` (fields it leaves out are 1 or 0)."""
    if re.search("(?i)TZ|OF", template):
        raise EvalError("time zone fields in to_timestamp templates", sqlstate="0A000")
    got: dict[str, int] = {}
    pos = 0
    for m in _WORDS.finditer(template):
        word = m.group(0)
        upper = word.upper()
        if word == "FM":
            continue
        if pos >= len(text):  # fields past the end of the text are left out
            break
        if upper in _WIDTHS:
            while pos < len(text) and text[pos] == " ":
                pos += 1
            digits = re.match(rf"\d{{1,{_WIDTHS[upper]}}}", text[pos:])
            if digits is None:
                raise _bad(text[pos : pos + _WIDTHS[upper]], word)
            got[upper], pos = int(digits.group(0)), pos + digits.end()
            if upper in ("MS", "US"):  # a fraction: "5" is 500 ms
                got[upper] *= 10 ** (_WIDTHS[upper] - digits.end())
        elif upper in ("MON", "MONTH"):
            name = re.match(r"[A-Za-z]+", text[pos:])
            found = name.group(0).lower() if name else ""
            if found[:3] not in _MONTHS or (upper == "MON" and len(found) > 3):
                raise _bad(text[pos : pos + 3], word)
            got["MM"], pos = _MONTHS.index(found[:3]) + 1, pos + len(found)
        elif upper in ("DAY", "DY"):
            pos += len(re.match(r"[A-Za-z]*", text[pos:]).group(0))  # type: ignore[union-attr]
        elif upper in ("AM", "PM", "A.M.", "P.M."):
            mark = text[pos : pos + len(word)].upper()
            if mark not in ("AM", "PM", "A.M.", "P.M."):
                raise _bad(text[pos : pos + len(word)], word)
            got["PM"], pos = int(mark.startswith("P")), pos + len(word)
        elif word.startswith('"'):
            pos += len(word) - 2
        elif word.isspace():
            while pos < len(text) and text[pos].isspace():
                pos += 1
        elif pos < len(text) and not text[pos].isalnum():
            pos += 1
    return _assemble(got, text)


def _assemble(got: dict[str, int], text: str) -> datetime:
    year = got.get("YYYY", 1)
    if "YYYY" not in got and "YY" in got:
        year = got["YY"] + (2000 if got["YY"] < 70 else 1900)
    elif "YYYY" not in got and "YYY" in got:
        year = got["YYY"] + (2000 if got["YYY"] < 100 else 1000)
    hour = got.get("HH24", got.get("HH12", got.get("HH", 0)))
    if "PM" in got:
        hour = hour % 12 + 12 * got["PM"]
    try:
        if "DDD" in got and "MM" not in got:
            day = date(year, 1, 1) + timedelta(days=got["DDD"] - 1)
        else:
            day = date(year, got.get("MM", 1), got.get("DD", 1))
        if hour > 24 or got.get("MI", 0) > 59 or got.get("SS", 0) > 60:
            raise ValueError
    except ValueError:
        raise EvalError(f'date/time field value out of range: "{text}"', sqlstate="22008") from None
    micros = got.get("MS", 0) * 1000 + got.get("US", 0)
    return datetime(day.year, day.month, day.day) + timedelta(
        hours=hour, minutes=got.get("MI", 0), seconds=got.get("SS", 0), microseconds=micros
    )


def to_timestamp_text(text: str, template: str) -> datetime:
    """``to_timestamp(text, template)``: the timestamp in the session's zone (UTC)."""
    return parse_template(text, template).replace(tzinfo=UTC)


TEMPLATE_IN_PROCESS = in_process("reading text by a template is computed in the process")


FUNCTIONS = [
    Function(
        "to_date",
        _sig((TEXT, TEXT), result=DATE),
        lambda text, template: parse_template(text, template).date(),
        spark=TEMPLATE_IN_PROCESS,
    ),
]
