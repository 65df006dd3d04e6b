"""Prepared INSERTs without SQL text: ``INSERT INTO t [(columns)] VALUES ($1, …, $n)`` (constants
may stand between the parameters: integers, strings, NULL) executed again and again (psycopg's
``executemany``, any driver's prepared INSERT) collects its bound rows as columns and inserts
them through the session in one frame, without substituting the parameters into SQL for sqlglot
to parse.

A run of such Executes of one statement is collected until anything else happens on the
connection (Sync, another statement, the end of a batch of :data:`MAX_ROWS`), then inserted at
once: one commit, as PostgreSQL commits the implicit transaction of the Executes before a
Sync. The rows of a table with a PRIMARY KEY or UNIQUE constraint are inserted one at its
Execute instead (no SQL text either), so that a repeated key is that Execute's error, as in
PostgreSQL: an error after the CommandCompletes, at Sync, is one psycopg's pipeline (its
``executemany``) cannot take.

A row is taken only when its parameters mean what its columns read: a parameter of
unknown or text type, or of the column's own type (read by the column's type, as a quoted
literal would be, or decoded from binary), an integer type into an integer, float or numeric
column, a float or numeric into a float column; a constant is taken as such a parameter (an
integer as an int8, a string as one of unknown type). Anything else (another type, RETURNING, a
DEFAULT to compute) takes the statement path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from changeflow.compute.scalars import check_range, from_text, to_float4
from changeflow.compute.types import FLOAT8, NUMERIC, UUID, Column, SqlType
from changeflow.errors import EvalError, PlanError
from changeflow.server import values as V

if TYPE_CHECKING:
    from changeflow.adapter.session import Session

MAX_ROWS = 10_000
_NAME = r'(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+")'
_VALUE = r"(?:\$\d+|-?\d+|'(?:[^']|'')*'|NULL)"  # a parameter or a constant
_INSERT = re.compile(
    rf"\s*INSERT\s+INTO\s+({_NAME})\s*(?:\(\s*({_NAME}(?:\s*,\s*{_NAME})*)\s*\))?\s*"
    rf"VALUES\s*\(\s*({_VALUE}(?:\s*,\s*{_VALUE})*)\s*\)\s*;?\s*",
    re.IGNORECASE,
)
_UNKNOWN = {0, V.TEXT, V.VARCHAR, V.UNKNOWN}
_INTS = {V.INT2, V.INT4, V.INT8}


@dataclass(frozen=True)
class Target:
    """A prepared INSERT of one row into ``table`` (``columns``: None for all): ``values``
    holds each value's parameter number, or the constant in its place (an integer, a string's
    text, or None for NULL)."""

    table: str
    columns: list[str] | None
    values: tuple[int | Constant, ...] = ()

    def bound(
        self, oids: list[int], raw: list[bytes | None], formats: list[int]
    ) -> tuple[list[int], list[bytes | None], list[int]]:
        """Each value's type, bytes and format: a parameter's as bound, a constant as the
        text of a parameter of its type (an integer's is int8, a string's unknown)."""
        out: tuple[list[int], list[bytes | None], list[int]] = ([], [], [])
        for value in self.values:
            if isinstance(value, Constant):
                out[0].append(V.INT8 if isinstance(value.value, int) else 0)
                out[1].append(None if value.value is None else str(value.value).encode())
                out[2].append(0)
            else:
                out[0].append(oids[value - 1])
                out[1].append(raw[value - 1])
                out[2].append(format_code(formats, value - 1))
        return out


@dataclass(frozen=True)
class Constant:
    """A constant among a prepared INSERT's values."""

    value: int | str | None


def format_code(formats: list[int], i: int) -> int:
    """Item ``i``'s format code in a list of them as Bind gives it, for parameters or result
    columns (none: text; one: every item's)."""
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[i] if i < len(formats) else 0


def target(text: str) -> Target | None:
    """The target of ``text`` if it is a plain prepared INSERT of ``$1…$n`` in order, with
    constants (integers, strings, NULL) between them, or None."""
    m = _INSERT.fullmatch(text)
    if m is None:
        return None
    values: list[int | Constant] = []
    for item in re.findall(_VALUE, m[3]):
        if item.startswith("$"):
            values.append(int(item[1:]))
        elif item.startswith("'"):
            values.append(Constant(item[1:-1].replace("''", "'")))
        else:
            values.append(Constant(None if item.upper() == "NULL" else int(item)))
    params = [v for v in values if not isinstance(v, Constant)]
    if params != list(range(1, len(params) + 1)):
        return None
    columns = [_ident(c) for c in re.findall(_NAME, m[2])] if m[2] else None
    if columns is not None and len(columns) != len(values):
        return None
    return Target(_ident(m[1]), columns, tuple(values))


def _ident(name: str) -> str:
    name = name.strip()
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


def _fits(oid: int, kind: SqlType) -> bool:
    """Does a parameter of type ``oid`` mean, read as ``kind``, what the SQL path makes it?"""
    if oid in _UNKNOWN or oid == V.oid_of(kind)[0]:
        return True
    if kind.integer:
        return oid in _INTS
    if kind.floating:
        return oid in _INTS | {V.FLOAT4, V.NUMERIC, V.FLOAT8}
    if kind == NUMERIC:
        return oid in _INTS
    return False


def _value(raw: bytes, oid: int, binary: bool, kind: SqlType, index: int) -> Any:
    """A parameter as a value of its column: text read by the column's type (as a quoted
    literal would be), binary decoded by its own type, then converted (a uuid to the 16
    bytes it is stored as)."""
    value = V.from_binary(raw, oid, index) if binary else raw.decode("utf-8")
    if not binary or isinstance(value, V.Typed):
        value = from_text(value, kind)
        return value.bytes if kind is UUID else value
    if kind.integer:
        return check_range(int(value), kind)
    if kind.floating:
        return float(value) if kind == FLOAT8 else to_float4(float(value))
    if kind == NUMERIC:
        return Decimal(value)
    return value


@dataclass
class Batch:
    """Rows collected for one target (see the module docstring)."""

    target: Target
    texts: list[str] = field(default_factory=list)  # each row's SQL, for the statement path
    rows: list[list[Any]] = field(default_factory=list)

    def insert(self, session: Session) -> None:
        """Insert the rows, by columns if the table allows, else statement by statement."""
        insert_rows(session, self.target, self.rows, self.texts)


def insert_rows(session: Session, target: Target, rows: list[list[Any]], texts: list[str]) -> None:
    """Insert ``rows`` (of ``target``'s columns) by columns if the table allows, else by
    their statements' ``texts``."""
    columns = [pa.array([r[i] for r in rows]) for i in range(len(rows[0]))]
    if session.insert_columns(target.table, target.columns, columns, text=False) is None:
        from changeflow.adapter.sql.statements import parse

        for text in texts:
            session.run(parse(text))


@dataclass(frozen=True)
class Shape:
    """What a Bind needs of the target table: its columns, which of them have a DEFAULT,
    which store exactly their SQL type (no numeric(p,s) or varchar(n) to fit a value to), and
    whether it has a constraint other than NOT NULL (``keyed``: each row is then inserted
    at its own Execute, its keys checked there, as PostgreSQL checks them; still without SQL
    text, and committed at Sync)."""

    columns: tuple[Column, ...]
    defaults: frozenset[str]
    plain: frozenset[str]
    keyed: bool = False


def bound_row(
    found: Target, shape: Shape, oids: list[int], raw: list[bytes | None], formats: list[int]
) -> list[Any] | None:
    """The row a Bind gives ``found``'s columns, as their values; None if it should take the
    statement path. A value its column refuses (bad input, NULL in a NOT NULL column) is its
    error now, so nothing is left to fail when the rows are inserted."""
    oids, raw, formats = found.bound(oids, raw, formats)
    by_name = {c.name: c for c in shape.columns}
    names = found.columns if found.columns is not None else [c.name for c in shape.columns]
    if len(names) != len(raw) or any(n not in shape.plain for n in names):
        return None
    for c in shape.columns:  # a left-out column is NULL: its DEFAULT or NOT NULL is theirs
        if c.name not in names and (c.name in shape.defaults or not c.nullable):
            return None
    if not all(_fits(oid, by_name[n].type) for oid, n in zip(oids, names, strict=True)):
        return None  # a type the statement path refuses before any value it would convert
    row: list[Any] = []
    for i, (value, oid, name) in enumerate(zip(raw, oids, names, strict=True)):
        column = by_name[name]
        binary = formats[i]
        try:
            row.append(
                None if value is None else _value(value, oid, binary == 1, column.type, i + 1)
            )
        except UnicodeDecodeError:
            return None  # the statement path gives its error
        except EvalError as e:
            raise PlanError(e.message, sqlstate=e.fields.get("sqlstate", "22P02")) from None
        if row[-1] is None and not column.nullable:
            raise PlanError(
                f'null value in column "{name}" of relation "{found.table}" violates not-null '
                "constraint",
                sqlstate="23502",
            )
    return row
