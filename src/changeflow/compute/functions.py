"""Scalar functions by name: the common string, numeric and date/time functions of PostgreSQL.

Each :class:`Function` has a type rule (argument types to result type, or a
:class:`PlanError`) and an implementation. A strict function (most) is NULL when any argument is
NULL; ``concat``, ``greatest`` and ``least`` skip NULLs as PostgreSQL's do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any

from changeflow.compute.expr import Expr, _typed, common_type
from changeflow.compute.scalars import check_range, coerce, to_text
from changeflow.compute.types import (
    BOOL,
    DATE,
    FLOAT8,
    INT4,
    INT8,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
)
from changeflow.errors import EvalError, PlanError

Rule = Callable[[tuple[SqlType, ...]], SqlType]


@dataclass(frozen=True)
class Function:
    """A function's type rule and implementation."""

    name: str
    rule: Rule
    impl: Callable[..., Any]
    strict: bool = True

    def __reduce__(self) -> tuple[Callable[[str], Function], tuple[str]]:
        """A stored plan names its functions: rules and implementations may be closures or
        lambdas, which do not pickle, and a plan read back uses today's definition."""
        return (function_named, (self.name,))


def function_named(name: str) -> Function:
    """The function of :data:`FUNCTIONS` called ``name`` (how a pickled plan finds it)."""
    return FUNCTIONS[name]


def _sig(*shapes: tuple[SqlType | str, ...], result: SqlType | str) -> Rule:
    """A rule from argument shapes; ``"num"`` is any numeric type, ``"same"`` the result is the
    first argument's type."""

    def rule(args: tuple[SqlType, ...]) -> SqlType:
        for shape in shapes:
            if len(shape) == len(args) and all(
                _fits(a, s) for a, s in zip(args, shape, strict=True)
            ):
                return args[0] if result == "same" else result  # type: ignore[return-value]
        raise PlanError("no match", sqlstate="42883")

    return rule


def _fits(actual: SqlType, shape: SqlType | str) -> bool:
    if actual == NULLTYPE:
        return True
    if shape == "num":
        return actual.numeric
    if shape == "int":
        return actual.integer
    if shape == "any":
        return True
    if shape == "stamp":
        return actual in (TIMESTAMP, TIMESTAMPTZ, DATE)
    return actual == shape


# -- strings ---------------------------------------------------------------------------------


def _substr(s: str, start: int, count: int | None = None) -> str:
    if count is not None and count < 0:
        raise EvalError("negative substring length not allowed", sqlstate="22011")
    end = None if count is None else start + count
    lo = max(start, 1)
    if end is not None and end <= lo:
        return ""
    return s[lo - 1 : None if end is None else end - 1]


def _trim(side: str) -> Callable[..., str]:
    def trim(s: str, chars: str = " ") -> str:
        if side == "both":
            return s.strip(chars)
        return s.lstrip(chars) if side == "left" else s.rstrip(chars)

    return trim


def _left(s: str, n: int) -> str:
    return s[:n] if n >= 0 else s[: max(len(s) + n, 0)]


def _right(s: str, n: int) -> str:
    return s[-n:] if n > 0 else ("" if n == 0 else s[min(-n, len(s)) :])


def _split_part(s: str, delimiter: str, n: int) -> str:
    if n == 0:
        raise EvalError("field position must not be zero", sqlstate="22023")
    parts = s.split(delimiter) if delimiter else [s]
    if s == "":
        parts = []
    index = n - 1 if n > 0 else len(parts) + n
    return parts[index] if 0 <= index < len(parts) else ""


def _pad(left: bool) -> Callable[..., str]:
    def pad(s: str, n: int, fill: str = " ") -> str:
        if n <= 0:
            return ""
        if len(s) >= n or not fill:
            return s[:n]
        filler = (fill * (n // len(fill) + 1))[: n - len(s)]
        return filler + s if left else s + filler

    return pad


def _initcap(s: str) -> str:
    out, word = [], False
    for ch in s:
        out.append(ch.lower() if word else ch.upper())
        word = ch.isalnum()
    return "".join(out)


def _md5(s: str) -> str:
    import hashlib

    return hashlib.md5(s.encode("utf-8")).hexdigest()


def _regexp_replace(s: str, pattern: str, replacement: str, flags: str = "") -> str:
    """PostgreSQL's regexp_replace: the first match (every one with flag ``g``) replaced;
    ``\\n`` in the replacement is the n-th group, ``\\&`` the match."""
    import re

    unknown = set(flags) - set("gic")
    if unknown:
        raise EvalError(
            f'invalid regular expression option: "{sorted(unknown)[0]}"', sqlstate="22023"
        )
    options = re.IGNORECASE if "i" in flags and "c" not in flags else 0
    try:
        compiled = re.compile(pattern, options)
    except re.error as e:
        raise EvalError(f"invalid regular expression: {e}", sqlstate="2201B") from None

    def expand(m: re.Match[str]) -> str:
        out, i = [], 0
        while i < len(replacement):
            ch, nxt = replacement[i], replacement[i + 1 : i + 2]
            if ch == "\\" and nxt.isdigit():
                n = int(nxt)
                out.append((m.group(n) or "") if n <= compiled.groups else "")
            elif ch == "\\" and nxt in ("&", "\\"):
                out.append(m.group(0) if nxt == "&" else "\\")
            else:
                out.append(ch)
                i += 1
                continue
            i += 2
        return "".join(out)

    return compiled.sub(expand, s, count=0 if "g" in flags else 1)


def _concat(*args: Any) -> str:
    return "".join(to_text(v, t) for v, t in args if v is not None)


# -- numbers ---------------------------------------------------------------------------------


def _round(x: Any, places: int = 0) -> Any:
    if isinstance(x, float):
        if places == 0:
            return float(round(x))  # rint: half to even, as PostgreSQL's round(double)
        raise EvalError("round(double precision, integer) does not exist; cast to numeric")
    if isinstance(x, Decimal):
        return x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return x


def _trunc(x: Any, places: int = 0) -> Any:
    if isinstance(x, float):
        return float(math.trunc(x))
    if isinstance(x, Decimal):
        return x.quantize(Decimal(1).scaleb(-places), rounding="ROUND_DOWN")
    return x


def _floor(x: Any) -> Any:
    if isinstance(x, Decimal):
        return x.quantize(Decimal(1), rounding=ROUND_FLOOR)
    return float(math.floor(x)) if isinstance(x, float) else x


def _ceil(x: Any) -> Any:
    if isinstance(x, Decimal):
        return x.quantize(Decimal(1), rounding="ROUND_CEILING")
    return float(math.ceil(x)) if isinstance(x, float) else x


def _sqrt(x: float) -> float:
    if x < 0:
        raise EvalError("cannot take square root of a negative number", sqlstate="2201F")
    return math.sqrt(x)


def _ln(x: float) -> float:
    if x <= 0:
        what = "zero" if x == 0 else "a negative number"
        raise EvalError(f"cannot take logarithm of {what}", sqlstate="2201E")
    return math.log(x)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        raise EvalError("value out of range: overflow", sqlstate="22003") from None


def _power(x: float, y: float) -> float:
    if x == 0 and y < 0:
        raise EvalError("zero raised to a negative power is undefined", sqlstate="2201F")
    if x < 0 and not float(y).is_integer():
        raise EvalError(
            "a negative number raised to a non-integer power yields a complex result",
            sqlstate="2201F",
        )
    try:
        return check_range(math.pow(x, y), FLOAT8)
    except OverflowError:
        raise EvalError("value out of range: overflow", sqlstate="22003") from None


def _sign(x: Any) -> Any:
    return type(x)((x > 0) - (x < 0))


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def extreme(*args: Any) -> Any:
        present = [v for v, _ in args if v is not None]
        return pick(present) if present else None

    return extreme


# -- dates and times -------------------------------------------------------------------------

_FIELDS = (
    "year",
    "quarter",
    "month",
    "week",
    "day",
    "hour",
    "minute",
    "second",
    "dow",
    "doy",
    "epoch",
)


def _part(field_name: str, value: date) -> float:
    f = field_name.lower()
    stamp = value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)
    if f == "year":
        return stamp.year
    if f == "quarter":
        return (stamp.month - 1) // 3 + 1
    if f == "month":
        return stamp.month
    if f == "week":
        return stamp.isocalendar()[1]
    if f == "day":
        return stamp.day
    if f == "hour":
        return stamp.hour
    if f == "minute":
        return stamp.minute
    if f == "second":
        return stamp.second + stamp.microsecond / 1e6
    if f == "dow":
        return (stamp.weekday() + 1) % 7
    if f == "doy":
        return stamp.timetuple().tm_yday
    if f == "epoch":
        from datetime import UTC

        aware = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
        return aware.timestamp()
    raise EvalError(
        f"unit {field_name!r} not recognized; the units are {', '.join(_FIELDS)}", sqlstate="22023"
    )


def _date_part(field_name: str, value: date) -> float:
    return float(_part(field_name, value))


def _extract(field_name: str, value: date) -> Decimal:
    return (
        Decimal(repr(_part(field_name, value))).normalize()
        if field_name.lower() in ("second", "epoch")
        else Decimal(int(_part(field_name, value)))
    )


_TRUNC = ("microseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year")


def _date_trunc(unit: str, value: date) -> datetime:
    u = unit.lower()
    if u not in _TRUNC:
        raise EvalError(
            f"unit {unit!r} not recognized; the units are {', '.join(_TRUNC)}", sqlstate="22023"
        )
    if not isinstance(value, datetime):  # a date truncates as its midnight
        value = datetime(value.year, value.month, value.day)
    if u == "microseconds":
        return value
    value = value.replace(microsecond=0)
    if u == "second":
        return value
    value = value.replace(second=0)
    if u == "minute":
        return value
    value = value.replace(minute=0)
    if u == "hour":
        return value
    value = value.replace(hour=0)
    if u == "day":
        return value
    if u == "week":
        return datetime.fromordinal(value.toordinal() - value.weekday()).replace(
            tzinfo=value.tzinfo
        )
    if u == "month":
        return value.replace(day=1)
    if u == "quarter":
        return value.replace(day=1, month=(value.month - 1) // 3 * 3 + 1)
    return value.replace(day=1, month=1)


def _make_date(y: int, m: int, d: int) -> date:
    try:
        return date(y, m, d)
    except ValueError:
        raise EvalError(
            f"date field value out of range: {y}-{m:02d}-{d:02d}", sqlstate="22008"
        ) from None


def _stamp_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) == 2 and args[0] in (TEXT, NULLTYPE) and args[1] in (TIMESTAMP, TIMESTAMPTZ, DATE):
        return TIMESTAMP if args[1] == DATE else args[1]
    raise PlanError("no match", sqlstate="42883")


def _extreme_rule(args: tuple[SqlType, ...]) -> SqlType:
    from changeflow.compute.expr import Lit

    return common_type(tuple(Lit(None, a) for a in args), "GREATEST/LEAST")


FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in [
        Function("lower", _sig((TEXT,), result=TEXT), str.lower),
        Function("upper", _sig((TEXT,), result=TEXT), str.upper),
        Function("length", _sig((TEXT,), result=INT4), len),
        Function("char_length", _sig((TEXT,), result=INT4), len),
        Function("substr", _sig((TEXT, "int"), (TEXT, "int", "int"), result=TEXT), _substr),
        Function("substring", _sig((TEXT, "int"), (TEXT, "int", "int"), result=TEXT), _substr),
        Function("btrim", _sig((TEXT,), (TEXT, TEXT), result=TEXT), _trim("both")),
        Function("trim", _sig((TEXT,), (TEXT, TEXT), result=TEXT), _trim("both")),
        Function("ltrim", _sig((TEXT,), (TEXT, TEXT), result=TEXT), _trim("left")),
        Function("rtrim", _sig((TEXT,), (TEXT, TEXT), result=TEXT), _trim("right")),
        Function("replace", _sig((TEXT, TEXT, TEXT), result=TEXT), lambda s, a, b: s.replace(a, b)),
        Function("strpos", _sig((TEXT, TEXT), result=INT4), lambda s, sub: s.find(sub) + 1),
        Function("position", _sig((TEXT, TEXT), result=INT4), lambda sub, s: s.find(sub) + 1),
        Function("left", _sig((TEXT, "int"), result=TEXT), _left),
        Function("right", _sig((TEXT, "int"), result=TEXT), _right),
        Function("starts_with", _sig((TEXT, TEXT), result=BOOL), str.startswith),
        Function("reverse", _sig((TEXT,), result=TEXT), lambda s: s[::-1]),
        Function("repeat", _sig((TEXT, "int"), result=TEXT), lambda s, n: s * max(n, 0)),
        Function("split_part", _sig((TEXT, TEXT, "int"), result=TEXT), _split_part),
        Function("lpad", _sig((TEXT, "int"), (TEXT, "int", TEXT), result=TEXT), _pad(True)),
        Function("rpad", _sig((TEXT, "int"), (TEXT, "int", TEXT), result=TEXT), _pad(False)),
        Function("initcap", _sig((TEXT,), result=TEXT), _initcap),
        Function("md5", _sig((TEXT,), result=TEXT), _md5),
        Function(
            "regexp_replace",
            _sig((TEXT, TEXT, TEXT), (TEXT, TEXT, TEXT, TEXT), result=TEXT),
            _regexp_replace,
        ),
        Function("concat", lambda args: TEXT, _concat, strict=False),
        Function("textcat", _sig((TEXT, TEXT), result=TEXT), lambda a, b: a + b),
        Function("abs", _sig(("num",), result="same"), abs),
        Function("round", _sig(("num",), ("num", "int"), result="same"), _round),
        Function("trunc", _sig(("num",), ("num", "int"), result="same"), _trunc),
        Function("floor", _sig(("num",), result="same"), _floor),
        Function("ceil", _sig(("num",), result="same"), _ceil),
        Function("ceiling", _sig(("num",), result="same"), _ceil),
        Function("sign", _sig(("num",), result="same"), _sign),
        Function("sqrt", _sig(("num",), result=FLOAT8), lambda x: _sqrt(float(x))),
        Function("ln", _sig(("num",), result=FLOAT8), lambda x: _ln(float(x))),
        Function("exp", _sig(("num",), result=FLOAT8), lambda x: _exp(float(x))),
        Function(
            "power", _sig(("num", "num"), result=FLOAT8), lambda x, y: _power(float(x), float(y))
        ),
        Function(
            "pow", _sig(("num", "num"), result=FLOAT8), lambda x, y: _power(float(x), float(y))
        ),
        Function("greatest", _extreme_rule, _extreme(max), strict=False),
        Function("least", _extreme_rule, _extreme(min), strict=False),
        Function("date_part", _sig((TEXT, "stamp"), result=FLOAT8), _date_part),
        Function("extract", _sig((TEXT, "stamp"), result=NUMERIC), _extract),
        Function("date_trunc", _stamp_rule, _date_trunc),
        Function("make_date", _sig(("int", "int", "int"), result=DATE), _make_date),
        Function(
            "to_timestamp", _sig(("num",), result=TIMESTAMPTZ), lambda s: _from_epoch(float(s))
        ),
        Function(
            "epoch_ms",
            _sig(("stamp",), result=INT8),
            lambda v: int(round(_part("epoch", v) * 1000)),
        ),
    ]
}


def _from_epoch(seconds: float) -> datetime:
    from datetime import UTC

    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, ValueError, OSError):
        raise EvalError("timestamp out of range", sqlstate="22008") from None


@dataclass(frozen=True)
class Func(Expr):
    """A call of a function in :data:`FUNCTIONS`."""

    name: str
    args: tuple[Expr, ...]
    function: Function = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        function = FUNCTIONS.get(self.name.lower())
        kinds = tuple(a.type for a in self.args)
        if function is None:
            shown = ", ".join(map(str, kinds))
            raise PlanError(f"function {self.name}({shown}) does not exist", sqlstate="42883")
        try:
            kind = function.rule(kinds)
        except PlanError:
            shown = ", ".join(map(str, kinds))
            raise PlanError(
                f"function {self.name}({shown}) does not exist", sqlstate="42883"
            ) from None
        object.__setattr__(self, "function", function)
        _typed(self, kind, any(a.nullable for a in self.args) if function.strict else True)

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        values = [a.eval(row, now) for a in self.args]
        if not self.function.strict:
            return self.function.impl(
                *((coerce(v, self.type), a.type) for v, a in zip(values, self.args, strict=True))
            )
        if any(v is None for v in values):
            return None
        result = self.function.impl(*values)
        return check_range(result, self.type) if self.type in (INT4, INT8) else result

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"
