"""The materialize benchmark's targets: SQLite and PostgreSQL, each with the naive loop and
the database's own share (the same batches written as the driver writes them, without the
runtime), and the throwaway PostgreSQL server."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from cpu import server_of, tree_cpu

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCHEMA = pa.schema([("key", pa.int64()), ("value", pa.string()), ("amount", pa.int64())])
_START = time.perf_counter()

Row = tuple[int, str, int]


def say(text: str) -> None:
    print(f"[{time.perf_counter() - _START:7.1f} s] {text}", file=sys.stderr, flush=True)


class Target:
    """One database: its URL for the driver, and the naive loop's connection to it."""

    name = ""

    def url(self, table: str) -> str:
        raise NotImplementedError

    def naive(self, table: str, rows: list[list[Row]]) -> float:
        """Write each batch by ``executemany`` of an upsert and a commit; seconds."""
        raise NotImplementedError

    def bulk(self, table: str, rows: list[list[Row]]) -> dict[str, float]:
        """The database's own share: the same batches in key order, prepared in advance
        (untimed), written the way the driver writes them, with no runtime. Seconds in all,
        and in each step (``write``: the rows sent, ``upsert``: the set-based upsert,
        ``commit``)."""
        raise NotImplementedError

    def read(self, table: str) -> list[Row]:
        raise NotImplementedError

    def settle(self, table: str) -> None:
        """Untimed, after a run: clean up what it left (PostgreSQL: its dead rows), so the
        server's background work does not run into the next run's time."""

    def server_cpu(self) -> float:
        """CPU seconds of the database server so far (0: the database runs in this process)."""
        return 0.0


def _sqlite_table(db: sqlite3.Connection, table: str) -> str:
    """Create ``table`` (the benchmark's schema) and return its upsert statement."""
    db.execute(
        f"CREATE TABLE {table} (key BIGINT NOT NULL PRIMARY KEY, value TEXT, amount BIGINT)"
        " WITHOUT ROWID"
    )
    return (
        f"INSERT INTO {table} VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
        "value = excluded.value, amount = excluded.amount"
    )


class SqliteTarget(Target):
    name = "SQLite"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def url(self, table: str) -> str:
        return f"sqlite:{self.folder / table}.sqlite"

    def naive(self, table: str, rows: list[list[Row]]) -> float:
        db = sqlite3.connect(self.folder / f"{table}.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        upsert = _sqlite_table(db, table)
        start = time.perf_counter()
        for batch in rows:
            db.execute("BEGIN")
            db.executemany(upsert, batch)
            db.execute("COMMIT")
        seconds = time.perf_counter() - start
        db.close()
        return seconds

    def bulk(self, table: str, rows: list[list[Row]]) -> dict[str, float]:
        """``executemany`` of the upsert over each batch in key order, with the driver's
        settings (WAL, ``synchronous=FULL``, its page cache and checkpoint interval)."""
        from changeflow.materialize.drivers.sqlite import CACHE_KIB, CHECKPOINT_PAGES

        db = sqlite3.connect(self.folder / f"{table}.sqlite", isolation_level=None)
        for pragma in (
            "journal_mode=WAL",
            "synchronous=FULL",
            f"cache_size=-{CACHE_KIB}",
            f"wal_autocheckpoint={CHECKPOINT_PAGES}",
        ):
            db.execute(f"PRAGMA {pragma}")
        upsert = _sqlite_table(db, table)
        ordered = [sorted(batch) for batch in rows]
        steps = {"upsert": 0.0, "commit": 0.0}
        start = time.perf_counter()
        for batch in ordered:
            t0 = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.executemany(upsert, batch)
            t1 = time.perf_counter()
            db.execute("COMMIT")
            steps["upsert"] += t1 - t0
            steps["commit"] += time.perf_counter() - t1
        seconds = time.perf_counter() - start
        db.close()
        return {"s": seconds, **steps}

    def read(self, table: str) -> list[Row]:
        with contextlib.closing(sqlite3.connect(self.folder / f"{table}.sqlite")) as db:
            return db.execute(f"SELECT key, value, amount FROM {table} ORDER BY key").fetchall()


class PostgresTarget(Target):
    name = "PostgreSQL"

    def __init__(self, url: str) -> None:
        import psycopg

        self.database = url
        with psycopg.connect(url) as conn:
            self.server = server_of(conn)

    def url(self, table: str) -> str:
        return self.database

    def server_cpu(self) -> float:
        return tree_cpu(self.server)

    def naive(self, table: str, rows: list[list[Row]]) -> float:
        import psycopg

        with psycopg.connect(self.database) as conn:
            conn.execute(
                f"CREATE TABLE {table} (key BIGINT NOT NULL PRIMARY KEY, value TEXT, amount BIGINT)"
            )
            conn.commit()
            upsert = (
                f"INSERT INTO {table} VALUES (%s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
                "value = excluded.value, amount = excluded.amount"
            )
            start = time.perf_counter()
            for batch in rows:
                with conn.cursor() as cur:
                    cur.executemany(upsert, batch)
                conn.commit()
            return time.perf_counter() - start

    def bulk(self, table: str, rows: list[list[Row]]) -> dict[str, float]:
        """Binary COPY of each batch (in key order) into a temporary table, then one
        ``INSERT … SELECT … ON CONFLICT DO UPDATE`` and the commit, into a table created as
        the driver creates it."""
        import psycopg

        from changeflow.materialize.drivers.pgcopy import copy_data
        from changeflow.materialize.drivers.postgres import FILLFACTOR

        columns = [list(zip(*sorted(batch), strict=True)) for batch in rows]
        payloads = [
            copy_data(pa.table(dict(zip(SCHEMA.names, c, strict=True)), SCHEMA)) for c in columns
        ]
        with psycopg.connect(self.database) as conn:
            conn.execute(
                f"CREATE TABLE {table} (key BIGINT NOT NULL PRIMARY KEY, value TEXT, amount BIGINT)"
                f" WITH (fillfactor = {FILLFACTOR})"
            )
            conn.execute(
                "CREATE TEMP TABLE staged (key BIGINT, value TEXT, amount BIGINT) "
                "ON COMMIT DELETE ROWS"
            )
            conn.commit()
            upsert = (
                f"INSERT INTO {table} SELECT * FROM staged ON CONFLICT (key) DO UPDATE SET "
                "value = excluded.value, amount = excluded.amount"
            )
            steps = {"write": 0.0, "upsert": 0.0, "commit": 0.0}
            server, start = self.server_cpu(), time.perf_counter()
            for payload in payloads:
                t0 = time.perf_counter()
                with conn.cursor() as cur:
                    with cur.copy("COPY staged FROM STDIN (FORMAT BINARY)") as copy:
                        copy.write(payload)
                    t1 = time.perf_counter()
                    cur.execute(upsert)
                t2 = time.perf_counter()
                conn.commit()
                steps["write"] += t1 - t0
                steps["upsert"] += t2 - t1
                steps["commit"] += time.perf_counter() - t2
            seconds = time.perf_counter() - start
            return {"s": seconds, **steps, "server_cpu_s": self.server_cpu() - server}

    def read(self, table: str) -> list[Row]:
        import psycopg

        with psycopg.connect(self.database) as conn:
            return conn.execute(f"SELECT key, value, amount FROM {table} ORDER BY key").fetchall()

    def settle(self, table: str) -> None:
        import psycopg

        with psycopg.connect(self.database, autocommit=True) as conn:
            conn.execute(f"VACUUM {table}")
            conn.execute("CHECKPOINT")


@contextlib.contextmanager
def postgres() -> Iterator[PostgresTarget | None]:
    """A database on a throwaway PostgreSQL server; None if no server can be started."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from postgres_server import create_database, throwaway_postgres

        with throwaway_postgres() as url:
            yield PostgresTarget(create_database(url, "bench_materialize"))
    except (ImportError, RuntimeError) as e:
        say(f"PostgreSQL skipped: {e}")
        yield None
