"""Arrow columns as Python values, as ``to_pylist`` gives them, without its cost per value.

Every update a dataflow reads becomes a row of Python values, and Arrow builds a ``Decimal`` or a
``date`` slowly (about 1 µs each). Decimals go through their text instead (Arrow formats them in
C, at their scale, and ``Decimal`` parses that in C); dates are built once per distinct day.
An array (an Arrow list) is a tuple, as rows hold it; a uuid (16 bytes) a ``UUID``,
an interval an ``Interval``.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any
from uuid import UUID

import numpy as np
import pyarrow as pa

from changeflow.compute.array_shape import one_dimension
from changeflow.compute.intervals import Interval
from changeflow.compute.jsonb import Jsonb
from changeflow.compute.scalars import NAN
from changeflow.compute.time_of_day import END_OF_DAY, micros_of, time_from_micros
from changeflow.compute.types import NUMERIC, NUMERIC_SCALE, WIDE

_EPOCH = date(1970, 1, 1).toordinal()


def python_values(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """The column's values as Python objects, equal to (and formatted as) ``to_pylist``'s."""
    kind = column.type
    if pa.types.is_decimal(kind) and kind.scale >= 0:
        text = column.cast(pa.string()).to_pylist()
        read = plain if unconstrained(kind) else Decimal  # (its storage's zeros dropped)
        if not column.null_count:
            return [read(Decimal(v)) for v in text] if read is plain else list(map(Decimal, text))
        return [None if v is None else read(Decimal(v)) for v in text]
    if pa.types.is_date32(kind) and not column.null_count and len(column):
        days, where = np.unique(column.cast(pa.int32()).to_numpy(), return_inverse=True)
        dates = np.array([date.fromordinal(_EPOCH + d) for d in days.tolist()], dtype=object)
        return dates[where].tolist()
    if pa.types.is_time(kind):
        return time_values(column)
    return stored_values(column.to_pylist(), kind)


def unconstrained(kind: pa.DataType) -> bool:
    """Does the decimal type ``kind`` hold unconstrained numerics (stored, or summed by
    Arrow into 76 digits at the same scale)?"""
    return kind == NUMERIC.arrow or (pa.types.is_decimal256(kind) and kind.scale == NUMERIC_SCALE)


def plain(value: Decimal) -> Decimal:
    """An unconstrained numeric as the rows hold it: without the trailing zeros of storage's
    fixed scale (a stored 5.000000000000000000 is the 5 the query computed; no exponent)."""
    if value == value.to_integral_value():
        return value.quantize(Decimal(1), context=WIDE)
    return value.normalize(WIDE)


def time_values(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """A time column's values, a stored 24:00:00 (a whole day's microseconds, which Arrow's
    ``to_pylist`` would read as midnight) as :data:`END_OF_DAY`."""
    unit = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 0}[column.type.unit]
    if not unit:
        return column.to_pylist()
    micros = column.cast(pa.int64()).to_pylist()
    return [None if v is None else time_from_micros(v * unit) for v in micros]


def stored_values(values: list[Any], kind: pa.DataType) -> list[Any]:
    """``to_pylist``'s values of a column of ``kind`` as rows hold them: a list as a tuple
    (of its elements as rows hold them), 16 bytes (a uuid) as a ``UUID``, a struct as an
    ``Interval`` or a ``Jsonb``; a NaN as :data:`~changeflow.compute.scalars.NAN`."""
    if pa.types.is_floating(kind):
        return [NAN if v != v else v for v in values]  # only a NaN is unequal to itself
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        element = kind.value_type
        if pa.types.is_struct(element) or pa.types.is_fixed_size_binary(element):
            return [None if v is None else tuple(stored_values(v, element)) for v in values]
        return [None if v is None else tuple(v) for v in values]
    if pa.types.is_fixed_size_binary(kind) and kind.byte_width == 16:
        return [None if v is None else UUID(bytes=v) for v in values]
    if pa.types.is_struct(kind) and kind.num_fields == 1 and kind.field(0).name == "json":
        return [None if v is None else v["json"] for v in values]
    if pa.types.is_struct(kind) and kind.num_fields == 1:
        return [None if v is None or v["jsonb"] is None else Jsonb(v["jsonb"]) for v in values]
    if pa.types.is_struct(kind):
        return [None if v is None else Interval(**v) for v in values]
    return values


def arrow_values(values: list[Any], kind: pa.DataType) -> list[Any]:
    """Row values as Arrow builds a column of ``kind`` from them: an interval or a jsonb as
    its struct's fields, a uuid as its 16 bytes; times as microseconds where one is 24:00:00
    (Arrow's range check lets a stored time64 hold it, not Python's ``time``)."""
    if pa.types.is_struct(kind) and kind.num_fields == 1 and kind.field(0).name == "json":
        return [None if v is None else {"json": v} for v in values]
    if pa.types.is_struct(kind):
        return [
            {"jsonb": v.text} if isinstance(v, Jsonb) else vars(v) if isinstance(v, Interval) else v
            for v in values
        ]
    if pa.types.is_fixed_size_binary(kind):
        return [getattr(v, "bytes", v) for v in values]
    if pa.types.is_time(kind) and any(v is END_OF_DAY for v in values):
        return [None if v is None else micros_of(v) for v in values]  # 24:00:00 as its micros
    if pa.types.is_list(kind):
        one_dimension(values)
    if pa.types.is_list(kind) and (
        pa.types.is_struct(kind.value_type) or pa.types.is_fixed_size_binary(kind.value_type)
    ):
        element = kind.value_type
        return [None if v is None else arrow_values(list(v), element) for v in values]
    return values
