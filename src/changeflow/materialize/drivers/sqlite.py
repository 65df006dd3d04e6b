"""The SQLite driver (``sqlite:PATH``): tables in one SQLite file, in WAL mode with full sync.

Loads fill a temporary table of keys and join it with the target; a commit is one
``BEGIN IMMEDIATE`` transaction of the checkpoint update and an ``executemany`` per kind of
write (delete, insert, upsert) over the rows' column lists, in key order (so the B-tree is
walked once, not at random). Every commit syncs (WAL, ``synchronous=FULL``); a 64 MiB page
cache and a checkpoint every 10,000 WAL pages keep the writes off the disk in between.
Dates, timestamps, times of day and decimals are ISO text (SQLite has no such types; a decimal
as text keeps its digits), cast back to their Arrow types on load.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from changeflow.materialize.drivers.sql import (
    CHECKPOINTS,
    Column,
    Schema,
    SqlDriver,
    Table,
    Writes,
    to_text,
)

_SPLIT = "materialization = ? AND key_begin = ? AND key_end = ?"
CACHE_KIB = 64 * 1024  # the page cache of the driver's connection, at most
CHECKPOINT_PAGES = 10_000  # WAL pages between automatic checkpoints (SQLite's default: 1000)


def _q(name: str) -> str:
    """A quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


def _list(names: Iterable[str], prefix: str = "") -> str:
    return ", ".join(prefix + _q(n) for n in names)


def _equal(names: Iterable[str], left: str = "", right: str | None = None) -> str:
    """``a = ? AND b = ?``; with ``right``: ``t.a = k.a AND …``."""
    return " AND ".join(f"{left}{_q(n)} = {'?' if right is None else right + _q(n)}" for n in names)


class SqliteDriver(SqlDriver):
    """Tables and checkpoints in the SQLite file of ``sqlite:PATH``."""

    invalid_errors = (sqlite3.IntegrityError, sqlite3.DataError)
    database_errors = (sqlite3.Error,)
    native = {
        "date": Column("DATE", "date", text=True),
        "timestamp": Column("TIMESTAMP", "timestamp", text=True),
        "time64": Column("TIME", "time", text=True),
        "decimal": Column("TEXT", "text", text=True),
    }

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.path = Path(url.removeprefix("sqlite:"))
        self.db: sqlite3.Connection | None = None

    def _connect(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self.db = db
        for attempt in range(100):  # switching a new file to WAL does not wait for other openers
            try:
                db.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or attempt == 99:
                    raise
                time.sleep(0.05)
        db.execute("PRAGMA synchronous=FULL")
        # durability as before (every commit syncs the WAL); the page cache holds a table of
        # a few hundred thousand rows, and the WAL is copied back into the file every 40 MB of
        # pages rather than every 4 MB, so a commit rarely waits for a checkpoint's sync
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {CHECKPOINTS} (materialization TEXT NOT NULL, "
            "key_begin BIGINT NOT NULL, key_end BIGINT NOT NULL, fence BIGINT NOT NULL, "
            "checkpoint TEXT, PRIMARY KEY (materialization, key_begin, key_end))"
        )

    def _create(self, table: Table) -> None:
        columns = [
            f"{_q(c)} {t}{' NOT NULL' if c in table.key else ''}"
            for c, t in zip(table.columns, table.types, strict=True)
        ]
        if table.key:
            columns.append(f"PRIMARY KEY ({_list(table.key)})")
        clustered = " WITHOUT ROWID" if table.key else ""  # rows stored in key order
        self._db.execute(
            f"CREATE TABLE IF NOT EXISTS main.{_q(table.name)} ({', '.join(columns)}){clustered}"
        )

    def _schema(self, name: str) -> Schema | None:
        rows = self._db.execute(
            "SELECT name, type, pk FROM pragma_table_info(?, 'main')", (name,)
        ).fetchall()
        if not rows:
            return None
        key = tuple(n for n, _, pk in sorted(rows, key=lambda r: r[2]) if pk)
        return Schema({n: t.lower() for n, t, _ in rows}, key)

    def _prepare(self, index: int, table: Table) -> None:
        if table.delta:
            return  # nothing to load
        at = [table.columns.index(k) for k in table.binding.key]
        keys = zip(table.binding.key, (table.types[i] for i in at), strict=True)
        self._db.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS changeflow_load_{index} "
            f"({', '.join(f'{_q(c)} {t}' for c, t in keys)})"
        )

    def _bump_fence(self) -> tuple[int, str | None]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            ((fence, checkpoint),) = db.execute(
                f"INSERT INTO {CHECKPOINTS} (materialization, key_begin, key_end, fence) "
                "VALUES (?, ?, ?, 1) ON CONFLICT (materialization, key_begin, key_end) "
                "DO UPDATE SET fence = fence + 1 RETURNING fence, checkpoint",
                self.split,
            ).fetchall()
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return fence, checkpoint

    def _checkpointed(self) -> list[tuple[int, int]]:
        return self._db.execute(
            f"SELECT key_begin, key_end FROM {CHECKPOINTS} "
            "WHERE materialization = ? AND checkpoint IS NOT NULL",
            self.split[:1],
        ).fetchall()

    def _fetch(self, index: int, table: Table, keys: pa.Table) -> pa.Table:
        db, temp, key = self._db, f"temp.changeflow_load_{index}", table.binding.key
        db.execute("BEGIN")
        try:
            db.execute(f"DELETE FROM {temp}")
            db.executemany(
                f"INSERT INTO {temp} VALUES ({', '.join('?' * len(key))})", _rows(table, keys)
            )
            # CROSS JOIN keeps the keys as the outer loop: one primary-key search per key
            rows = db.execute(
                f"SELECT {_list(table.columns, 't.')} FROM {temp} AS k "
                f"CROSS JOIN main.{_q(table.name)} AS t WHERE {_equal(key, 't.', 'k.')}"
            ).fetchall()
        finally:
            db.execute("ROLLBACK")
        columns = [list(c) for c in zip(*rows, strict=True)] or [[] for _ in table.columns]
        return table.rows_of(columns, table.columns)

    def _commit(self, checkpoint: str, writes: list[Writes]) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            updated = db.execute(
                f"UPDATE {CHECKPOINTS} SET checkpoint = ? WHERE {_SPLIT} AND fence = ?",
                (checkpoint, *self.split, self.fence),
            ).rowcount
            if updated != 1:
                row = db.execute(
                    f"SELECT fence FROM {CHECKPOINTS} WHERE {_SPLIT}", self.split
                ).fetchone()
                raise self.fenced_off(row[0] if row else None)
            for table, w in zip(self.tables, writes, strict=True):
                self._apply(table, w)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _apply(self, table: Table, writes: Writes) -> None:
        db, name, key = self._db, f"main.{_q(table.name)}", table.binding.key
        columns = _list(table.columns)
        marks = ", ".join("?" * len(table.columns))
        for rows in writes.deletes:
            db.executemany(f"DELETE FROM {name} WHERE {_equal(key)}", _rows(table, rows))
        for rows in writes.inserts:
            values, before = _rows(table, rows), db.total_changes
            try:
                db.executemany(f"INSERT INTO {name} ({columns}) VALUES ({marks})", values)
            except sqlite3.IntegrityError:
                if table.delta or not table.key:
                    raise
                row = values[db.total_changes - before]  # the first row not inserted
                names = rows.column_names
                shown = ", ".join(f"{k}={row[names.index(k)]!r}" for k in table.key)
                raise self.second_row(f"({shown})") from None
        if table.values:
            assign = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c in table.values)
            conflict = f"DO UPDATE SET {assign}"
        else:
            conflict = "DO NOTHING"
        for rows in writes.upserts:
            db.executemany(
                f"INSERT INTO {name} ({columns}) VALUES ({marks}) "
                f"ON CONFLICT ({_list(key)}) {conflict}",
                _rows(table, rows),
            )

    @property
    def _db(self) -> sqlite3.Connection:
        assert self.db is not None, "the driver is not open"
        return self.db

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _rows(table: Table, rows: pa.Table) -> list[tuple]:
    """The rows of ``rows`` as tuples of SQLite values: each column converted as a whole (text
    where SQLite lacks the type), then zipped."""
    columns = []
    for name in rows.column_names:
        column = table.sql[table.columns.index(name)]
        values = rows[name]
        columns.append((to_text(values) if column.text else values).to_pylist())
    return list(zip(*columns, strict=True))
