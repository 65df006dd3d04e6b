"""``AT TIME ZONE`` (PostgreSQL's ``timezone(zone, value)``): a timestamp read as wall time in a
named zone becomes an instant, an instant becomes the wall time there; defined once, on Python
values and on Spark."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from changeflow.compute import expr as X
from changeflow.compute.functions.base import F, Function, unsupported
from changeflow.compute.types import NULLTYPE, TEXT, TIMESTAMP, TIMESTAMPTZ, SqlType
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


@cache
def _names() -> dict[str, str]:
    """Zone names by their lower case (PostgreSQL reads them case-insensitively)."""
    return {n.lower(): n for n in available_timezones()} | {"utc": "UTC", "z": "UTC"}


def zone(name: str) -> ZoneInfo:
    """The zone ``name`` names; 22023 if none."""
    try:
        return ZoneInfo(_names().get(name.lower(), name))
    except (ZoneInfoNotFoundError, ValueError):
        raise EvalError(f'time zone "{name}" not recognized', sqlstate="22023") from None


def _rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) == 2 and args[0] in (TEXT, NULLTYPE):
        if args[1] == TIMESTAMP:
            return TIMESTAMPTZ
        if args[1] == TIMESTAMPTZ:
            return TIMESTAMP
    raise PlanError("no match", sqlstate="42883")


def _timezone(name: str, value: datetime) -> datetime:
    """A wall time (no zone) in zone ``name`` as its instant; an instant as its wall time."""
    z = zone(name)
    if value.tzinfo is None:
        return value.replace(tzinfo=z).astimezone(UTC)
    return value.astimezone(z).replace(tzinfo=None)


def _spark_timezone(cc: ExprCompiler, e: Func) -> Column:
    name = e.args[0]
    if not isinstance(name, X.Lit) or not isinstance(name.value, str):
        raise unsupported(e, "AT TIME ZONE of a zone that is not a constant")
    here = zone(name.value).key
    value = cc.compile(e.args[1])
    if e.args[1].type == TIMESTAMPTZ:  # the session's zone is UTC: its wall time is UTC's
        return F.convert_timezone(F.lit("UTC"), F.lit(here), value.cast("timestamp_ntz"))
    return F.convert_timezone(F.lit(here), F.lit("UTC"), value).cast("timestamp")


FUNCTIONS = [Function("timezone", _rule, _timezone, spark=_spark_timezone)]
