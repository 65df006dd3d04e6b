"""The base of the SQL drivers (SQLite, PostgreSQL): the remote store is authoritative.

Each binding is a table. ``changeflow_checkpoints`` holds, per task split (materialization and
key range), the runtime checkpoint and a fence. Open increments the fence in a transaction of
its own; each commit writes the staged stores and the checkpoint in one transaction, and only
while the fence is still this instance's: an older instance (a zombie) can no longer commit.
A dialect supplies the connection, the DDL, and the bulk paths of load and commit.
"""

from __future__ import annotations

import json
import struct
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from changeflow.errors import ChangeflowError, FencedOff, InvalidInput, ProtocolViolation
from changeflow.materialize.driver import Driver
from changeflow.materialize.protocol import Binding, Doc, Key, Open, Store

CHECKPOINTS = "changeflow_checkpoints"

#: Arrow type -> SQL type; any other Arrow type is stored as JSON text
SQL_TYPES = {
    "int64": "BIGINT",
    "int32": "INTEGER",
    "string": "TEXT",
    "large_string": "TEXT",
    "double": "DOUBLE PRECISION",
    "float": "REAL",
    "bool": "BOOLEAN",
}

Row = tuple[Any, ...]  # a binding's encoded values, in column order


class Table:
    """A binding as a table: its SQL types, and how a document becomes a row and back."""

    def __init__(self, binding: Binding) -> None:
        columns, types = binding.columns, binding.types
        if len(columns) != len(types) or len(set(columns)) != len(columns):
            raise InvalidInput(
                f"binding {binding.resource!r}: columns {list(columns)} do not match "
                f"types {list(types)} one to one"
            )
        if missing := [k for k in binding.key if k not in columns]:
            raise InvalidInput(f"binding {binding.resource!r}: key columns {missing} missing")
        if not binding.key and not binding.delta_updates:
            raise InvalidInput(f"binding {binding.resource!r} needs a key (or delta updates)")
        self.binding = binding
        self.name = binding.resource
        self.columns = columns
        self.types = tuple(SQL_TYPES.get(t, "TEXT") for t in types)
        self.delta = binding.delta_updates
        self.key = () if self.delta else binding.key  # the primary key
        self.key_at = tuple(columns.index(k) for k in binding.key)
        self.values = tuple(c for c in columns if c not in binding.key)
        # per column: how a value is written (JSON text) and read back as the value written
        self._encode = tuple(None if t in SQL_TYPES else _json for t in types)
        self._decode = tuple(_DECODE.get(t, None if t in SQL_TYPES else json.loads) for t in types)
        # the common case converts nothing: rows and documents pass through as they are
        self._plain_encode = all(f is None for f in self._encode)
        self._plain_decode = all(f is None for f in self._decode)
        self._plain_key = all(self._encode[at] is None for at in self.key_at)
        self._one_key = self.key_at[0] if len(self.key_at) == 1 else None

    def schema(self) -> Schema:
        return Schema(
            dict(zip(self.columns, (t.lower() for t in self.types), strict=True)), self.key
        )

    def row(self, key: Key, doc: Doc | None) -> Row:
        """The encoded row of a document; ``key`` wins over the document's key fields."""
        if len(key) != len(self.key_at):
            raise ProtocolViolation(
                f"binding {self.name!r}: key {list(key)} does not match {list(self.binding.key)}"
            )
        values = list(map(doc.get, self.columns)) if doc else [None] * len(self.columns)
        one = self._one_key
        if one is not None:
            values[one] = key[0]
        else:
            for at, value in zip(self.key_at, key, strict=True):
                values[at] = value
        if self._plain_encode:
            return tuple(values)
        return _convert(values, self._encode)

    def keys(self, keys: list[Key]) -> list[Row]:
        """The encoded keys (as :meth:`key_of` the rows of these keys)."""
        if not self._plain_key:
            return [self.key_of(self.row(key, None)) for key in keys]
        width = len(self.key_at)
        for key in keys:
            if len(key) != width:
                self.row(key, None)  # raises the clear error
        return [tuple(key) for key in keys]

    def key_of(self, row: Row) -> Row:
        one = self._one_key
        if one is not None:
            return (row[one],)
        return tuple(row[at] for at in self.key_at)

    def document(self, row: Row) -> tuple[Key, Doc]:
        """The key and the document of a stored row."""
        values = row if self._plain_decode else _convert(row, self._decode)
        return self.key_of(values), dict(zip(self.columns, values, strict=True))

    def documents(self, rows: Iterable[Row]) -> list[tuple[Key, Doc]]:
        """:meth:`document` of each row."""
        if not self._plain_decode:
            return [self.document(row) for row in rows]
        columns, one = self.columns, self._one_key
        if one is not None:
            # a fetched row holds every column, in order
            return [((row[one],), dict(zip(columns, row))) for row in rows]  # noqa: B905
        key_of = self.key_of
        return [(key_of(row), dict(zip(columns, row))) for row in rows]  # noqa: B905


def _convert(values: Iterable[Any], how: tuple[Callable[[Any], Any] | None, ...]) -> Row:
    return tuple(v if f is None or v is None else f(v) for v, f in zip(values, how, strict=True))


def _float32(value: float) -> float:
    """The float32 nearest ``value``: PostgreSQL prints a REAL in its shortest form (0.3),
    which reads back as another double than the float32 stored (0.30000001192092896)."""
    return struct.unpack("f", struct.pack("f", value))[0]


_DECODE: dict[str, Callable[[Any], Any]] = {"bool": bool, "float": _float32}  # bool: SQLite's 0/1


def _json(value: Any) -> str:
    """JSON text; sorted keys, so equal values give equal keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


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
    """One binding's writes of a transaction, set apart by statement."""

    inserts: list[Row] = field(default_factory=list)
    updates: list[Row] = field(default_factory=list)
    deletes: list[Row] = field(default_factory=list)  # rows with only the key filled in

    def __bool__(self) -> bool:
        return bool(self.inserts or self.updates or self.deletes)


class SqlDriver(Driver):
    """Tables in a SQL database, with the runtime checkpoint and a fence in the same database.

    Stores are staged in memory, one entry per key (a repeated key keeps its first ``exists``
    and its last document), and written by :meth:`_commit` in one transaction. A delta-updates
    binding is a table without a primary key that each stored document is appended to; the
    runtime sends it every change as a document with ``_time`` and ``_diff`` (a change table).
    """

    authoritative = True
    delta_changes = True
    #: the database's own errors: data that does not fit, and everything else
    invalid_errors: tuple[type[Exception], ...] = ()
    database_errors: tuple[type[Exception], ...] = ()

    def __init__(self, url: str) -> None:
        self.url = url
        self.tables: list[Table] = []
        self.split: tuple[str, int, int] = ("", 0, 0)  # materialization, key_begin, key_end
        self.fence = 0
        self._staged: list[dict[Row, tuple[bool, bool, Row]]] = []  # key -> exists, delete, row
        self._appends: list[list[Row]] = []

    # -- the protocol ----------------------------------------------------------------------------

    def open(self, request: Open) -> dict[str, Any] | None:
        self.split = (request.materialization, request.key_begin, request.key_end)
        self.tables = [Table(b) for b in request.bindings]
        names = [t.name for t in self.tables]
        if repeated := sorted({n for n in names if names.count(n) > 1}):
            raise InvalidInput(f"{self._where()}: bindings share the tables {repeated}")
        self._staged = [{} for _ in self.tables]
        self._appends = [[] for _ in self.tables]
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
            self.fence, checkpoint = self._bump_fence()
        return None if checkpoint is None else json.loads(checkpoint)

    def load(self, binding: int, keys: list[Key]) -> Iterable[tuple[Key, Doc]]:
        table = self._table(binding)
        if table.delta or not keys:
            return []
        encoded = table.keys(keys)
        with self._errors(f"load from {table.name!r}"):
            rows = self._fetch(binding, table, encoded)
        return table.documents(rows)

    def store(self, request: Store) -> None:
        binding = request.binding
        tables = self.tables
        table = tables[binding] if 0 <= binding < len(tables) else self._table(binding)
        one, key = table._one_key, request.key
        if one is not None and table._plain_encode and not table.delta and len(key) == 1:
            # the common case: one key column, no value to encode
            doc = None if request.delete else request.doc
            if doc:
                values = list(map(doc.get, table.columns))
                values[one] = key[0]
                row = tuple(values)
            else:
                row = (None,) * len(table.columns)
                row = (*row[:one], key[0], *row[one + 1 :])
            staged = self._staged[binding]
            encoded = (key[0],)
            previous = staged.get(encoded)
            exists = request.exists if previous is None else previous[0]
            staged[encoded] = (exists, request.delete, row)
            return
        if table.delta:
            if not request.delete:
                self._appends[request.binding].append(table.row(request.key, request.doc))
            return
        row = table.row(request.key, None if request.delete else request.doc)
        staged = self._staged[request.binding]
        key = table.key_of(row)
        exists = staged[key][0] if key in staged else request.exists
        staged[key] = (exists, request.delete, row)

    def start_commit(self, runtime_checkpoint: dict[str, Any]) -> None:
        writes = [self._writes(index) for index in range(len(self.tables))]
        with self._errors("commit"):
            self._commit(json.dumps(runtime_checkpoint, separators=(",", ":")), writes)
        for staged, appends in zip(self._staged, self._appends, strict=True):
            staged.clear()
            appends.clear()
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

    def _writes(self, index: int) -> Writes:
        writes = Writes(inserts=list(self._appends[index]))
        for exists, delete, row in self._staged[index].values():
            if delete:
                writes.deletes.append(row)
            elif exists:
                writes.updates.append(row)
            else:
                writes.inserts.append(row)
        return writes

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
    def _fetch(self, index: int, table: Table, keys: list[Row]) -> Iterable[Row]:
        """The stored rows of ``keys`` (encoded, in key order), all columns in order."""

    @abstractmethod
    def _commit(self, checkpoint: str, writes: list[Writes]) -> None:
        """In one transaction: update the checkpoint where the fence is still mine (else roll
        back and raise :meth:`fenced_off`), apply ``writes``, commit."""
