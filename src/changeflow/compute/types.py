"""SQL types of plan columns and their Arrow types, as PostgreSQL names them.

A plan's schema is a tuple of :class:`Column` (name, :class:`SqlType`, nullable). Integers are
``smallint``, ``integer`` and ``bigint`` with PostgreSQL's ranges (overflow is an error);
``numeric`` is exact (Python ``Decimal``); ``double precision`` is a float and ``real`` a float
whose value is a float32's (stored as Arrow float32); ``date``,
``timestamp`` and ``timestamp with time zone`` are Python ``date`` and ``datetime`` values,
``time`` (without time zone) a Python ``time``.
``uuid`` is a Python ``UUID`` (stored as 16 bytes), ``bytea`` Python ``bytes``, ``interval`` an
:class:`~changeflow.compute.intervals.Interval` (stored as a struct of
months, days and microseconds: Parquet has no month_day_nano_interval), ``jsonb`` a
:class:`~changeflow.compute.jsonb.Jsonb` (stored as a struct of its normalized text), ``json``
its text as a Python ``str`` (stored as a struct of it; made by ``to_json``).
An array (``integer[]``…, one dimension, 1-based) is a Python tuple of its elements' values
(hashable, so it can be a group key) and an Arrow list. An enum (``CREATE TYPE … AS ENUM``) is
its label, a Python ``str`` stored as Arrow text; its type holds the labels in their order.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Context
from typing import Any

import pyarrow as pa

from changeflow.errors import EvalError, PlanError


@dataclass(frozen=True, eq=False)
class SqlType:
    """A SQL type: its PostgreSQL name, its Arrow type and, for integers, its range.

    There is one value of each type (the constants below), so types compare by identity, which
    keeps the per-value type checks of evaluation cheap; unpickled, a type is that constant."""

    name: str
    arrow: pa.DataType
    rank: int = -1  # promotion order: smallint < integer < bigint < numeric < real < double
    element: SqlType | None = None  # an array's element type
    labels: tuple[str, ...] | None = None  # an enum's labels, in their order
    oid: int = 0  # an enum's OID (a type of the catalog's)

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[object, tuple[Any, ...]]:
        if self.labels is not None:
            return (enum_type, (self.name, self.labels, self.oid))
        if self.element is not None and self.element.labels is not None:
            return (array_of, (self.element,))
        return (_named, (self.name,))

    @property
    def numeric(self) -> bool:
        return self.rank >= 0

    @property
    def integer(self) -> bool:
        return 0 <= self.rank <= 2

    @property
    def floating(self) -> bool:
        """``real`` or ``double precision``."""
        return self.rank >= 4


BOOL = SqlType("boolean", pa.bool_())
INT2 = SqlType("smallint", pa.int16(), 0)
INT4 = SqlType("integer", pa.int32(), 1)
INT8 = SqlType("bigint", pa.int64(), 2)
NUMERIC_SCALE = 18
"""The decimal places an unconstrained numeric is stored with (Spark's own default decimal,
``decimal(38,18)``: 20 digits before the point, a bigint's 19 among them)."""
NUMERIC = SqlType("numeric", pa.decimal128(38, NUMERIC_SCALE), 3)
WIDE = Context(prec=1000)
"""Numeric arithmetic's context: exact sums, differences and products (Decimal's default rounds
to 28 digits), as PostgreSQL's numeric is."""
FLOAT4 = SqlType("real", pa.float32(), 4)
FLOAT8 = SqlType("double precision", pa.float64(), 5)
TEXT = SqlType("text", pa.string())
DATE = SqlType("date", pa.date32())
TIMESTAMP = SqlType("timestamp", pa.timestamp("us"))
TIMESTAMPTZ = SqlType("timestamp with time zone", pa.timestamp("us", tz="UTC"))
TIME = SqlType("time without time zone", pa.time64("us"))
UUID = SqlType("uuid", pa.binary(16))
BYTEA = SqlType("bytea", pa.binary())
INTERVAL = SqlType(
    "interval", pa.struct([("months", pa.int32()), ("days", pa.int32()), ("micros", pa.int64())])
)
JSONB = SqlType("jsonb", pa.struct([("jsonb", pa.string())]))
JSON = SqlType("json", pa.struct([("json", pa.string())]))  # its text, kept as made (to_json)
NULLTYPE = SqlType("unknown", pa.null())  # the type of a bare NULL literal, cast on use
VOID = SqlType("void", pa.string())  # a function's result that is no value, shown as ''

SCALARS = (BOOL, INT2, INT4, INT8, NUMERIC, FLOAT4, FLOAT8, TEXT, DATE, TIMESTAMP, TIMESTAMPTZ)
ARRAYS = {
    t: SqlType(f"{t.name}[]", pa.list_(t.arrow), element=t) for t in (*SCALARS, UUID, JSONB, JSON)
}
TYPES = (*SCALARS, TIME, UUID, BYTEA, INTERVAL, JSONB, JSON, *ARRAYS.values())
INT_RANGES = {INT2: 2**15, INT4: 2**31, INT8: 2**63}

_BY_NAME = {t.name: t for t in TYPES} | {
    "bool": BOOL,
    "int2": INT2,
    "int": INT4,
    "int4": INT4,
    "int8": INT8,
    "decimal": NUMERIC,
    "float4": FLOAT4,
    "float8": FLOAT8,
    "double": FLOAT8,
    "float": FLOAT8,
    "varchar": TEXT,
    "string": TEXT,
    "timestamptz": TIMESTAMPTZ,
    "time": TIME,
}


_ENUMS: dict[tuple[str, tuple[str, ...], int], SqlType] = {}
USER_TYPES: ContextVar[Callable[[str], SqlType | None] | None] = ContextVar(
    "user_types", default=None
)
"""The catalog's types by name, for the statement being planned (the session sets it)."""


def enum_type(name: str, labels: tuple[str, ...], oid: int) -> SqlType:
    """The enum type ``name`` of ``labels`` (one value for each, so types compare by
    identity here too)."""
    key = (name, tuple(labels), oid)
    found = _ENUMS.get(key)
    if found is None:
        found = _ENUMS[key] = SqlType(name, pa.string(), labels=key[1], oid=oid)
    return found


def enum_label(text: str, kind: SqlType) -> str:
    """``text`` as a value of the enum ``kind``: one of its labels exactly (22P02 if not)."""
    if text not in kind.labels:  # type: ignore[operator]
        raise EvalError(f'invalid input value for enum {kind}: "{text}"', sqlstate="22P02")
    return text


def _named(name: str) -> SqlType:
    return {NULLTYPE.name: NULLTYPE, VOID.name: VOID}.get(name) or sql_type(name)


def array_of(element: SqlType) -> SqlType:
    """The type of arrays of ``element`` (42P18 for NULL's unknown type, 0A000 for arrays of
    arrays)."""
    if element is NULLTYPE:
        raise PlanError(
            "could not determine polymorphic type because input has type unknown", sqlstate="42P18"
        )
    found = ARRAYS.get(element)
    if found is None and element.labels is not None:  # an enum's, made once
        found = _ENUMS.setdefault(
            (f"{element.name}[]", element.labels, -element.oid),
            SqlType(f"{element.name}[]", pa.list_(pa.string()), element=element),
        )
    if found is None:
        raise PlanError(f"arrays of {element} are not supported", sqlstate="0A000")
    return found


def sql_type(name: str) -> SqlType:
    """The type named ``name`` (PostgreSQL's names and common aliases, ``name[]`` an array)."""
    given = name.strip()  # (a catalog type's name keeps its case)
    name = given.lower()
    if name.endswith("[]"):
        return array_of(sql_type(given[:-2]))
    found = _BY_NAME.get(name)
    if found is None and (user_types := USER_TYPES.get()) is not None:
        found = user_types(given)
    if found is None:
        known = ", ".join(t.name for t in (*SCALARS, TIME, UUID, BYTEA, INTERVAL, JSONB))
        raise PlanError(f"unknown type {name!r}; the types are {known}", sqlstate="42704")
    return found


def from_arrow(kind: pa.DataType) -> SqlType:
    """The SQL type that holds values of the Arrow type ``kind`` (int32 is ``integer``…)."""
    for t in TYPES:
        if t.arrow.equals(kind):
            return t
    if pa.types.is_int8(kind) or pa.types.is_int16(kind):
        return INT2
    if pa.types.is_decimal(kind):
        return NUMERIC
    if pa.types.is_large_string(kind):
        return TEXT
    if pa.types.is_timestamp(kind):
        return TIMESTAMPTZ if kind.tz else TIMESTAMP
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return array_of(from_arrow(kind.value_type))
    raise PlanError(f"Arrow type {kind} has no SQL type here", sqlstate="0A000")


def rows_only(kind: SqlType) -> bool:
    """Values neither Arrow's kernels nor Spark's mean as SQL does (arrays, uuid, bytea,
    interval, jsonb, enums; time of day, which Spark has no type for): they are computed on rows, in
    this process."""
    special = kind.element is not None or kind.labels is not None
    return special or kind in (UUID, BYTEA, INTERVAL, JSONB, JSON, TIME)


def common_numeric(a: SqlType, b: SqlType) -> SqlType:
    """The type the branches of CASE, COALESCE or UNION of two numeric types unify to (the
    higher rank: integer and real are real)."""
    return a if a.rank >= b.rank else b


def operand_numeric(a: SqlType, b: SqlType) -> SqlType:
    """The type an operator computes two numeric operands in: as :func:`common_numeric`, but
    ``real`` with any other type is ``double precision`` (PostgreSQL has no real-and-integer
    or real-and-numeric operators and prefers double precision)."""
    if FLOAT4 in (a, b) and a is not b:
        return FLOAT8
    return common_numeric(a, b)


def char_width(typmod: int, text_type: str) -> int | None:
    """The n of char(n) (``bpchar`` of typmod n + 4); None for another type."""
    return typmod - 4 if text_type == "bpchar" and typmod >= 4 else None


@dataclass(frozen=True, eq=False)
class Column:
    """A column of a plan's output: name, type, whether it may be NULL and, for a numeric
    whose values all show the same number of decimals (``numeric(12,2)``, ``x * 2`` of it,
    ``sum(x)``), that scale; None: each value shows its own, as PostgreSQL's numerics do.
    ``typmod`` is PostgreSQL's type modifier of the column (``numeric(p,s)``:
    ``(p << 16 | s) + 4``, ``varchar(n)`` and ``char(n)``: ``n + 4``; -1 for none) and
    ``text_type`` the PostgreSQL type a text column has when it is not ``text``: ``bpchar``
    (char(n), whose width :attr:`pad` is its typmod's n) or ``varchar``."""

    name: str
    type: SqlType
    nullable: bool = True
    scale: int | None = None
    typmod: int = -1
    text_type: str = ""

    @property
    def pad(self) -> int | None:
        """char(n)'s n: its text is held without trailing blanks and shown padded to n."""
        return char_width(self.typmod, self.text_type)

    def _identity(self) -> tuple[Any, ...]:
        # the typmod of a varchar or a numeric is shown to clients, not part of the identity
        return (self.name, self.type, self.nullable, self.scale, self.pad)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Column) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A column pickled before typmods held char(n)'s n (its ``pad``) read as it is now."""
        pad = state.pop("pad", None)
        if pad is not None:
            state |= {"typmod": pad + 4, "text_type": "bpchar"}
        elif "text_type" not in state and state["type"] is TEXT and state.get("typmod", -1) >= 4:
            state["text_type"] = "varchar"  # a text column's typmod was varchar(n)'s
        object.__setattr__(self, "__dict__", {"typmod": -1, "text_type": ""} | state)

    def __str__(self) -> str:
        return f"{self.name} {self.type}{'' if self.nullable else ' not null'}"


Schema = tuple[Column, ...]


def storage_type(column: Column) -> pa.DataType:
    """The Arrow type a column is stored as: a numeric of known scale keeps it."""
    if column.type is NUMERIC and column.scale is not None:
        return pa.decimal128(38, column.scale)
    return column.type.arrow


def arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema of a plan's output (NOT NULL and numeric scales kept)."""
    return pa.schema([pa.field(c.name, storage_type(c), c.nullable) for c in schema])


def numeric_scale(kind: pa.DataType) -> int | None:
    """The scale a stored decimal column shows (a declared ``numeric(p, s)``'s ``s``); None
    for the storage of an unconstrained numeric."""
    if pa.types.is_decimal(kind) and not kind.equals(NUMERIC.arrow):
        return kind.scale
    return None


def from_arrow_schema(schema: pa.Schema) -> Schema:
    """A plan schema from an Arrow schema (a shard's)."""
    return tuple(
        Column(f.name, from_arrow(f.type), f.nullable, numeric_scale(f.type)) for f in schema
    )
