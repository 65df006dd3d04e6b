"""Values of SQL types: the meaning of arithmetic, comparison, LIKE and casts on non-NULL
values, with PostgreSQL's semantics (integer overflow and division by zero are
:class:`EvalError`; numeric division at PostgreSQL's scale; text forms as PostgreSQL prints and
reads them). The expression tree (:mod:`expr`) and every backend evaluate through these.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from changeflow.compute.array_shape import flat, nested, parse, shape, text_of
from changeflow.compute.datetime_input import parse_datetime_input, plain_iso
from changeflow.compute.floats import float4_from_text, float_text, to_float4
from changeflow.compute.intervals import Interval, parse_interval
from changeflow.compute.json_text import parse_json
from changeflow.compute.jsonb import parse_jsonb, scalar_of
from changeflow.compute.time_of_day import DAY_MICROS, micros_of, parse_time, time_of, time_text
from changeflow.compute.types import (
    BOOL,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT_RANGES,
    INTERVAL,
    JSON,
    JSONB,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    WIDE,
    SqlType,
    enum_label,
)
from changeflow.errors import EvalError

# -- arithmetic ------------------------------------------------------------------------------


def check_range(value: Any, kind: SqlType) -> Any:
    """``value`` if it fits ``kind``; an integer out of range or a float overflow is an error
    (a NaN comes back as :data:`NAN`)."""
    bound = INT_RANGES.get(kind)
    if bound is not None and not -bound <= value < bound:
        raise EvalError(f"{kind} out of range", sqlstate="22003")
    if kind.floating and isinstance(value, float):
        if math.isinf(value):
            raise EvalError("value out of range: overflow", sqlstate="22003")
        return one_nan(value if kind == FLOAT8 else to_float4(value))
    return value


NAN = math.nan
"""The one NaN object rows hold. PostgreSQL's NaN equals NaN and sorts after every other
number; a Python dict finds a key by identity before equality, so rows holding this same
object group, join and cancel as PostgreSQL's do (each ``float('nan')`` is another object)."""


NUMERIC_NAN = Decimal("NaN")
"""The one numeric NaN object rows hold (as :data:`NAN`)."""


def unstorable_nan(where: str) -> EvalError:
    """The error for a numeric NaN bound for ``where`` (a stored column, an Arrow column):
    Arrow's decimals have no NaN."""
    return EvalError(
        f"numeric NaN cannot be stored in {where}; it can be computed and compared in "
        "queries, or stored as double precision",
        sqlstate="0A000",
    )


def one_nan(value: Any) -> Any:
    """``value``, or :data:`NAN` (:data:`NUMERIC_NAN`) if it is a float (numeric) NaN."""
    if value != value:  # only a NaN is unequal to itself
        return NAN if isinstance(value, float) else NUMERIC_NAN
    return value


def _div(a: Any, b: Any, kind: SqlType) -> Any:
    if a != a:  # NaN divided by anything, zero too, is NaN
        return a
    if b == 0:
        raise EvalError("division by zero", sqlstate="22012")
    if kind.integer:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q  # truncates toward zero
    if kind == NUMERIC:
        return numeric_div(Decimal(a), Decimal(b))
    return a / b


def _weight(x: Decimal) -> tuple[int, int]:
    """A numeric's base-10000 weight and first base-10000 digit, as PostgreSQL stores it."""
    x = abs(x)
    if x == 0:
        return 0, 0
    weight = x.adjusted() // 4
    return weight, int(x.scaleb(-4 * weight))


def div_scale(a: Decimal, b: Decimal) -> int:
    """The scale of PostgreSQL's numeric quotient a / b (``select_div_scale``): at least 16
    significant digits, and no fewer decimals than either operand shows."""
    (w1, f1), (w2, f2) = _weight(a), _weight(b)
    qweight = w1 - w2 - (1 if f1 <= f2 else 0)
    scales = (max(-int(x.as_tuple().exponent), 0) for x in (a, b))
    return min(max(16 - qweight * 4, *scales, 0), 1000)


def numeric_div(a: Decimal, b: Decimal) -> Decimal:
    """``a / b`` rounded (half away from zero) to PostgreSQL's scale for it, but to no fewer
    than 10 decimals (PostgreSQL's scale falls below that only for quotients past 1e24). A
    view that divides numerics is not hydrated on Spark, whose quotient has its own scale
    (``spark_real.divides_numerics``)."""
    if a.is_nan() or b.is_nan() or (a.is_infinite() and b.is_infinite()):
        return NUMERIC_NAN
    if b == 0:
        raise EvalError("division by zero", sqlstate="22012")
    if a.is_infinite():  # infinity divided by a finite number keeps its sign
        return a if b > 0 else -a
    if b.is_infinite():
        return Decimal(0)
    scale = max(div_scale(a, b), 10)
    with localcontext() as ctx:
        ctx.prec = max(a.adjusted() - b.adjusted(), 0) + scale + 10
        return (a / b).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def _mod(a: Any, b: Any, kind: SqlType) -> Any:
    if a != a:  # as in division
        return a
    if b == 0:
        raise EvalError("division by zero", sqlstate="22012")
    if kind.floating:
        return math.fmod(a, b)
    if kind == NUMERIC:
        if a.is_infinite():  # an infinity's remainder is NaN
            return NUMERIC_NAN
        with localcontext() as ctx:
            ctx.prec = 80
            return a % b  # Decimal's remainder has the dividend's sign, as PostgreSQL's
    return a - b * _div(a, b, kind)  # the sign of the dividend


def _wide(op: str, a: Decimal, b: Decimal) -> Decimal:
    """Numeric ``a op b`` exactly; NaN where infinities cancel (inf - inf, inf * 0)."""
    try:
        return getattr(WIDE, op)(a, b)
    except InvalidOperation:
        return NUMERIC_NAN


ARITH = {
    "+": lambda a, b, k: _wide("add", a, b) if k == NUMERIC else a + b,
    "-": lambda a, b, k: _wide("subtract", a, b) if k == NUMERIC else a - b,
    "*": lambda a, b, k: _wide("multiply", a, b) if k == NUMERIC else a * b,
    "/": _div,
    "%": _mod,
}


def as_type(value: Any, kind: SqlType) -> Any:
    """A numeric operand in the representation of ``kind``."""
    if kind.floating:
        return float(value)
    if kind == NUMERIC and not isinstance(value, Decimal):
        return Decimal(value)
    return value


def date_arith(op: str, a: date, days: int) -> date:
    try:
        return date.fromordinal(a.toordinal() + (days if op == "+" else -days))
    except (ValueError, OverflowError):
        raise EvalError("date out of range", sqlstate="22008") from None


# -- comparison and logic --------------------------------------------------------------------


def comparable(a: SqlType, b: SqlType) -> bool:
    """Can values of ``a`` and ``b`` be compared (and so be equal)? json has no operator,
    nor have arrays of it."""
    if JSON in (a, b, a.element, b.element):
        return False
    if NULLTYPE in (a, b) or a == b:
        return True
    if a.numeric and b.numeric:
        return True
    stamps = {DATE, TIMESTAMP, TIMESTAMPTZ}
    return a in stamps and b in stamps and TIMESTAMPTZ not in (a, b) or {a, b} == {DATE, TIMESTAMP}


def _stamp(value: Any) -> Any:
    """A date compared with a timestamp is its midnight."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day)
    return value


CMP = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def compare_values(op: str, a: Any, b: Any) -> bool:
    """``a op b`` for non-NULL values of comparable types (arrays element by element, a NULL
    element after every value and equal to another NULL, as PostgreSQL compares them; a float
    or numeric NaN equal to NaN and after every other number)."""
    if a != a or b != b:  # only a NaN is unequal to itself
        a, b = a != a, b != b  # False < True: NaN after every number
    elif isinstance(a, tuple):
        a, b = _array_key(a), _array_key(b)
    elif isinstance(a, date) != isinstance(b, date) or type(a) is not type(b):
        if isinstance(a, date):
            a, b = _stamp(a), _stamp(b)
        elif isinstance(a, Decimal) or isinstance(b, Decimal):
            if isinstance(a, float) or isinstance(b, float):
                a, b = float(a), float(b)
            else:
                a, b = Decimal(a), Decimal(b)
    return CMP[op](a, b)


def _array_key(values: tuple) -> tuple:
    """As PostgreSQL orders arrays: element by element in storage order, then by the number
    of dimensions and their lengths."""
    elements = tuple((1, 0) if v is None else (0, nan_last(v)) for v in flat(values))
    return (elements, len(shape(values)), shape(values))


def nan_last(value: Any) -> tuple:
    """A key that orders non-NULL values of one type as Python does, a NaN after all others."""
    return (True, 0) if value != value else (False, value)


def coerce(value: Any, kind: SqlType) -> Any:
    """A branch's value in the unified type (numbers promoted; others as they are)."""
    return as_type(value, kind) if value is not None and kind.numeric else value


def like_pattern(pattern: str, quote: Callable[[str], str] = re.escape) -> str:
    """A LIKE pattern (``%``, ``_``, backslash escapes) as regular-expression text, each literal
    character quoted by ``quote`` (Python's or Java's way)."""
    out, escaped = [], False
    for ch in pattern:
        if escaped:
            out.append(quote(ch))
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(quote(ch))
    if escaped:
        raise EvalError("LIKE pattern must not end with escape character", sqlstate="22025")
    return "".join(out)


def like_regex(pattern: str, case_insensitive: bool = False) -> re.Pattern[str]:
    """A LIKE pattern as a compiled regular expression (matched against the whole value)."""
    flags = re.DOTALL | (re.IGNORECASE if case_insensitive else 0)
    return re.compile(like_pattern(pattern), flags)


# -- casts -----------------------------------------------------------------------------------


def numeric_text(value: Decimal) -> str:
    """A numeric as PostgreSQL writes it: at its own scale (1470.10), without an exponent
    (0.0000001) or a negative zero."""
    if value.is_nan():
        return "NaN"
    if value.is_infinite():
        return "Infinity" if value > 0 else "-Infinity"
    return format(abs(value) if value.is_zero() else value, "f")


def to_text(value: Any, kind: SqlType) -> str:
    """A non-NULL value as PostgreSQL's text output."""
    if kind.element is not None:
        return array_text(value, kind.element)
    if kind == NUMERIC and isinstance(value, Decimal):
        return numeric_text(value)
    if kind == BOOL:
        return "true" if value else "false"
    if kind.floating:
        return float_text(value, kind)
    if kind in (TIMESTAMP, TIMESTAMPTZ):
        text = re.sub(r"(\.\d*[1-9])0+$", r"\1", value.replace(tzinfo=None).isoformat(sep=" "))
        return text + ("+00" if kind == TIMESTAMPTZ else "")
    if kind == DATE:
        return value.isoformat()
    if kind == TIME:
        return time_text(value)
    if kind == BYTEA:
        return "\\x" + value.hex()
    return str(value)


def output_text(value: Any, kind: SqlType) -> str:
    """A non-NULL value as its type's output function writes it (what ``concat``, ``format``
    and a record show): as :func:`to_text`, but a boolean is ``t`` or ``f``."""
    if kind == BOOL:
        return "t" if value else "f"
    return to_text(value, kind)


_TRUE = {"t", "true", "y", "yes", "on", "1"}
_FALSE = {"f", "false", "n", "no", "off", "0"}


def _syntax(kind: SqlType, text: str) -> EvalError:
    """22P02, or 22007 (invalid_datetime_format) for a date or timestamp, as PostgreSQL."""
    code = "22007" if kind in (DATE, TIMESTAMP, TIMESTAMPTZ) else "22P02"
    return EvalError(f'invalid input syntax for type {kind}: "{text}"', sqlstate=code)


def array_text(values: tuple, element: SqlType) -> str:
    """An array as PostgreSQL prints it: ``{1,2,NULL}``, elements quoted where needed
    (``{{1,2},{3,4}}`` for several dimensions)."""
    if nested(values):
        return text_of(values, lambda v: array_text(v, element))
    out = []
    for v in values:
        if v is None:
            out.append("NULL")
            continue
        t = to_text(v, element)
        if not t or t.upper() == "NULL" or any(c in t for c in '{},"\\ \t\n'):
            t = '"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(t)
    return "{" + ",".join(out) + "}"


def array_from_text(text: str, element: SqlType) -> tuple:
    """``'{1,2,NULL}'`` read as an array of ``element`` (``'{{1,2},{3,4}}'`` of several
    dimensions; 22P02 if malformed)."""
    s = text.strip()
    if len(s) < 2 or s[0] != "{" or s[-1] != "}":
        raise EvalError(f'malformed array literal: "{text}"', sqlstate="22P02")
    if s[1:].lstrip().startswith("{"):
        return parse(s, lambda t: array_from_text(t, element))
    body, items, i = s[1:-1], [], 0
    if not body.strip():
        return ()
    while True:
        while i < len(body) and body[i].isspace():
            i += 1
        if i < len(body) and body[i] == '"':
            j, chars = i + 1, []
            while j < len(body) and body[j] != '"':
                if body[j] == "\\":
                    j += 1
                chars.append(body[j : j + 1])
                j += 1
            if j >= len(body):
                raise EvalError(f'malformed array literal: "{text}"', sqlstate="22P02")
            items.append(from_text("".join(chars), element))
            i = j + 1
            while i < len(body) and body[i].isspace():
                i += 1
        else:
            j = i
            while j < len(body) and body[j] != ",":
                j += 1
            raw = body[i:j].strip()
            if not raw or any(c in raw for c in '{}"'):
                raise EvalError(f'malformed array literal: "{text}"', sqlstate="22P02")
            items.append(None if raw.upper() == "NULL" else from_text(raw, element))
            i = j
        if i >= len(body):
            return tuple(items)
        if body[i] != ",":
            raise EvalError(f'malformed array literal: "{text}"', sqlstate="22P02")
        i += 1


def bytea_from_text(text: str) -> bytes:
    """bytea's input: ``\\x`` and hex digits, else the text's bytes with ``\\\\`` and
    ``\\nnn`` (octal) escapes (22P02 when malformed)."""
    if text.startswith("\\x"):
        digits = "".join(text[2:].split())
        bad = next((c for c in digits if c not in "0123456789abcdefABCDEF"), None)
        if bad is not None:
            raise EvalError(f'invalid hexadecimal digit: "{bad}"', sqlstate="22023")
        if len(digits) % 2:
            raise EvalError("invalid hexadecimal data: odd number of digits", sqlstate="22023")
        return bytes.fromhex(digits)
    out, i = bytearray(), 0
    while i < len(text):
        ch = text[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
        elif text[i + 1 : i + 2] == "\\":
            out.append(0x5C)
            i += 2
        elif len(text) >= i + 4 and all(c in "01234567" for c in text[i + 1 : i + 4]):
            out.append(int(text[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            raise _syntax(BYTEA, text)
    return bytes(out)


# now()'s value for the statement being planned: the start of its transaction (the session
# sets it; planning outside a session reads the clock); also what 'now' and 'today' read
STATEMENT_TIME: ContextVar[datetime | None] = ContextVar("statement_time", default=None)
_SPECIAL_STAMPS = ("epoch", "now", "today", "tomorrow", "yesterday", "infinity", "-infinity")


def _special_stamp(word: str, kind: SqlType) -> Any:
    """PostgreSQL's special date and timestamp inputs: ``epoch``, and ``now``, ``today``,
    ``tomorrow`` and ``yesterday`` read at the statement's time (UTC); the infinities are no
    value here (0A000)."""
    from datetime import UTC, timedelta

    if word.endswith("infinity"):
        raise EvalError(
            f"{kind} '{word}' is not supported: dates here are finite", sqlstate="0A000"
        )
    now = STATEMENT_TIME.get() or datetime.now(UTC)
    if word == "epoch":
        now = datetime(1970, 1, 1, tzinfo=UTC)
    elif word != "now":
        days = {"today": 0, "tomorrow": 1, "yesterday": -1}[word]
        now = now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=days)
    if kind == DATE:
        return now.date()
    return now if kind == TIMESTAMPTZ else now.replace(tzinfo=None)


def from_text(text: str, kind: SqlType) -> Any:
    """Text read as a value of ``kind``, as a PostgreSQL cast from text does."""
    if kind.labels is not None:
        return enum_label(text, kind)
    if kind.element is not None:
        return array_from_text(text, kind.element)
    s = text.strip()
    try:
        if kind == BOOL:
            if s.lower() in _TRUE | _FALSE:
                return s.lower() in _TRUE
            raise _syntax(kind, text)
        if "_" in s and (kind.integer or kind == NUMERIC or kind.floating):
            raise _syntax(kind, text)  # PostgreSQL 15 reads no digit separators (Python does)
        if kind.integer:
            return check_range(int(s), kind)
        if kind == NUMERIC:
            value = Decimal(s)
            if value.is_snan():
                raise _syntax(kind, text)
            return one_nan(value)
        if kind == FLOAT8:
            return one_nan(float(s))
        if kind == FLOAT4:
            return one_nan(float4_from_text(s, text))
        if kind in (DATE, TIMESTAMP, TIMESTAMPTZ) and s.lower() in _SPECIAL_STAMPS:
            return _special_stamp(s.lower(), kind)
        if kind in (DATE, TIMESTAMP, TIMESTAMPTZ) and not plain_iso(s):
            raise ValueError(s)  # fromisoformat reads forms PostgreSQL refuses (1999-W01-1)
        if kind == DATE:
            return date.fromisoformat(s)
        if kind == UUID:
            return uuid.UUID(s)
        if kind == BYTEA:
            return bytea_from_text(text)
        if kind == INTERVAL:
            return parse_interval(text)
        if kind == TIME:
            return parse_time(text)
        if kind == JSONB:
            return parse_jsonb(text)
        if kind == JSON:
            return parse_json(text)
        if kind in (TIMESTAMP, TIMESTAMPTZ):
            stamp = datetime.fromisoformat(s)
            if kind == TIMESTAMPTZ:
                from datetime import UTC

                stamp = stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)
            else:
                stamp = stamp.replace(tzinfo=None)
            return stamp
    except ValueError:
        if kind in (DATE, TIMESTAMP, TIMESTAMPTZ):  # not ISO 8601: PostgreSQL's other forms
            return parse_datetime_input(text, str(kind))
        raise _syntax(kind, text) from None
    except InvalidOperation:
        raise _syntax(kind, text) from None
    return text


def cast_value(value: Any, source: SqlType, target: SqlType) -> Any:
    """``value::target`` for a non-NULL value of ``source``."""
    if source in (target, NULLTYPE):
        return value
    if target == TEXT:
        return to_text(value, source)
    if source == TEXT:
        return from_text(value, target)
    if source.element is not None and target.element is not None:
        if nested(value):  # each sub-array cast in turn
            return tuple(cast_value(v, source, target) for v in value)
        return tuple(
            None if v is None else cast_value(v, source.element, target.element) for v in value
        )
    if target.integer and source.numeric:
        if source.floating:
            if math.isnan(value) or math.isinf(value):
                raise EvalError(f"{target} out of range", sqlstate="22003")
            return check_range(round(value), target)  # half to even, as rint
        if source == NUMERIC:
            if not value.is_finite():
                shown = "NaN" if value.is_nan() else "infinity"
                raise EvalError(f"cannot convert {shown} to {target}", sqlstate="0A000")
            return check_range(int(value.to_integral_value(rounding=ROUND_HALF_UP)), target)
        return check_range(value, target)
    if target == NUMERIC and source.numeric:
        if source.floating and math.isnan(value):
            return NUMERIC_NAN
        if source.floating and math.isinf(value):
            raise EvalError("cannot convert infinity to numeric", sqlstate="22003")
        if source == FLOAT4:  # six significant digits, as PostgreSQL's float4_numeric
            return Decimal(format(Decimal(f"{value:.6g}"), "f"))
        return Decimal(repr(value)) if source == FLOAT8 else Decimal(value)
    if target == FLOAT8 and source.numeric:
        return one_nan(float(value))
    if target == FLOAT4 and source == NUMERIC:  # through its text, as PostgreSQL
        return one_nan(float4_from_text(numeric_text(value), numeric_text(value)))
    if target == FLOAT4 and source.numeric:
        return one_nan(to_float4(float(value)))
    if source == JSON and target == JSONB:
        return parse_jsonb(value)
    if source == JSONB and target == JSON:
        return value.text
    if source == JSONB and (target.numeric or target == BOOL):
        v = scalar_of(value, "boolean" if target == BOOL else str(target))
        return v if target == BOOL else cast_value(v, NUMERIC, target)
    if target == BOOL and source.integer:
        return value != 0
    if target.integer and source == BOOL:
        return int(value)
    if target == DATE and source in (TIMESTAMP, TIMESTAMPTZ):
        return value.date()
    if target == TIMESTAMP and source == DATE:
        return datetime(value.year, value.month, value.day)
    if target == TIMESTAMPTZ and source == DATE:
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if {source, target} == {TIMESTAMP, TIMESTAMPTZ}:
        return value.replace(tzinfo=UTC if target == TIMESTAMPTZ else None)
    if target == TIME and source in (TIMESTAMP, TIMESTAMPTZ):
        return value.time()  # (a timestamptz in the session's zone, UTC)
    if target == TIME and source == INTERVAL:
        return time_of(value.micros % DAY_MICROS)
    if target == INTERVAL and source == TIME:
        return Interval(0, 0, micros_of(value))
    raise EvalError(f"cannot cast type {source} to {target}", sqlstate="42846")


def castable(source: SqlType, target: SqlType) -> bool:
    """Is there a cast from ``source`` to ``target``?"""
    if source in (target, NULLTYPE) or TEXT in (source, target):
        return True
    if source.element is not None or target.element is not None:
        both = source.element is not None and target.element is not None
        return both and castable(source.element, target.element)  # type: ignore[arg-type]
    if source.numeric and target.numeric:
        return True
    if (source.integer and target == BOOL) or (source == BOOL and target.integer):
        return True
    if source == JSONB and (target.numeric or target == BOOL) or {source, target} == {JSON, JSONB}:
        return True
    stamps = {DATE, TIMESTAMP, TIMESTAMPTZ}
    if target == TIME:
        return source in (TIMESTAMP, TIMESTAMPTZ, INTERVAL)
    return source in stamps and target in stamps or (source, target) == (TIME, INTERVAL)
