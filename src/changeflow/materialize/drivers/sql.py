"""The base of the SQL drivers (SQLite, PostgreSQL): the remote store is authoritative.

Each binding is a table. ``changeflow_checkpoints`` holds, per task split (materialization and
key range), the runtime checkpoint and a fence. Open increments the fence in a transaction of
its own; each commit writes the staged stores and the checkpoint in one transaction, and only
while the fence is still this instance's: an older instance (a zombie) can no longer commit.
A dialect supplies the connection, the DDL, and the bulk paths of load and commit.

Loads and stores arrive as Arrow tables and are written a column at a time: no value is
converted in Python but nested ones (JSON text). Stores without ``_exists`` (the runtime did
not load) are upserts by key. Types a dialect lacks travel as text and come back typed.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute.types import NUMERIC
from changeflow.errors import ChangeflowError, FencedOff, InvalidInput, ProtocolViolation
from changeflow.materialize.columns import (
    DELETED,
    EXISTS,
    arrow_schema,
    key_schema,
    store_schema,
)
from changeflow.materialize.driver import Driver
from changeflow.materialize.keyrange import KeyRange, check_overlap
from changeflow.materialize.protocol import Binding, Open
from changeflow.updates import canonical_json

CHECKPOINTS = "changeflow_checkpoints"


@dataclass(frozen=True)
class Column:
    """How a column of an Arrow type lives in a dialect: ``ddl`` its SQL type, ``reported``
    as the database lists it, and ``text``: the values travel as text (JSON for nested
    values, else Arrow's cast to string) and are cast back on load."""

    ddl: str
    reported: str
    text: bool = False


#: the types every dialect stores natively (any other Arrow type is stored as JSON text)
_NATIVE = {
    "int8": "SMALLINT",
    "int16": "SMALLINT",
    "uint8": "SMALLINT",
    "int32": "INTEGER",
    "uint16": "INTEGER",
    "int64": "BIGINT",
    "uint32": "BIGINT",
    "string": "TEXT",
    "large_string": "TEXT",
    "double": "DOUBLE PRECISION",
    "float": "REAL",
    "bool": "BOOLEAN",
}


def column_type(kind: pa.DataType, native: dict[str, Column]) -> Column:
    """A column of Arrow type ``kind``: ``native`` of the dialect, else JSON text."""
    name = str(kind)
    if name in _NATIVE:
        return Column(_NATIVE[name], _NATIVE[name].lower())
    for prefix, column in native.items():
        if name.startswith(prefix):
            return column
    return Column("TEXT", "text", text=True)


def to_text(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A column as text: JSON for nested values, Arrow's own form for the rest, but an
    unconstrained numeric's without the trailing zeros of its storage's fixed scale (287.5, as
    a query shows it, not 287.5000000000)."""
    if pa.types.is_nested(values.type):
        return pa.array(
            [None if v is None else canonical_json(v) for v in values.to_pylist()], pa.string()
        )
    text = values.cast(pa.string())
    if values.type == NUMERIC.arrow:
        text = pc.replace_substring_regex(text, r"(\.\d*?)0+$", r"\1")
        text = pc.replace_substring_regex(text, r"\.$", "")
    return text


def in_key_order(rows: pa.Table, key: Iterable[str]) -> pa.Table:
    """``rows`` sorted by the key columns, so the database walks its index once, in order,
    rather than at random (left as they are when a key column has no order: nested values)."""
    key = list(key)
    if rows.num_rows < 2 or not key:
        return rows
    if any(pa.types.is_nested(rows.schema.field(k).type) for k in key):
        return rows
    return rows.take(pc.sort_indices(rows, [(k, "ascending") for k in key]))


def from_text(values: pa.Array, kind: pa.DataType) -> pa.Array:
    """The inverse of :func:`to_text` (a time of day read as that time on 1970-01-01: Arrow
    casts no text to a time)."""
    if pa.types.is_nested(kind):
        return pa.array([None if v is None else json.loads(v) for v in values.to_pylist()], kind)
    if pa.types.is_time(kind):
        stamps = pc.binary_join_element_wise("1970-01-01 ", values.cast(pa.string()), "")
        micros = stamps.cast(pa.timestamp("us")).cast(pa.int64())
        return micros.cast(pa.time64("us")).cast(kind)
    return values.cast(kind)


class Table:
    """A binding as a table of a dialect: its columns' SQL types, and its key."""

    def __init__(self, binding: Binding, native: dict[str, Column]) -> None:
        columns = binding.columns
        if len(columns) != len(binding.types) or len(set(columns)) != len(columns):
            raise InvalidInput(
                f"binding {binding.resource!r}: columns {list(columns)} do not match "
                f"types {list(binding.types)} one to one"
            )
        if missing := [k for k in binding.key if k not in columns]:
            raise InvalidInput(f"binding {binding.resource!r}: key columns {missing} missing")
        if not binding.key and not binding.delta_updates:
            raise InvalidInput(f"binding {binding.resource!r} needs a key (or delta updates)")
        self.binding = binding
        self.name = binding.resource
        self.columns = columns
        self.arrow = arrow_schema(binding)
        self.sql = tuple(column_type(t, native) for t in self.arrow.types)
        self.types = tuple(c.ddl for c in self.sql)
        self.delta = binding.delta_updates
        self.key = () if self.delta else binding.key  # the primary key
        self.values = tuple(c for c in columns if c not in binding.key)

    def schema(self) -> Schema:
        return Schema(
            dict(zip(self.columns, (c.reported for c in self.sql), strict=True)), self.key
        )

    def rows_of(self, columns: list[list[Any]], names: Iterable[str]) -> pa.Table:
        """Fetched columns (Python values) as an Arrow table of their binding types."""
        arrays = []
        for name, values in zip(names, columns, strict=True):
            at = self.columns.index(name)
            kind, column = self.arrow.types[at], self.sql[at]
            if column.text:
                arrays.append(from_text(pa.array(values, pa.string()), kind))
            elif pa.types.is_boolean(kind):  # SQLite's 0 and 1
                arrays.append(pa.array([None if v is None else bool(v) for v in values], kind))
            elif pa.types.is_floating(kind):
                arrays.append(pa.array(values, pa.float64()).cast(kind))
            else:
                arrays.append(pa.array(values, kind))
        return pa.Table.from_arrays(arrays, names=list(names))


@dataclass(frozen=True)
class Schema:
    """The columns (name -> lower-case SQL type) and primary key of a table."""

    columns: dict[str, str]
    key: tuple[str, ...]

    def differences(self, other: Schema) -> list[str]:
        """How ``other`` (the existing table) differs from this schema, in words."""
        diffs = [f"no column {c!r}" for c in self.columns if c not in other.columns]
        diffs += [f"an extra column {c!r}" for c in other.columns if c not in self.columns]
        diffs += [
            f"column {c!r} is {other.columns[c]}, not {t}"
            for c, t in self.columns.items()
            if c in other.columns and other.columns[c] != t
        ]
        if self.key != other.key:
            diffs.append(f"the primary key is {_key(other.key)}, not {_key(self.key)}")
        return diffs


def _key(names: tuple[str, ...]) -> str:
    return f"({', '.join(names)})" if names else "none"


@dataclass
class Writes:
    """One binding's writes of a transaction, set apart by statement (Arrow tables)."""

    deletes: list[pa.Table] = field(default_factory=list)  # the key columns
    inserts: list[pa.Table] = field(default_factory=list)  # keys not stored (or appends)
    upserts: list[pa.Table] = field(default_factory=list)  # stored or not known

    def __bool__(self) -> bool:
        return bool(self.deletes or self.inserts or self.upserts)


class SqlDriver(Driver):
    """Tables in a SQL database, with the runtime checkpoint and a fence in the same database.

    Stores are staged in memory as Arrow tables, set apart into deletes, inserts (keys the
    runtime loaded and did not find) and upserts, and written by :meth:`_commit` in one
    transaction. A delta-updates binding is a table without a primary key that each stored row
    is appended to; the runtime sends it every change as a row with ``_time`` and ``_diff`` (a
    change table).
    """

    authoritative = True
    delta_changes = True
    upserts = True
    #: the database's own errors: data that does not fit, and everything else
    invalid_errors: tuple[type[Exception], ...] = ()
    database_errors: tuple[type[Exception], ...] = ()

    #: the dialect's own column types, by the start of the Arrow type's name
    native: dict[str, Column] = {}

    def __init__(self, url: str) -> None:
        self.url = url
        self.tables: list[Table] = []
        self.split: tuple[str, int, int] = ("", 0, 0)  # materialization, key_begin, key_end
        self.fence = 0
        self._writes: list[Writes] = []

    # -- the protocol ----------------------------------------------------------------------------

    def open(self, request: Open) -> dict[str, Any] | None:
        self.split = (request.materialization, request.key_begin, request.key_end)
        self.tables = [Table(b, self.native) for b in request.bindings]
        names = [t.name for t in self.tables]
        if repeated := sorted({n for n in names if names.count(n) > 1}):
            raise InvalidInput(f"{self._where()}: bindings share the tables {repeated}")
        self._writes = [Writes() for _ in self.tables]
        with self._errors("open"):
            self._connect()
            for index, table in enumerate(self.tables):
                self._create(table)
                found = self._schema(table.name)
                if found is None:
                    raise ChangeflowError(f"{self._where()}: table {table.name!r} was not created")
                if diffs := table.schema().differences(found):
                    raise InvalidInput(
                        f"{self._where()}: table {table.name!r} exists with other columns: "
                        f"{'; '.join(diffs)}. Drop it, or materialize into another table"
                    )
                self._prepare(index, table)
            held = [KeyRange(b, e) for b, e in self._checkpointed()]
            check_overlap(request.materialization, held, [KeyRange(*self.split[1:])])
            self.fence, checkpoint = self._bump_fence()
        return None if checkpoint is None else json.loads(checkpoint)

    def load_batch(self, binding: int, keys: pa.Table) -> pa.Table:
        table = self._table(binding)
        if table.delta or not keys.num_rows:
            return table.arrow.empty_table()
        keys = keys.select(list(table.binding.key)).cast(key_schema(table.binding))
        keys = in_key_order(keys, table.binding.key)
        with self._errors(f"load from {table.name!r}"):
            return self._fetch(binding, table, keys)

    def store_batch(self, binding: int, rows: pa.Table) -> None:
        table, writes = self._table(binding), self._writes[binding]
        rows = rows.cast(store_schema(table.binding))
        if table.delta:
            kept = rows.filter(pc.invert(rows[DELETED]))
            writes.inserts.append(kept.select(list(table.columns)))
            return
        deleted, exists = rows[DELETED], rows[EXISTS]
        for kind, where in (
            (writes.deletes, deleted),
            (writes.inserts, pc.and_not(pc.equal(exists, False), deleted)),
            (writes.upserts, pc.and_not(pc.fill_null(exists, True), deleted)),
        ):
            picked = rows.filter(where)
            if picked.num_rows:
                names = table.binding.key if kind is writes.deletes else table.columns
                kind.append(in_key_order(picked.select(list(names)), table.key))

    def start_commit(self, runtime_checkpoint: dict[str, Any]) -> None:
        writes, self._writes = self._writes, [Writes() for _ in self.tables]
        with self._errors("commit"):
            self._commit(json.dumps(runtime_checkpoint, separators=(",", ":")), writes)
        return None

    # -- for the dialects --------------------------------------------------------------------------

    def fenced_off(self, current: int | None) -> FencedOff:
        """The error of a commit whose fence is no longer the stored one."""
        name, begin, end = self.split
        newer = "its checkpoint row is gone" if current is None else f"(fence {current})"
        return FencedOff(
            f"a newer instance of materialization {name!r} (keys {begin}..{end}) opened it "
            f"{newer}; this one (fence {self.fence}) stops"
        )

    def second_row(self, key: str) -> InvalidInput:
        """The error of an insert of a key the table holds already: the collection has two
        rows of it (``key`` shown as ``(name=value, …)``)."""
        return InvalidInput(
            f"{self._where()}: commit: key {key} has 2 rows: the target holds one of an earlier "
            "transaction; a materialization keeps one row per key: choose a key that is "
            "unique, or reduce with --reduce"
        )

    def _table(self, binding: int) -> Table:
        if not 0 <= binding < len(self.tables):
            raise ProtocolViolation(
                f"{self._where()}: binding {binding} does not exist ({len(self.tables)} opened)"
            )
        return self.tables[binding]

    def _where(self) -> str:
        return f"materialization {self.split[0]!r}"

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """The database's errors as changeflow errors that name the materialization."""
        try:
            yield
        except ChangeflowError:
            raise
        except self.invalid_errors as e:
            raise InvalidInput(f"{self._where()}: {doing}: {e}") from e
        except self.database_errors as e:
            raise ChangeflowError(f"{self._where()}: {doing}: {e}") from e

    @abstractmethod
    def _connect(self) -> None:
        """Connect, and create the checkpoints table if it is missing."""

    @abstractmethod
    def _create(self, table: Table) -> None:
        """Create the table if it is missing."""

    @abstractmethod
    def _schema(self, name: str) -> Schema | None:
        """The existing table's columns and primary key; None if there is no such table."""

    def _prepare(self, index: int, table: Table) -> None:  # noqa: B027 - optional
        """Prepare the session for a table (temporary tables, for example)."""

    @abstractmethod
    def _bump_fence(self) -> tuple[int, str | None]:
        """Increment this split's fence (1 for a new split) and commit; return the new fence
        and the stored checkpoint (JSON text)."""

    @abstractmethod
    def _checkpointed(self) -> list[tuple[int, int]]:
        """The key ranges of this materialization with a stored checkpoint."""

    @abstractmethod
    def _fetch(self, index: int, table: Table, keys: pa.Table) -> pa.Table:
        """The stored rows of ``keys``, every column, as a table of the binding's types."""

    @abstractmethod
    def _commit(self, checkpoint: str, writes: list[Writes]) -> None:
        """In one transaction: update the checkpoint where the fence is still mine (else roll
        back and raise :meth:`fenced_off`), apply ``writes`` (deletes, then inserts, which fail
        on a stored key, then upserts), commit."""
