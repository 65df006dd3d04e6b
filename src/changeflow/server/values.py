"""Values on the wire: PostgreSQL type OIDs, text and binary formats out, and bound parameters
in (decoded by the OID the client declared for them, never by guessing from the bytes).

Text output is PostgreSQL's: ``t``/``f``, ``Infinity``/``NaN``, numeric at the value's scale
(a ``numeric(12,2)`` column's 1470.10), timestamps as ``YYYY-MM-DD HH:MM:SS[.ffffff]`` with
``+00`` for ``timestamptz`` (the session's time zone is UTC).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from changeflow.adapter.connection import literal
from changeflow.compute.array_shape import MAX_DIMS, flat, shape
from changeflow.compute.floats import float_text
from changeflow.compute.intervals import Interval
from changeflow.compute.scalars import array_text, numeric_text, to_text
from changeflow.compute.time_of_day import DAY_MICROS, micros_of, time_of, time_text
from changeflow.compute.types import WIDE, SqlType, sql_type
from changeflow.errors import PlanError

BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID = 16, 17, 18, 19, 20, 21, 23, 25, 26
JSON, FLOAT4, FLOAT8, UNKNOWN, VARCHAR, BPCHAR = 114, 700, 701, 705, 1043, 1042
TEXT_OIDS = {"bpchar": BPCHAR, "varchar": VARCHAR, "name": 19}  # the text types held as text
DATE, TIMESTAMP, TIMESTAMPTZ, NUMERIC, JSONB, UUID = 1082, 1114, 1184, 1700, 3802, 2950
INTERVAL, TIME = 1186, 1083
USER_OIDS = 16384  # the first OID of the catalog's own types (enums) and relations

# SQL type name -> (OID, type size)
OIDS: dict[str, tuple[int, int]] = {
    "boolean": (BOOL, 1),
    "smallint": (INT2, 2),
    "integer": (INT4, 4),
    "bigint": (INT8, 8),
    "numeric": (NUMERIC, -1),
    "real": (FLOAT4, 4),
    "double precision": (FLOAT8, 8),
    "text": (TEXT, -1),
    "date": (DATE, 4),
    "timestamp": (TIMESTAMP, 8),
    "timestamp with time zone": (TIMESTAMPTZ, 8),
    "time without time zone": (TIME, 8),
    "uuid": (UUID, 16),
    "bytea": (BYTEA, -1),
    "interval": (INTERVAL, 16),
    "jsonb": (JSONB, -1),
    "json": (JSON, -1),
    "oid": (OID, 4),
    "name": (NAME, 64),
    '"char"': (CHAR, 1),
    "void": (2278, 4),
}
# the object identifier types: their name in text, their 4-byte OID in binary
REG_OIDS = {"regproc": 24, "regprocedure": 2202, "regoper": 2203, "regclass": 2205}
REG_OIDS |= {"regtype": 2206, "regnamespace": 4089, "regrole": 4096}
OIDS |= {name: (oid, 4) for name, oid in REG_OIDS.items()}
# element type name -> the OID of its array type
ARRAY_OIDS: dict[str, int] = {
    "boolean": 1000,
    "smallint": 1005,
    "integer": 1007,
    "bigint": 1016,
    "numeric": 1231,
    "real": 1021,
    "double precision": 1022,
    "text": 1009,
    "date": 1182,
    "timestamp": 1115,
    "timestamp with time zone": 1185,
    "jsonb": 3807,
    "json": 199,
    "uuid": 2951,
    "oid": 1028,
}
TYPE_NAMES = {
    BOOL: "boolean",
    INT2: "smallint",
    INT4: "integer",
    INT8: "bigint",
    OID: "bigint",
    NUMERIC: "numeric",
    FLOAT4: "real",
    FLOAT8: "double precision",
    DATE: "date",
    TIMESTAMP: "timestamp",
    TIMESTAMPTZ: "timestamptz",
    TIME: "time",
    UUID: "uuid",
    BYTEA: "bytea",
    INTERVAL: "interval",
}
TYPE_NAMES |= {oid: f"{e}[]" for e, oid in ARRAY_OIDS.items()} | {1028: "bigint[]"}  # as OID
STRINGS = {0, TEXT, VARCHAR, BPCHAR, CHAR, NAME, UNKNOWN, JSON, JSONB}
PG_EPOCH = dt.datetime(2000, 1, 1)
PG_EPOCH_TZ = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
PG_EPOCH_DATE = dt.date(2000, 1, 1)


def oid_of(t: SqlType) -> tuple[int, int]:
    """The OID and size PostgreSQL gives the type (text for one it has no name for; an
    enum's own OID, its size an OID's, as PostgreSQL stores its labels)."""
    if t.labels is not None:
        return t.oid, 4
    if t.element is not None:  # (an enum's array: as text[], a type clients read)
        return ARRAY_OIDS.get(t.element.name, ARRAY_OIDS["text"]), -1
    return OIDS.get(t.name, (TEXT, -1))


# -- text format ----------------------------------------------------------------------------


def text(value: Any) -> str:
    """``value`` in PostgreSQL's text format."""
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, Decimal):
        return numeric_text(value)
    if isinstance(value, dt.datetime):
        return timestamp_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return time_text(value)
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    return str(value)


def timestamp_text(value: dt.datetime) -> str:
    tz = value.tzinfo is not None
    if tz:
        value = value.astimezone(dt.UTC)
    out = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        out += f".{value.microsecond:06d}".rstrip("0")
    return out + ("+00" if tz else "")


def encode_text(value: Any) -> bytes | None:
    return None if value is None else text(value).encode("utf-8")


# -- binary format --------------------------------------------------------------------------


def numeric_binary(value: Decimal) -> bytes:
    """PostgreSQL's binary numeric: ndigits, weight, sign, dscale, then base-10000 digits."""
    if value.is_nan():
        return struct.pack("!hhHh", 0, 0, 0xC000, 0)
    if value.is_infinite():
        return struct.pack("!hhHh", 0, 0, 0xD000 if value > 0 else 0xF000, 0)
    sign = 0x4000 if value.is_signed() and not value.is_zero() else 0  # no negative zero
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits))
    if exponent >= 0:
        whole, frac = ds + "0" * exponent, ""
    else:
        ds = ds.rjust(-exponent, "0")
        whole, frac = ds[:exponent] or "0", ds[exponent:]
    dscale = len(frac)  # the value's own scale; trailing zero groups are left out below
    frac = frac.rstrip("0")
    whole = whole.rjust(-(-len(whole) // 4) * 4, "0")
    frac = frac.ljust(-(-len(frac) // 4) * 4, "0")
    groups = [int(whole[i : i + 4]) for i in range(0, len(whole), 4)]
    weight = len(groups) - 1
    groups += [int(frac[i : i + 4]) for i in range(0, len(frac), 4)]
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    head = struct.pack("!hhHh", len(groups), weight, sign, dscale)
    return head + struct.pack(f"!{len(groups)}h", *groups)


def numeric_from_binary(data: bytes) -> Decimal:
    ndigits, weight, sign, dscale = struct.unpack("!hhHh", data[:8])
    if sign == 0xC000:
        return Decimal("NaN")
    if sign in (0xD000, 0xF000):
        return Decimal("Infinity") if sign == 0xD000 else Decimal("-Infinity")
    if len(data) != 8 + 2 * ndigits or ndigits < 0 or sign not in (0, 0x4000):
        raise ValueError("bad numeric")
    groups = struct.unpack(f"!{ndigits}h", data[8:])
    n = 0
    for g in groups:
        n = n * 10000 + g
    value = WIDE.scaleb(Decimal(n), 4 * (weight - ndigits + 1))
    value = value.quantize(Decimal(1).scaleb(-dscale), context=WIDE)
    return -value if sign == 0x4000 else value


def _micros(value: dt.datetime) -> int:
    if value.tzinfo is not None:
        return (value - PG_EPOCH_TZ) // dt.timedelta(microseconds=1)
    return (value - PG_EPOCH) // dt.timedelta(microseconds=1)


BINARY: dict[str, Callable[[Any], bytes]] = {
    "boolean": lambda v: b"\x01" if v else b"\x00",
    "smallint": lambda v: struct.pack("!h", v),
    "integer": lambda v: struct.pack("!i", v),
    "bigint": lambda v: struct.pack("!q", v),
    "real": lambda v: struct.pack("!f", v),
    "double precision": lambda v: struct.pack("!d", v),
    "numeric": lambda v: numeric_binary(Decimal(v)),
    "text": lambda v: str(v).encode("utf-8"),
    "date": lambda v: struct.pack("!i", (v - PG_EPOCH_DATE).days),
    "timestamp": lambda v: struct.pack("!q", _micros(v)),
    "timestamp with time zone": lambda v: struct.pack("!q", _micros(v)),
    "time without time zone": lambda v: struct.pack("!q", micros_of(v)),
    "uuid": lambda v: v.bytes,
    "bytea": bytes,
    "interval": lambda v: struct.pack("!qii", v.micros, v.days, v.months),
    "jsonb": lambda v: b"\x01" + str(v).encode("utf-8"),
    "json": lambda v: str(v).encode("utf-8"),
    "oid": lambda v: struct.pack("!I", v),
    "name": lambda v: str(v).encode("utf-8"),
    '"char"': lambda v: str(v).encode("utf-8"),
    "void": lambda v: b"",
}
BINARY |= dict.fromkeys(REG_OIDS, lambda v: struct.pack("!I", v.oid))


def array_binary(values: tuple, element: SqlType) -> bytes:
    """PostgreSQL's binary array: dimensions, a NULL flag, the element OID, each dimension's
    length and lower bound (1), then each element's length (-1: NULL) and bytes."""
    encode = BINARY[element.name]
    dims, values = shape(values), flat(values)
    out = [struct.pack("!iiI", len(dims), int(None in values), oid_of(element)[0])]
    out += [struct.pack("!ii", n, 1) for n in dims]
    for v in values:
        data = b"" if v is None else encode(v)
        out.append(struct.pack("!i", -1) if v is None else struct.pack("!i", len(data)) + data)
    return b"".join(out)


def encoder(t: SqlType, fmt: int) -> Callable[[Any], bytes | None]:
    """The function that puts a value of type ``t`` on the wire in format ``fmt`` (0 text,
    1 binary)."""
    if t.element is not None:
        element = t.element
        if fmt == 0:
            return lambda v: None if v is None else to_text(v, t).encode("utf-8")
        return lambda v: None if v is None else array_binary(v, element)
    if t.labels is not None:  # an enum's label, in binary too (enum_send: the label's bytes)
        return lambda v: None if v is None else str(v).encode("utf-8")
    if fmt == 0:
        if t.name in ("smallint", "integer", "bigint"):
            return lambda v: None if v is None else str(v).encode()
        if t.name == "text":
            return lambda v: None if v is None else v.encode("utf-8")
        if t.floating:  # a real's shortest digits are its float32's
            return lambda v: None if v is None else to_text(v, t).encode()
        return encode_text
    binary = BINARY.get(t.name, BINARY["text"])
    return lambda v: None if v is None else binary(v)


# -- parameters in --------------------------------------------------------------------------


class Typed(str):
    """A parameter given as text for a type whose literal is ``'text'::type``."""

    type_name: str = "text"


def _typed(value: str, type_name: str) -> Typed:
    out = Typed(value)
    out.type_name = type_name
    return out


TRUE = {"t", "true", "y", "yes", "on", "1"}
FALSE = {"f", "false", "n", "no", "off", "0"}


def _bad(index: int, oid: int, raw: Any) -> PlanError:
    name = TYPE_NAMES.get(oid, f"OID {oid}")
    return PlanError(
        f"invalid input syntax for type {name} in parameter ${index}: {raw!r}", sqlstate="22P02"
    )


def from_text(raw: str, oid: int, index: int) -> Any:
    """A parameter sent in text format, as a Python value of its declared type."""
    try:
        if oid == BOOL:
            word = raw.strip().lower()
            if word in TRUE or word in FALSE:
                return word in TRUE
            raise ValueError(raw)
        if oid in (INT2, INT4, INT8, OID):
            return int(raw.strip())
        if oid in (FLOAT4, FLOAT8):
            return float(raw.strip())
        if oid == NUMERIC:
            value = Decimal(raw.strip())
            if value.is_snan():
                raise ValueError(raw)
            return value
    except (ValueError, decimal.InvalidOperation):
        raise _bad(index, oid, raw) from None
    if (
        oid in (DATE, TIMESTAMP, TIMESTAMPTZ, TIME, UUID, BYTEA, INTERVAL)
        or oid in ARRAY_OIDS.values()
    ):
        return _typed(raw, TYPE_NAMES[oid])
    return raw


def from_binary(raw: bytes, oid: int, index: int) -> Any:
    """A parameter sent in binary format, decoded by its declared OID."""
    fixed = {BOOL: 1, INT2: 2, INT4: 4, INT8: 8, OID: 4, FLOAT4: 4, FLOAT8: 8, DATE: 4}
    fixed |= {TIMESTAMP: 8, TIMESTAMPTZ: 8, TIME: 8}
    if oid in fixed and len(raw) != fixed[oid]:
        raise PlanError(
            f"incorrect binary data format in parameter ${index}: {len(raw)} bytes for "
            f"{TYPE_NAMES[oid]}",
            sqlstate="22P03",
        )
    if oid == BOOL:
        return raw != b"\x00"
    if oid in (INT2, INT4, INT8):
        return int.from_bytes(raw, "big", signed=True)
    if oid == OID:
        return int.from_bytes(raw, "big", signed=False)
    if oid == FLOAT4:
        return float(struct.unpack("!f", raw)[0])
    if oid == FLOAT8:
        return struct.unpack("!d", raw)[0]
    if oid == NUMERIC:
        try:
            return numeric_from_binary(raw)
        except (ValueError, struct.error):
            raise PlanError(
                f"incorrect binary data format in parameter ${index} (numeric)", sqlstate="22P03"
            ) from None
    if oid == DATE:
        return PG_EPOCH_DATE + dt.timedelta(days=struct.unpack("!i", raw)[0])
    if oid == TIME:
        return _typed(time_text(time_of(struct.unpack("!q", raw)[0] % DAY_MICROS)), "time")
    if oid in (TIMESTAMP, TIMESTAMPTZ):
        micros = struct.unpack("!q", raw)[0]
        try:
            value = PG_EPOCH + dt.timedelta(microseconds=micros)
        except OverflowError:
            raise PlanError(
                f"timestamp out of range in parameter ${index}", sqlstate="22008"
            ) from None
        return value.replace(tzinfo=dt.UTC) if oid == TIMESTAMPTZ else value
    if oid == BYTEA:
        return _typed("\\x" + raw.hex(), "bytea")
    if oid in ARRAY_OIDS.values():
        return _typed(_array_from_binary(raw, index), TYPE_NAMES[oid])
    if oid == UUID and len(raw) == 16:
        return _typed(str(uuid.UUID(bytes=raw)), "uuid")
    if oid == INTERVAL and len(raw) == 16:
        micros, days, months = struct.unpack("!qii", raw)
        return _typed(str(Interval(months, days, micros)), "interval")
    if oid == JSONB and raw[:1] == b"\x01":
        raw = raw[1:]  # binary jsonb: a version byte, then the text
    if oid in STRINGS or oid >= USER_OIDS:  # an enum's binary value is its label's text
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise PlanError(f"invalid UTF-8 in parameter ${index}", sqlstate="22021") from None
    raise PlanError(
        f"binary parameters of type OID {oid} are not supported (parameter ${index}); "
        "send it in text format",
        sqlstate="0A000",
    )


def _array_from_binary(raw: bytes, index: int) -> str:
    """A binary array as its text form."""
    ndim, _, element = struct.unpack_from("!iiI", raw)
    names = {oid: name for name, (oid, _) in OIDS.items()} | {OID: "bigint"}
    names |= dict.fromkeys((VARCHAR, NAME, CHAR), "text")
    if ndim > MAX_DIMS or element not in names:
        raise PlanError(f"unsupported binary array in parameter ${index}", sqlstate="0A000")
    dims = [struct.unpack_from("!i", raw, 12 + 8 * d)[0] for d in range(ndim)]
    pos, values = 12 + 8 * ndim, []
    for _ in range(math.prod(dims) if dims else 0):
        (size,) = struct.unpack_from("!i", raw, pos)
        pos += 4
        if size == -1:
            values.append(None)
            continue
        values.append(from_binary(raw[pos : pos + size], element, index))
        pos += size
    for n in reversed(dims[1:]):  # grouped into sub-arrays, innermost first
        values = [tuple(values[i : i + n]) for i in range(0, len(values), n)]
    return array_text(tuple(values), sql_type(names[element]))


def sql_literal(value: Any) -> str:
    """A decoded parameter as a SQL literal (negative numbers parenthesised, so that ``-$1``
    never becomes a comment)."""
    if isinstance(value, Typed):
        return "'" + value.replace("'", "''") + f"'::{value.type_name}"
    out = literal(value)
    return f"({out})" if out.startswith("-") else out
