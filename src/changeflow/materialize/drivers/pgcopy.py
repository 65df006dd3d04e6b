"""PostgreSQL's binary COPY format, built from Arrow columns with Arrow and numpy.

A row is a 16-bit field count, then per field a 32-bit length (-1 for NULL) and the value in
network byte order: booleans one byte, integers and floats their big-endian bytes, text its
UTF-8 bytes, a date its days, a timestamp its microseconds since 2000-01-01 and a time of day
its microseconds since midnight. Each column becomes an array of its fields' bytes at once, and
the rows are the element-wise concatenation of those arrays, so no Python runs per row.
Decimals travel as text (PostgreSQL's binary numeric is base 10000) and nested values as JSON
text.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.materialize.drivers.sql import to_text

HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # the signature, no flags, no header extension
TRAILER = b"\xff\xff"
_NULL = pa.scalar(b"\xff\xff\xff\xff", pa.large_binary())
_EPOCH_DAYS = 10_957  # 2000-01-01 in days since 1970-01-01
_EPOCH_US = _EPOCH_DAYS * 86_400 * 1_000_000

#: Arrow integer and float types -> the big-endian numpy type PostgreSQL reads for them
_NUMBERS = {
    "bool": "u1",
    "int8": ">i2",
    "uint8": ">i2",
    "int16": ">i2",
    "uint16": ">i4",
    "int32": ">i4",
    "uint32": ">i8",
    "int64": ">i8",
    "float": ">f4",
    "double": ">f8",
}


def stage_type(kind: pa.DataType) -> str | None:
    """The type a staging table needs for ``kind`` when the COPY carries it as text though
    PostgreSQL has the type (decimals); None when it carries the column's own type."""
    return "text" if pa.types.is_decimal(kind) else None


def copy_data(table: pa.Table) -> bytes:
    """The binary COPY payload of ``table``'s rows, every column in order."""
    if not table.num_rows:
        return HEADER + TRAILER
    count = pa.scalar(np.array([table.num_columns], ">i2").tobytes(), pa.large_binary())
    fields = [_field(table[name].combine_chunks()) for name in table.column_names]
    rows = pc.binary_join_element_wise(count, *fields, pa.scalar(b"", pa.large_binary()))
    offsets = np.frombuffer(rows.buffers()[1], np.int64)[rows.offset : rows.offset + len(rows) + 1]
    data = rows.buffers()[2]
    return HEADER + data[offsets[0] : offsets[-1]].to_pybytes() + TRAILER


def _field(values: pa.Array) -> pa.Array:
    """Each value's field: its length and its bytes (large_binary), NULL as length -1."""
    kind = values.type
    if str(kind) in _NUMBERS:
        return _fixed(values, _NUMBERS[str(kind)])
    if pa.types.is_date(kind):
        days = values.cast(pa.date32()).cast(pa.int32())
        return _fixed(pc.subtract(days, _EPOCH_DAYS), ">i4", values)
    if pa.types.is_timestamp(kind):
        micros = values.cast(pa.timestamp("us", kind.tz)).cast(pa.int64())
        return _fixed(pc.subtract(micros, _EPOCH_US), ">i8", values)
    if pa.types.is_time(kind):
        return _fixed(values.cast(pa.time64("us")).cast(pa.int64()), ">i8", values)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _variable(values.cast(pa.large_binary()))
    return _variable(to_text(values).cast(pa.large_binary()))


def _fixed(numbers: pa.Array, dtype: str, nulls: pa.Array | None = None) -> pa.Array:
    nulls = numbers if nulls is None else nulls
    n, width = len(numbers), np.dtype(dtype).itemsize
    blank = False if pa.types.is_boolean(numbers.type) else 0
    filled = numbers.fill_null(blank) if numbers.null_count else numbers
    fields = np.empty((n, 4 + width), np.uint8)
    fields[:, :4] = np.frombuffer(np.array([width], ">i4").tobytes(), np.uint8)
    values = filled.to_numpy(zero_copy_only=False).astype(dtype)
    fields[:, 4:] = values.view(np.uint8).reshape(n, width)
    out = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(4 + width), n, [None, pa.py_buffer(fields)]
    ).cast(pa.large_binary())
    return pc.if_else(pc.is_valid(nulls), out, _NULL) if nulls.null_count else out


def _variable(data: pa.Array) -> pa.Array:
    lengths = pc.binary_length(data).fill_null(0).to_numpy(zero_copy_only=False)
    prefix = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(4), len(data), [None, pa.py_buffer(lengths.astype(">i4").tobytes())]
    ).cast(pa.large_binary())
    out = pc.binary_join_element_wise(prefix, data, pa.scalar(b"", pa.large_binary()))
    return out.fill_null(_NULL) if data.null_count else out
