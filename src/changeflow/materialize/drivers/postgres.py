"""The PostgreSQL driver (``postgresql://…``): psycopg 3, identifiers quoted by ``psycopg.sql``.

A Flush's loads COPY the keys into a temporary table and join it with the target: a handful of
round trips per Flush, none per key. A commit COPYs the staged rows into a temporary staging
table for each kind of write (deletes their keys alone; no column tells the kinds apart, and no
statement filters on one) and applies them set-based (DELETE … USING, INSERT … SELECT, INSERT …
SELECT … ON CONFLICT DO UPDATE) in the transaction that updates the checkpoint where the fence
is still this instance's. Both COPYs are binary, and their payload is built from the Arrow
columns by :mod:`~changeflow.materialize.drivers.pgcopy` without a Python step per row. A keyed
table the driver creates leaves 30% of each page free (fillfactor 70), so an upsert can rewrite
a row on its own page without a new index entry (a HOT update).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import psycopg
import pyarrow as pa
from psycopg import sql

from changeflow.errors import InvalidInput
from changeflow.materialize.drivers.pgcopy import copy_data, stage_type
from changeflow.materialize.drivers.sql import CHECKPOINTS, Column, Schema, SqlDriver, Table, Writes
from changeflow.storage.consensus import CREATE_LOCK

_SPLIT = "materialization = %s AND key_begin = %s AND key_end = %s"
FILLFACTOR = 70  # percent of a page that a keyed target table's inserts fill
STAGES = ("delete", "insert", "upsert")  # a staging table for each (deletes: the keys alone)

_COLUMNS = (
    "SELECT column_name, data_type FROM information_schema.columns "
    "WHERE table_schema = current_schema() AND table_name = %s"
)
_PRIMARY_KEY = (
    "SELECT k.column_name FROM information_schema.table_constraints c "
    "JOIN information_schema.key_column_usage k ON k.constraint_schema = c.constraint_schema "
    "AND k.constraint_name = c.constraint_name AND k.table_name = c.table_name "
    "WHERE c.table_schema = current_schema() AND c.table_name = %s "
    "AND c.constraint_type = 'PRIMARY KEY' ORDER BY k.ordinal_position"
)


def _names(names: Iterable[str], prefix: str | None = None) -> sql.Composable:
    """``a, b`` (or ``t.a, t.b``), quoted."""
    return sql.SQL(", ").join(
        sql.Identifier(n) if prefix is None else sql.Identifier(prefix, n) for n in names
    )


def _equal(names: Iterable[str]) -> sql.Composable:
    """``t.a = s.a AND t.b = s.b``."""
    return sql.SQL(" AND ").join(sql.SQL("t.{0} = s.{0}").format(sql.Identifier(n)) for n in names)


def _temp(kind: str, index: int) -> sql.Identifier:
    return sql.Identifier("pg_temp", f"changeflow_{kind}_{index}")


class PostgresDriver(SqlDriver):
    """Tables and checkpoints in the PostgreSQL database of the URL (its current schema)."""

    invalid_errors = (psycopg.DataError, psycopg.IntegrityError)
    database_errors = (psycopg.Error,)
    native = {
        "date32": Column("DATE", "date"),
        "timestamp[us, tz=": Column("TIMESTAMPTZ", "timestamp with time zone"),
        "timestamp[ms, tz=": Column("TIMESTAMPTZ", "timestamp with time zone"),
        "timestamp[s, tz=": Column("TIMESTAMPTZ", "timestamp with time zone"),
        "timestamp[ns, tz=": Column("TIMESTAMPTZ", "timestamp with time zone"),
        "timestamp": Column("TIMESTAMP", "timestamp without time zone"),
        "time64": Column("TIME", "time without time zone"),
        "decimal": Column("NUMERIC", "numeric"),
    }

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.conn: psycopg.Connection | None = None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[psycopg.Cursor]:
        """A cursor in a transaction that commits at the end, or rolls back on an error."""
        assert self.conn is not None, "the driver is not open"
        try:
            with self.conn.cursor() as cur:
                yield cur
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise

    @contextlib.contextmanager
    def _racing_create(self) -> Iterator[psycopg.Cursor]:
        """A transaction of CREATE … IF NOT EXISTS, waiting for any other create to finish."""
        with self._transaction() as cur:
            cur.execute(CREATE_LOCK)
            yield cur

    def _connect(self) -> None:
        self.conn = psycopg.connect(self.url, autocommit=False, connect_timeout=10)
        with self._racing_create() as cur:
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {CHECKPOINTS} (materialization text NOT NULL, "
                "key_begin bigint NOT NULL, key_end bigint NOT NULL, fence bigint NOT NULL, "
                "checkpoint text, PRIMARY KEY (materialization, key_begin, key_end))"
            )

    def _create(self, table: Table) -> None:
        if len(table.name.encode()) > 63:
            raise InvalidInput(
                f"{self._where()}: table name {table.name!r} is longer than PostgreSQL's "
                "63 bytes; choose a shorter one"
            )
        columns = [
            sql.SQL("{} {}{}").format(
                sql.Identifier(c), sql.SQL(t), sql.SQL(" NOT NULL" if c in table.key else "")
            )
            for c, t in zip(table.columns, table.types, strict=True)
        ]
        if table.key:
            columns.append(sql.SQL("PRIMARY KEY ({})").format(_names(table.key)))
        # a keyed table is updated in place: room on each page lets an update stay on its
        # page (a HOT update, no new index entry); a change table is only appended to
        room = sql.SQL(f" WITH (fillfactor = {FILLFACTOR})" if table.key else "")
        with self._racing_create() as cur:
            cur.execute(
                sql.SQL("CREATE TABLE IF NOT EXISTS {} ({}){}").format(
                    sql.Identifier(table.name), sql.SQL(", ").join(columns), room
                )
            )

    def _schema(self, name: str) -> Schema | None:
        with self._transaction() as cur:
            columns = dict(cur.execute(_COLUMNS, (name,)).fetchall())
            key = tuple(k for (k,) in cur.execute(_PRIMARY_KEY, (name,)))
        return Schema(columns, key) if columns else None

    def _prepare(self, index: int, table: Table) -> None:
        """Temporary tables of this session, emptied by each commit: keys to load, and rows
        to write (in the types the binary COPY carries)."""

        def columns(names: Iterable[str]) -> sql.Composable:
            return sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(_stage(table, c))) for c in names
            )

        create = "CREATE TEMP TABLE IF NOT EXISTS {} ({}) ON COMMIT DELETE ROWS"
        with self._transaction() as cur:
            keys = columns(table.binding.key)
            if not table.delta:
                cur.execute(sql.SQL(create).format(_temp("load", index), keys))
            for kind in STAGES:
                staged = keys if kind == "delete" else columns(table.columns)
                cur.execute(sql.SQL(create).format(_temp(kind, index), staged))

    def _bump_fence(self) -> tuple[int, str | None]:
        with self._transaction() as cur:
            cur.execute(
                f"INSERT INTO {CHECKPOINTS} (materialization, key_begin, key_end, fence) "
                "VALUES (%s, %s, %s, 1) ON CONFLICT (materialization, key_begin, key_end) "
                f"DO UPDATE SET fence = {CHECKPOINTS}.fence + 1 RETURNING fence, checkpoint",
                self.split,
            )
            fence, checkpoint = cur.fetchone() or (0, None)
        return fence, checkpoint

    def _checkpointed(self) -> list[tuple[int, int]]:
        with self._transaction() as cur:
            cur.execute(
                f"SELECT key_begin, key_end FROM {CHECKPOINTS} "
                "WHERE materialization = %s AND checkpoint IS NOT NULL",
                self.split[:1],
            )
            return cur.fetchall()

    def _fetch(self, index: int, table: Table, keys: pa.Table) -> pa.Table:
        temp, key = _temp("load", index), table.binding.key
        with self._transaction() as cur:
            _copy(cur, temp, key, copy_data(keys))
            cur.execute(
                sql.SQL("SELECT {} FROM {} AS k JOIN {} AS t USING ({})").format(
                    _names(table.columns, "t"), temp, sql.Identifier(table.name), _names(key)
                )
            )
            rows = cur.fetchall()
        columns = [list(c) for c in zip(*rows, strict=True)] or [[] for _ in table.columns]
        return table.rows_of(columns, table.columns)

    def _commit(self, checkpoint: str, writes: list[Writes]) -> None:
        with self._transaction() as cur:
            cur.execute(
                f"UPDATE {CHECKPOINTS} SET checkpoint = %s WHERE {_SPLIT} AND fence = %s",
                (checkpoint, *self.split, self.fence),
            )
            if cur.rowcount != 1:
                row = cur.execute(
                    f"SELECT fence FROM {CHECKPOINTS} WHERE {_SPLIT}", self.split
                ).fetchone()
                raise self.fenced_off(row[0] if row else None)
            for index, (table, w) in enumerate(zip(self.tables, writes, strict=True)):
                if w:
                    self._apply(cur, index, table, w)

    def _apply(self, cur: psycopg.Cursor, index: int, table: Table, writes: Writes) -> None:
        """COPY the rows into the staging table of their kind, then one statement per kind."""
        target, columns, key = sql.Identifier(table.name), table.columns, table.binding.key
        kinds = zip(STAGES, (writes.deletes, writes.inserts, writes.upserts), strict=True)
        for kind, tables in kinds:
            for rows in tables:
                _copy(cur, _temp(kind, index), rows.column_names, copy_data(rows))
        values = sql.SQL(", ").join(_value(table, c) for c in columns)
        if writes.deletes:
            cur.execute(
                sql.SQL("DELETE FROM {} AS t USING {} AS s WHERE {}").format(
                    target, _temp("delete", index), _equal(key)
                )
            )
        insert = sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} AS s")
        if writes.inserts:
            try:
                cur.execute(insert.format(target, _names(columns), values, _temp("insert", index)))
            except psycopg.errors.UniqueViolation as e:  # "Key (k)=(7) already exists."
                detail = (e.diag.message_detail or "").removeprefix("Key ")
                raise self.second_row(detail.removesuffix(" already exists.")) from None
        if writes.upserts:
            if table.values:
                assign = sql.SQL(", ").join(
                    sql.SQL("{0} = excluded.{0}").format(sql.Identifier(c)) for c in table.values
                )
                conflict = sql.SQL("DO UPDATE SET {}").format(assign)
            else:
                conflict = sql.SQL("DO NOTHING")
            cur.execute(
                sql.SQL("{} ON CONFLICT ({}) {}").format(
                    insert.format(target, _names(columns), values, _temp("upsert", index)),
                    _names(key),
                    conflict,
                )
            )

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _stage(table: Table, column: str) -> str:
    """The staging type of a column: what the binary COPY carries for it."""
    at = table.columns.index(column)
    return stage_type(table.arrow.types[at]) or table.types[at]


def _value(table: Table, column: str) -> sql.Composable:
    """A staged column as the target's type (cast where the COPY carries text)."""
    at = table.columns.index(column)
    if stage_type(table.arrow.types[at]) and not table.sql[at].text:
        return sql.SQL("s.{}::{}").format(sql.Identifier(column), sql.SQL(table.types[at]))
    return sql.SQL("s.{}").format(sql.Identifier(column))


def _copy(cur: psycopg.Cursor, into: sql.Identifier, names: Iterable[str], data: bytes) -> None:
    """A binary COPY of ``data`` into the columns ``names`` of ``into``."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(into, _names(names))
    with cur.copy(statement) as copy:
        copy.write(data)
