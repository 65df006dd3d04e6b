"""Date and time functions (PostgreSQL's): each defined once, on Python values and on Spark."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING

from changeflow.compute import expr as X
from changeflow.compute.functions.base import (
    F,
    Function,
    _double,
    _sig,
    _simple,
    fail,
    in_process,
    spark_type,
    unsupported,
)
from changeflow.compute.functions.from_text import TEMPLATE_IN_PROCESS, to_timestamp_text
from changeflow.compute.functions.overloads import Overloads
from changeflow.compute.functions.parts import epoch_micros
from changeflow.compute.intervals import (
    Interval,
    age,
    interval_arith,
    justify_days,
    justify_hours,
    justify_interval,
    stamp_of,
)
from changeflow.compute.types import (
    BOOL,
    DATE,
    INT4,
    INT8,
    INTERVAL,
    NULLTYPE,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
    array_of,
)
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


_TRUNC = (
    "microseconds",
    "milliseconds",
    "second",
    "minute",
    "hour",
    "day",
    "week",
    "month",
    "quarter",
    "year",
    "decade",
    "century",
    "millennium",
)
_YEARS = {"decade": (10, 0), "century": (100, 99), "millennium": (1000, 999)}
"""date_trunc's units of years: the span, and how far its first year is past a multiple of it
(a century begins with its year 1: 1901, as PostgreSQL counts them)."""


def _first_year(unit: str, year: int) -> int:
    """The first year of the decade, century or millennium of ``year`` (after year 0)."""
    span, offset = _YEARS[unit]
    first = (year + offset) // span * span - offset
    if first < 1:
        message = f"the {unit} of year {year} begins before year 1: dates here are AD"
        raise EvalError(message, sqlstate="22008")
    return first


# PostgreSQL's interval units from the largest: each keeps what its row's fields make of it
_INTERVAL_TRUNC = {
    "millennium": (12000, None),
    "millennia": (12000, None),
    "century": (1200, None),
    "centuries": (1200, None),
    "decade": (120, None),
    "decades": (120, None),
    "year": (12, None),
    "quarter": (3, None),
    "month": (1, None),
    "day": (1, 0),
    "hour": (1, 3_600_000_000),
    "minute": (1, 60_000_000),
    "second": (1, 1_000_000),
    "milliseconds": (1, 1000),
    "microseconds": (1, 1),
}


def _interval_trunc(unit: str, value: Interval) -> Interval:
    """``date_trunc(unit, interval)``: the fields below ``unit`` zeroed (toward zero, as
    PostgreSQL's; weeks are refused, 0A000: months have fractional weeks)."""
    u = unit.lower()
    if u not in _INTERVAL_TRUNC:
        if u == "week":
            raise EvalError(
                'interval units "week" not supported because months usually have fractional weeks',
                sqlstate="0A000",
            )
        raise EvalError(f'interval units "{unit}" not recognized', sqlstate="22023")
    months_step, micros_step = _INTERVAL_TRUNC[u]
    months = int(value.months / months_step) * months_step
    if micros_step is None:
        return Interval(months)
    micros = int(value.micros / micros_step) * micros_step if micros_step else 0
    return Interval(months, value.days, micros)


def _date_trunc(unit: str, value: date | Interval) -> datetime | Interval:
    if isinstance(value, Interval):
        return _interval_trunc(unit, value)
    u = unit.lower()
    if u not in _TRUNC:
        raise EvalError(
            f"unit {unit!r} not recognized; the units are {', '.join(_TRUNC)}", sqlstate="22023"
        )
    if not isinstance(value, datetime):  # a date truncates as its midnight (a timestamptz)
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    if u == "microseconds":
        return value
    if u == "milliseconds":
        return value.replace(microsecond=value.microsecond // 1000 * 1000)
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
    value = value.replace(day=1, month=1)
    return value.replace(year=_first_year(u, value.year)) if u in _YEARS else value


def _make_date(y: int, m: int, d: int) -> date:
    try:
        return date(y, m, d)
    except ValueError:
        raise EvalError(
            f"date field value out of range: {y}-{m:02d}-{d:02d}", sqlstate="22008"
        ) from None


def _make_timestamp(y: int, mo: int, d: int, h: int, mi: int, sec: Decimal | float) -> datetime:
    """PostgreSQL's ``make_timestamp``: 24:00:00 and a 60th second carry over."""
    day = _make_date(y, mo, d)
    micros = round(Decimal(str(sec)) * 1_000_000)
    if not (0 <= h <= 24 and 0 <= mi < 60 and 0 <= micros <= 60_000_000) or (
        h == 24 and (mi or micros)
    ):
        raise EvalError(
            f"time field value out of range: {h}:{mi:02d}:{float(sec):02g}", sqlstate="22008"
        )
    return stamp_of(day) + timedelta(hours=h, minutes=mi, microseconds=micros)


def _age(a: date, b: date) -> Interval:
    """``age`` of two dates or timestamps of either kind (a date is its midnight; a
    timestamp without zone beside one with is taken in the session's zone, UTC)."""
    x, y = stamp_of(a), stamp_of(b)
    if (x.tzinfo is None) != (y.tzinfo is None):
        x, y = (v if v.tzinfo else v.replace(tzinfo=UTC) for v in (x, y))
    return age(x, y)


def _from_parts(months: int, days: int, micros: Decimal | int) -> Interval:
    """An interval of summed fields (what sum and avg of intervals add up); 22008 when a
    field leaves its range."""
    if not (-(2**31) <= months < 2**31 and -(2**31) <= days < 2**31 and -(2**63) <= micros < 2**63):
        raise EvalError("interval out of range", sqlstate="22008")
    return Interval(int(months), int(days), int(micros))


def _key_text(v: Interval) -> str:
    """An interval as text that keeps its fields: what array_agg(DISTINCT …) keeps of it for
    sum and avg of DISTINCT intervals (arrays of intervals are not a type here)."""
    return f"{v.months} {v.days} {v.micros}"


def _sum_of(keys: tuple[str | None, ...], average: bool = False) -> Interval | None:
    """The sum (or ``average``) of the distinct intervals among ``keys`` (:func:`_key_text`),
    equal ones (by interval equality, as PostgreSQL's DISTINCT) once; NULL for none."""
    kept: dict[Interval, Interval] = {}
    for key in keys:
        if key is not None:
            v = Interval(*map(int, key.split()))
            kept.setdefault(v, v)
    if not kept:
        return None
    total = _from_parts(*(sum(getattr(v, f) for v in kept) for f in ("months", "days", "micros")))
    return interval_arith("/", total, len(kept)) if average else total  # type: ignore[return-value]


def _age_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) == 2 and all(a in (DATE, TIMESTAMP, TIMESTAMPTZ, NULLTYPE) for a in args):
        return INTERVAL
    raise PlanError("no match", sqlstate="42883")


def _to_timestamp_rule(args: tuple[SqlType, ...]) -> SqlType:
    return _sig(("num",), (TEXT, TEXT), result=TIMESTAMPTZ)(args)


_DATE_TRUNC = Overloads(
    "date_trunc", tuple(((TEXT, k), k) for k in (TIMESTAMP, TIMESTAMPTZ, INTERVAL))
)


_DATE_BIN = Overloads("date_bin", tuple(((INTERVAL, k, k), k) for k in (TIMESTAMP, TIMESTAMPTZ)))


def _bin_width(stride: Interval) -> int:
    """``date_bin``'s stride in microseconds (0A000 with months, 22008 if not positive)."""
    if stride.months:
        raise EvalError(
            "timestamps cannot be binned into intervals containing months or years",
            sqlstate="0A000",
        )
    width = stride.days * 86_400_000_000 + stride.micros
    if width <= 0:
        raise EvalError("stride must be greater than zero", sqlstate="22008")
    return width


def _date_bin(stride: Interval, source: date, origin: date) -> datetime:
    """``date_bin``: the start of the bin holding ``source``, bins ``stride`` wide from
    ``origin`` (before it too); a date is its midnight, and with a timestamptz (or two dates,
    as PostgreSQL resolves the call) both are timestamptz."""
    stamps = [
        v if isinstance(v, datetime) else datetime(v.year, v.month, v.day) for v in (source, origin)
    ]
    if any(v.tzinfo for v in stamps) or not any(isinstance(v, datetime) for v in (source, origin)):
        stamps = [v if v.tzinfo else v.replace(tzinfo=UTC) for v in stamps]
    source, origin = stamps
    width, since = _bin_width(stride), (source - origin) // timedelta(microseconds=1)
    try:
        return origin + timedelta(microseconds=since - since % width)
    except OverflowError:
        raise EvalError("timestamp out of range", sqlstate="22008") from None


def _from_epoch(seconds: float) -> datetime:
    from datetime import UTC

    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, ValueError, OSError):
        raise EvalError("timestamp out of range", sqlstate="22008") from None


# -- on Spark --------------------------------------------------------------------------------


def _spark_unit(e: Func, known: tuple[str, ...]) -> str | None:
    """The constant unit argument of ``e`` (lower case), None if it is not one of ``known``."""
    unit = e.args[0]
    if not isinstance(unit, X.Lit) or not isinstance(unit.value, str):
        raise unsupported(e, "the unit must be a constant")
    return unit.value.lower() if unit.value.lower() in known else None


def _spark_stamp(cc: ExprCompiler, a: X.Expr) -> Column:
    """A date, timestamp or timestamptz as a Spark timestamp (a date is its UTC midnight)."""
    c = cc.compile(a)
    return c.cast("timestamp") if a.type in (DATE, TIMESTAMP) else c


def _spark_epoch_micros(cc: ExprCompiler, a: X.Expr) -> Column:
    return F.unix_micros(_spark_stamp(cc, a))


def _spark_date_trunc(cc: ExprCompiler, e: Func) -> Column:
    unit = _spark_unit(e, _TRUNC)
    value = e.args[1]
    if unit is None:
        shown = e.args[0].value  # type: ignore[attr-defined]
        bad = fail(f"unit {shown!r} not recognized; the units are {', '.join(_TRUNC)}", "22023")
        return F.when(cc.compile(value).isNotNull(), bad).cast(spark_type(e.type))
    stamp = _spark_stamp(cc, value)
    if unit in _YEARS:  # the year's start, less the years back to the span's first
        span, offset = _YEARS[unit]
        year = F.year(stamp)
        back = year - (F.floor((year + offset) / span) * span - offset).cast("int")
        stamp = F.date_trunc("year", stamp) - F.make_interval(back)
    elif unit != "microseconds":
        stamp = F.date_trunc(unit.removesuffix("s"), stamp)
    return stamp.cast(spark_type(e.type))


def _spark_to_timestamp(cc: ExprCompiler, e: Func) -> Column:
    if len(e.args) == 2:
        TEMPLATE_IN_PROCESS(cc, e)
    s = _double(cc, e)
    in_range = (s >= -62135596800) & (s < 253402300800)
    micros = F.bround(s * 1e6, 0).cast("bigint")
    return F.when(~in_range, fail("timestamp out of range", "22008")).otherwise(
        F.timestamp_micros(micros)
    )


def _spark_make_timestamp(cc: ExprCompiler, e: Func) -> Column:
    y, mo, d, h, mi = (cc.compile(a) for a in e.args[:5])
    sec = _double(cc, e, 5)
    day = F.make_date(y, mo, d)
    micros = F.bround(sec * 1e6, 0).cast("bigint")
    bad = (
        day.isNull()
        | (y <= 0)
        | (h < 0)
        | (h > 24)
        | (mi < 0)
        | (mi > 59)
        | (micros < 0)
        | (micros > 60_000_000)
        | ((h == 24) & ((mi != 0) | (micros != 0)))
    )
    total = (
        F.unix_micros(F.to_timestamp(day)) + (h.cast("bigint") * 3600 + mi * 60) * 10**6 + micros
    )
    return F.when(bad, fail("date/time field value out of range", "22008")).otherwise(
        F.timestamp_micros(total).cast(spark_type(TIMESTAMP))
    )


def _spark_epoch_ms(cc: ExprCompiler, e: Func) -> Column:
    micros = _spark_epoch_micros(cc, e.args[0])
    return F.bround(micros.cast("decimal(20,0)") / F.lit(Decimal(1000)), 0).cast("bigint")


_rows_only = in_process("intervals are computed in the process")


_FINITE_KINDS = (DATE, TIMESTAMPTZ, TIMESTAMP, INTERVAL)
FUNCTIONS = [
    Function("date_trunc", _DATE_TRUNC, _date_trunc, spark=_spark_date_trunc),
    Function("date_bin", _DATE_BIN, _date_bin, spark=_rows_only),
    # dates, timestamps and intervals here are all finite (no 'infinity')
    Function(
        "isfinite",
        Overloads(
            "isfinite", tuple(((k,), BOOL) for k in (DATE, TIMESTAMPTZ, TIMESTAMP, INTERVAL))
        ),
        lambda _v: True,
        spark=lambda cc, e: F.when(cc.compile(e.args[0]).isNotNull(), F.lit(True)),
    ),
    Function(
        "make_date",
        _sig(("int", "int", "int"), result=DATE),
        _make_date,
        spark=_simple(lambda y, m, d: F.make_date(y, m, d)),
    ),
    Function(
        "make_timestamp",
        _sig(("int", "int", "int", "int", "int", "num"), result=TIMESTAMP),
        _make_timestamp,
        spark=_spark_make_timestamp,
    ),
    Function(
        "to_timestamp",
        _to_timestamp_rule,
        lambda *a: _from_epoch(float(a[0])) if len(a) == 1 else to_timestamp_text(*a),
        spark=_spark_to_timestamp,
    ),
    Function(
        "epoch_ms",
        _sig(("stamp",), result=INT8),
        lambda v: round(Fraction(epoch_micros(v), 1000)),
        spark=_spark_epoch_ms,
    ),
    Function("justify_days", _sig((INTERVAL,), result=INTERVAL), justify_days, spark=_rows_only),
    Function("justify_hours", _sig((INTERVAL,), result=INTERVAL), justify_hours, spark=_rows_only),
    Function(
        "justify_interval",
        _sig((INTERVAL,), result=INTERVAL),
        justify_interval,
        spark=_rows_only,
    ),
    Function("age", _age_rule, _age, spark=_rows_only),
    Function(
        "interval_months", _sig((INTERVAL,), result=INT4), lambda v: v.months, spark=_rows_only
    ),
    Function("interval_days", _sig((INTERVAL,), result=INT4), lambda v: v.days, spark=_rows_only),
    Function(
        "interval_micros", _sig((INTERVAL,), result=INT8), lambda v: v.micros, spark=_rows_only
    ),
    Function("interval_key", _sig((INTERVAL,), result=TEXT), _key_text, spark=_rows_only),
    Function(
        "interval_sum_of", _sig((array_of(TEXT),), result=INTERVAL), _sum_of, spark=_rows_only
    ),
    Function(
        "interval_avg_of",
        _sig((array_of(TEXT),), result=INTERVAL),
        lambda values: _sum_of(values, average=True),
        spark=_rows_only,
    ),
    Function(
        "interval_from_parts",
        _sig(("int", "int", "num"), result=INTERVAL),
        _from_parts,
        spark=_rows_only,
    ),
]
