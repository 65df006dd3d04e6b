"""SQL type names (sqlglot ``DataType`` nodes) into compute types and Arrow storage types."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import pyarrow as pa
from sqlglot import exp

from changeflow.adapter.sql.dialect import PostgresCalls
from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.types import (
    BOOL,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    NUMERIC,
    NUMERIC_SCALE,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    USER_TYPES,
    UUID,
    SqlType,
    array_of,
)
from changeflow.errors import PlanError

T = exp.DataType.Type

_SIMPLE: dict[T, tuple[SqlType, pa.DataType]] = {
    T.BOOLEAN: (BOOL, pa.bool_()),
    T.SMALLINT: (INT2, pa.int16()),
    T.INT: (INT4, pa.int32()),
    T.BIGINT: (INT8, pa.int64()),
    T.FLOAT: (FLOAT4, pa.float32()),
    T.DOUBLE: (FLOAT8, pa.float64()),
    T.TEXT: (TEXT, pa.string()),
    T.VARCHAR: (TEXT, pa.string()),
    T.NAME: (TEXT, pa.string()),
    T.CHAR: (TEXT, pa.string()),
    T.BPCHAR: (TEXT, pa.string()),
    T.DATE: (DATE, pa.date32()),
    T.TIMESTAMP: (TIMESTAMP, pa.timestamp("us")),
    T.TIMESTAMPTZ: (TIMESTAMPTZ, pa.timestamp("us", tz="UTC")),
    T.TIME: (TIME, TIME.arrow),
    T.UUID: (UUID, UUID.arrow),
    T.VARBINARY: (BYTEA, BYTEA.arrow),
    T.INTERVAL: (INTERVAL, INTERVAL.arrow),
    T.JSONB: (JSONB, JSONB.arrow),
}


def _params(dt: exp.DataType) -> list[int]:
    out = []
    for p in dt.expressions:
        node = p.this if isinstance(p, exp.DataTypeParam) else p
        try:
            out.append(int(node.name))
        except (ValueError, AttributeError):
            shown = dt.sql("postgres")
            raise PlanError(f"invalid type modifier in {shown}", sqlstate="22023") from None
    return out


def type_name(dt: exp.DataType) -> str:
    return dt.sql(dialect=PostgresCalls).lower()


def _unknown(dt: exp.DataType) -> PlanError:
    return PlanError(f'type "{type_name(dt)}" does not exist', sqlstate="42704")


def _decimal(dt: exp.DataType) -> tuple[int, int] | None:
    """numeric's (precision, scale), None without them."""
    params = _params(dt)
    if not params:
        return None
    precision, scale = params[0], params[1] if len(params) > 1 else 0
    if not 1 <= precision <= 38:
        raise PlanError(
            f"NUMERIC precision {precision} must be between 1 and 38 here", sqlstate="22023"
        )
    if not 0 <= scale <= precision:
        raise PlanError(
            f"NUMERIC scale {scale} must be between 0 and precision {precision}", sqlstate="22023"
        )
    return precision, scale


def column_type(dt: exp.DataType) -> tuple[SqlType, pa.DataType]:
    """A column's SQL type and Arrow storage type (CREATE TABLE); 42704 for an unknown type."""
    if dt.this in _SIMPLE:
        return _SIMPLE[dt.this]
    if dt.this == T.DECIMAL:
        found = _decimal(dt)
        precision, scale = found if found is not None else (38, NUMERIC_SCALE)
        return NUMERIC, pa.decimal128(precision, scale)
    if dt.this == T.ARRAY and len(dt.expressions) == 1:
        element = dt.expressions[0]
        if element.this == T.ARRAY:
            raise PlanError("arrays of arrays are not supported", sqlstate="0A000")
        kind = array_of(column_type(element)[0])
        return kind, kind.arrow
    if dt.this == T.JSON:
        return JSON, JSON.arrow
    if dt.this == T.USERDEFINED and (found := user_type(dt)) is not None:
        return found, found.arrow
    raise _unknown(dt)


def user_type(dt: exp.DataType) -> SqlType | None:
    """The catalog's type (an enum, a domain's base type) ``dt`` names, None if there is none
    of its name."""
    lookup, type_name = USER_TYPES.get(), type_name_of(dt)
    return None if lookup is None or type_name is None else lookup(type_name)


DOMAINS: ContextVar[Callable[[str], Any] | None] = ContextVar("domains", default=None)
"""The session's domains by name (:func:`changeflow.adapter.domains.domain_named` on its
catalog), for a column definition to find the domain it names."""


def domain_of(dt: exp.Expression) -> Any:
    """The domain (:class:`changeflow.adapter.domains.Domain`) ``dt`` names, None if none."""
    lookup = DOMAINS.get()
    if lookup is None or not isinstance(dt, exp.DataType) or dt.this != T.USERDEFINED:
        return None
    type_name = type_name_of(dt)
    return None if type_name is None else lookup(type_name)


def type_name_of(dt: exp.DataType) -> str | None:
    """The name a user-defined type's node gives (``s.t``), None for a built-in type."""
    kind = dt.args.get("kind")
    if kind is None or isinstance(kind, str):  # (a name sqlglot did not read: built-in)
        return kind
    parts = [kind] if isinstance(kind, exp.Identifier) else list(kind.flatten())
    return ".".join(p.name if p.args.get("quoted") else p.name.lower() for p in parts)


def cast_target(dt: exp.DataType) -> tuple[SqlType, int | None]:
    """The type of ``CAST(x AS dt)`` and, for ``numeric(p, s)``, the scale it rounds to."""
    if isinstance(dt, exp.ObjectIdentifier):  # regclass and its kin: their name (object_ids)
        return TEXT, None
    if dt.this == T.DECIMAL:
        found = _decimal(dt)
        return NUMERIC, None if found is None else found[1]
    if dt.this == T.UINT:  # oid
        return INT8, None
    return column_type(dt)[0], None


def operator_for(kind: SqlType, ordering: bool = False) -> SqlType:
    """``kind`` once it is known to have the equality (GROUP BY, DISTINCT, UNION, PARTITION BY)
    or ordering (ORDER BY) a clause needs: json has neither, nor json[] (42883, as
    PostgreSQL)."""
    if JSON in (kind, kind.element):
        what = "an ordering" if ordering else "an equality"
        raise PlanError(f"could not identify {what} operator for type {kind}", sqlstate="42883")
    return kind


def text_length(dt: exp.DataType) -> int | None:
    """n of varchar(n); -n of char(n) (``char`` alone is char(1)), whose values are held
    without trailing blanks (see :func:`changeflow.adapter.assign.char_limit`)."""
    if not isinstance(dt, exp.DataType):
        return None
    if dt.this in (T.CHAR, T.NCHAR):
        return -(int(dt.expressions[0].this.this) if dt.expressions else 1)
    if dt.this in (T.VARCHAR, T.NVARCHAR) and dt.expressions:
        return int(dt.expressions[0].this.this)
    return None


def sized(value: X.Expr, dt: exp.Expression, scale: int | None) -> X.Expr:
    """A cast's value made to fit its target: rounded to numeric(p, s)'s scale, or cut to
    varchar(n)'s or char(n)'s length (an explicit cast cuts, as PostgreSQL's does); char(n)'s
    trailing blanks dropped, as its comparisons, ``||``, length() and ``::text`` drop them."""
    if scale is not None:
        found = _decimal(dt)  # type: ignore[arg-type]
        precision = found[0] if found is not None else 38
        return Func("numeric_n", (value, X.lit(scale), X.lit(precision)))
    length = text_length(dt)  # type: ignore[arg-type]
    if length is None:
        return _unsized_text(value, dt)
    return Func("varchar_n" if length > 0 else "char_n", (value, X.lit(abs(length))))


def _unsized_text(value: X.Expr, dt: exp.Expression) -> X.Expr:
    """``x::varchar`` without a length: text of that type (``x::bpchar``: see
    :meth:`~changeflow.adapter.sql.char_scalars.CharScalars.cast_text`)."""
    if not isinstance(dt, exp.DataType) or dt.expressions:
        return value
    if dt.this in (T.VARCHAR, T.NVARCHAR):
        return Func("typed_text", (value, X.lit("varchar")))
    if dt.this == T.NAME:  # cut to NAMEDATALEN - 1 (63 characters here, bytes there)
        return Func("typed_text", (Func("varchar_n", (value, X.lit(63))), X.lit("name")))
    return value
