"""``extract`` and ``date_part`` (PostgreSQL 15's) of dates, timestamps, times and intervals:
extract's numeric at PostgreSQL's scale for each field (6 places for seconds and epoch of a
timestamp or time, 3 for milliseconds, a quotient for julian, whole numbers otherwise; every
field of a date whole), date_part's double computed as PostgreSQL computes it; their Spark
forms (a time's are computed in the process)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING

from changeflow.compute import expr as X
from changeflow.compute.functions.base import F, Function, fail, spark_type, unsupported
from changeflow.compute.functions.overloads import Candidate, Overloads
from changeflow.compute.intervals import Interval, interval_part
from changeflow.compute.scalars import div_scale
from changeflow.compute.time_of_day import DAY_MICROS, micros_of
from changeflow.compute.types import (
    DATE,
    FLOAT8,
    INTERVAL,
    NUMERIC,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
)
from changeflow.errors import EvalError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler

# PostgreSQL's spellings of the fields (its units table, read to 10 characters).
_SPELLINGS = {
    "century": "c cent centuries century",
    "day": "d day days",
    "decade": "dec decade decades decs",
    "hour": "h hour hours hr hrs",
    "microseconds": "microsecon us usec usecond useconds usecs",
    "millennium": "mil millennia millennium mils",
    "milliseconds": "millisecon ms msec msecond mseconds msecs",
    "minute": "m min mins minute minutes",
    "month": "mon mons month months",
    "quarter": "qtr quarter",
    "second": "s sec second seconds secs",
    "timezone": "timezone",
    "timezone_hour": "timezone_h",
    "timezone_minute": "timezone_m",
    "week": "w week weeks",
    "year": "y year years yr yrs",
    "julian": "j jd julian",
    **{f: f for f in ("epoch", "dow", "doy", "isodow", "isoyear")},
}
_FIELD = {s: f for f, spellings in _SPELLINGS.items() for s in spellings.split()}
_OF_TIME = ("microseconds", "milliseconds", "second", "minute", "hour")
_OF_ZONE = ("timezone", "timezone_hour", "timezone_minute")
_UNIX_JULIAN = 2440588  # the Julian day of 1970-01-01


def field_of(name: str) -> str | None:
    """The field a unit names (``'secs'`` is ``second``), None if PostgreSQL knows no such."""
    return _FIELD.get(name.lower()[:10])


def _type_name(value: date) -> str:
    if not isinstance(value, datetime):
        return "date"
    return "timestamp with" + ("" if value.tzinfo else "out") + " time zone"


def _field(name: str, value: date) -> str:
    f = field_of(name)
    if f is None:
        raise EvalError(
            f'unit "{name}" not recognized for type {_type_name(value)}', sqlstate="22023"
        )
    if (f in _OF_ZONE and not (isinstance(value, datetime) and value.tzinfo)) or (
        f in _OF_TIME and not isinstance(value, datetime)
    ):
        raise EvalError(
            f'unit "{name}" not supported for type {_type_name(value)}', sqlstate="0A000"
        )
    return f


def _stamp(value: date) -> datetime:
    return value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)


def epoch_micros(value: date) -> int:
    """Microseconds from 1970-01-01 (UTC for a timestamptz) to ``value`` (a date's midnight)."""
    stamp = _stamp(value)
    start = datetime(1970, 1, 1, tzinfo=UTC if stamp.tzinfo else None)
    delta = stamp - start
    return (delta.days * 86_400 + delta.seconds) * 10**6 + delta.microseconds


def _whole(f: str, s: datetime) -> int:
    """A field that is a whole number (of a timestamp's fields in the session's zone)."""
    iso = s.isocalendar()
    values = {
        "year": s.year,
        "month": s.month,
        "day": s.day,
        "hour": s.hour,
        "minute": s.minute,
        "quarter": (s.month - 1) // 3 + 1,
        "week": iso[1],
        "isoyear": iso[0],
        "dow": iso[2] % 7,
        "isodow": iso[2],
        "doy": s.timetuple().tm_yday,
        "decade": s.year // 10,
        "century": (s.year + 99) // 100,
        "millennium": (s.year + 999) // 1000,
    }
    return values.get(f, 0)  # the zone fields: 0 in the session's zone, UTC


def stamp_extract(name: str, value: date) -> Decimal:
    """``extract(name from value)`` of a date, timestamp or timestamptz, at PostgreSQL's scale."""
    f, s = _field(name, value), _stamp(value)
    sec_micros = s.second * 10**6 + s.microsecond
    if f == "epoch":
        micros = epoch_micros(s)
        return Decimal(micros // 10**6 if type(value) is date else micros).scaleb(
            0 if type(value) is date else -6
        )
    if f == "julian":
        whole = Decimal(s.toordinal() + 1721425)
        if type(value) is date:
            return whole
        a, b = Decimal(micros_of(s.time())), Decimal(DAY_MICROS)
        with localcontext() as ctx:
            ctx.prec = 60
            places = Decimal(1).scaleb(-div_scale(a, b))
            return whole + (a / b).quantize(places, rounding=ROUND_HALF_UP)
    if f == "second":
        return Decimal(sec_micros).scaleb(-6)
    if f == "milliseconds":
        return Decimal(sec_micros).scaleb(-3)
    if f == "microseconds":
        return Decimal(sec_micros)
    return Decimal(_whole(f, s))


def stamp_part(name: str, value: date) -> float:
    """``date_part(name, value)``: a date is its midnight (a timestamp), as PostgreSQL's
    ``date_part(text, date)`` casts it; each field's double as PostgreSQL computes it."""
    s = _stamp(value)
    f = _field(name, s)
    fsec = float(s.microsecond)
    if f == "epoch":
        return epoch_micros(s) / 1000000.0
    if f == "julian":
        seconds = (s.hour * 60 + s.minute) * 60 + s.second + fsec / 1000000.0
        return s.toordinal() + 1721425 + seconds / 86400.0
    if f == "second":
        return s.second + fsec / 1000000.0
    if f == "milliseconds":
        return s.second * 1000.0 + fsec / 1000.0
    if f == "microseconds":
        return s.second * 1000000.0 + fsec
    return float(_whole(f, s))


def _time_field(name: str) -> str:
    f = field_of(name)
    if f is None or f not in (*_OF_TIME, "epoch"):
        word, state = ("recognized", "22023") if f is None else ("supported", "0A000")
        raise EvalError(f'unit "{name}" not {word} for type time without time zone', sqlstate=state)
    return f


def time_extract(name: str, value: time) -> Decimal:
    """``extract(name from value)`` of a time of day, at PostgreSQL's scale."""
    f = _time_field(name)
    sec_micros = value.second * 10**6 + value.microsecond
    if f == "epoch":
        return Decimal(micros_of(value)).scaleb(-6)
    if f in ("second", "milliseconds", "microseconds"):
        return Decimal(sec_micros).scaleb({"second": -6, "milliseconds": -3}.get(f, 0))
    return Decimal(value.hour if f == "hour" else value.minute)


def time_part(name: str, value: time) -> float:
    """``date_part(name, value)`` of a time of day, computed as PostgreSQL computes it."""
    f = _time_field(name)
    fsec = float(value.microsecond)
    if f == "epoch":
        return micros_of(value) / 1000000.0
    if f == "second":
        return value.second + fsec / 1000000.0
    if f == "milliseconds":
        return value.second * 1000.0 + fsec / 1000.0
    if f == "microseconds":
        return value.second * 1000000.0 + fsec
    return float(value.hour if f == "hour" else value.minute)


def _date_part(name: str, value: date | time | Interval) -> float:
    if isinstance(value, Interval):
        return float(interval_part(field_of(name) or name, value))
    if isinstance(value, time):
        return time_part(name, value)
    return stamp_part(name, value)


def _extract(name: str, value: date | time | Interval) -> Decimal:
    if isinstance(value, Interval):
        return interval_part(field_of(name) or name, value)
    if isinstance(value, time):
        return time_extract(name, value)
    return stamp_extract(name, value)


def extract_scale(name: object, kind: object) -> int | None:
    """The places every ``extract(name from x)`` of type ``kind`` shows, None if they vary."""
    f = field_of(name) if isinstance(name, str) else None
    if f is None or f == "julian" and kind != DATE:
        return None
    if kind == DATE:
        return 0
    return {"second": 6, "epoch": 6, "milliseconds": 3}.get(f, 0)


# Spark's date_part names of the fields it has.
_SPARK_FIELDS = {"isoyear": "yearofweek", "isodow": "dayofweek_iso"}
_SPARK_FIELDS |= {f: f for f in ("year", "quarter", "month", "week", "day", "hour", "minute")}
_SPARK_FIELDS |= {"doy": "doy"}


def _spark_part(cc: ExprCompiler, e: Func, numeric: bool) -> Column:
    unit, value = e.args
    if not isinstance(unit, X.Lit) or not isinstance(unit.value, str):
        raise unsupported(e, "the unit must be a constant")
    v = cc.compile(value)
    f = field_of(unit.value)
    is_date = value.type == DATE and numeric  # date_part reads a date as its midnight
    if value.type in (INTERVAL, TIME):
        raise unsupported(e, f"{value.type} values are computed in the process")
    what = "date" if is_date else "timestamp with" + ("" if value.type == TIMESTAMPTZ else "out")
    what += "" if is_date else " time zone"
    if f is None or f in _OF_TIME and is_date or f in _OF_ZONE and value.type != TIMESTAMPTZ:
        state, word = ("22023", "recognized") if f is None else ("0A000", "supported")
        bad = fail(f'unit "{unit.value}" not {word} for type {what}', state)
        return F.when(v.isNotNull(), bad).cast(spark_type(e.type))
    stamp = v.cast("timestamp") if value.type == DATE else v
    sec_micros = (F.date_part(F.lit("second"), stamp) * 1_000_000).cast("bigint")
    whole_sec, fsec = F.floor(sec_micros / 1_000_000), (sec_micros % 1_000_000).cast("double")
    year = F.year(stamp)
    if f == "epoch":
        micros = F.unix_micros(stamp)
        if not numeric:
            return micros.cast("double") / 1000000.0
        if is_date:
            return F.unix_date(v).cast("decimal(20,0)") * 86400
        return micros.cast("decimal(20,0)") * F.lit(Decimal("0.000001"))
    if f == "julian":
        day = F.unix_date(stamp.cast("date")) + _UNIX_JULIAN
        if is_date:
            return day.cast(spark_type(e.type))
        if numeric:  # a quotient whose places vary
            raise unsupported(e, "extract(julian) of a timestamp on the cluster tier")
        seconds = (F.hour(stamp) * 60 + F.minute(stamp)) * 60 + whole_sec
        return day + (seconds + fsec / 1000000.0) / 86400.0
    if f in ("second", "milliseconds", "microseconds"):
        if numeric:
            places = {"second": 6, "milliseconds": 3, "microseconds": 0}[f]
            shown = sec_micros.cast("decimal(20,0)") * F.lit(Decimal(1).scaleb(-places))
            return shown.cast(f"decimal(20,{places})")
        scale = {"second": (1.0, 1000000.0), "milliseconds": (1000.0, 1000.0)}
        times, over = scale.get(f, (1000000.0, 1.0))
        return whole_sec.cast("double") * times + fsec / over
    if f in _OF_ZONE:
        part = F.lit(0)
    elif f == "dow":
        part = F.dayofweek(stamp) - 1
    elif f in _SPARK_FIELDS:
        part = F.date_part(F.lit(_SPARK_FIELDS[f]), stamp)
    else:  # decade, century, millennium (of years after 0)
        part = {"decade": F.floor(year / 10), "century": F.floor((year + 99) / 100)}.get(
            f, F.floor((year + 999) / 1000)
        )
    return part.cast(spark_type(e.type))


def _parts(result: SqlType) -> tuple[Candidate, ...]:
    """PostgreSQL's signatures of date_part and extract (timetz left out)."""
    return tuple(((TEXT, k), result) for k in (TIMESTAMP, TIMESTAMPTZ, DATE, TIME, INTERVAL))


FUNCTIONS = [
    Function(
        "date_part",
        Overloads("date_part", _parts(FLOAT8)),
        _date_part,
        spark=lambda cc, e: _spark_part(cc, e, numeric=False),
    ),
    Function(
        "extract",
        Overloads("extract", _parts(NUMERIC)),
        _extract,
        spark=lambda cc, e: _spark_part(cc, e, numeric=True),
    ),
]
