"""Shared pieces of the SQL planner tests: a resolver over fixed tables, random table
contents, DuckDB loaded with the same rows, and results made comparable."""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from hypothesis import strategies as st

from changeflow.adapter.relations import Finishing, Query, Relation
from changeflow.compute.evaluate import evaluate, sort_key
from changeflow.compute.plan import Get
from changeflow.compute.types import BOOL, DATE, INT4, INT8, TEXT, Column
from changeflow.errors import PlanError

TABLES = {
    "r": Get("r", (Column("k", INT4), Column("v", INT4), Column("s", TEXT))),
    "s": Get("s", (Column("k", INT4), Column("w", INT8))),
    "u": Get(
        "u",
        (Column("id", INT4, False), Column("b", BOOL), Column("d", DATE), Column("t", TEXT)),
    ),
}
DUCK_TYPES = {"r": "k INTEGER, v INTEGER, s VARCHAR", "s": "k INTEGER, w BIGINT"}
DEFAULTS = {"u": (None, "true", None, "'none'")}


class Resolver:
    """Tables by name, plus whatever ``extra`` relations a test adds (views, sources)."""

    def __init__(self, extra: dict[str, Relation] | None = None) -> None:
        self.extra = extra or {}
        self.asked: list[str] = []

    def relation(self, name: str) -> Relation:
        self.asked.append(name)
        if name in self.extra:
            return self.extra[name]
        if name not in TABLES:
            raise PlanError(f'relation "{name}" does not exist', sqlstate="42P01")
        return Relation(name, "table", TABLES[name], "EpochMilliseconds", DEFAULTS.get(name, ()))


def parse(sql: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(sql, read="postgres")


small_int = st.one_of(st.none(), st.integers(-2, 3))
small_text = st.one_of(st.none(), st.sampled_from(["a", "b", "B", "", "ab", "a%"]))
r_rows = st.lists(st.tuples(small_int, small_int, small_text), max_size=6)
s_rows = st.lists(st.tuples(small_int, small_int), max_size=5)


def version(rows: list[tuple]) -> dict[tuple, int]:
    return dict(Counter(rows))


_con = duckdb.connect()


def load(data: dict[str, list[tuple]]) -> duckdb.DuckDBPyConnection:
    for name, rows in data.items():
        _con.execute(f"CREATE OR REPLACE TABLE {name} ({DUCK_TYPES[name]})")
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            _con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
    return _con


def norm(v: Any) -> Any:
    if isinstance(v, Decimal | float):
        f = float(v)
        return f if math.isnan(f) else round(f, 6)
    if isinstance(v, datetime | date):
        return v.isoformat()
    return v


def duck(sql: str, data: dict[str, list[tuple]]) -> list[tuple]:
    return [tuple(norm(v) for v in row) for row in load(data).execute(sql).fetchall()]


def finish(query: Query, rows: dict[tuple, int]) -> list[tuple]:
    """The rows a client sees: sorted, offset, limited, hidden columns dropped."""
    f: Finishing = query.finishing
    listed = sorted(rows.items(), key=lambda rc: sort_key(rc[0], f.order_by))
    expanded = [row for row, c in listed for _ in range(c)]
    end = None if f.limit is None else f.offset + f.limit
    kept = expanded[f.offset : end]
    return [tuple(norm(v) for v in row[: f.width]) for row in kept]


def ours(query: Query, data: dict[str, list[tuple]], now: int = 0) -> list[tuple]:
    return finish(query, evaluate(query.plan, {n: version(r) for n, r in data.items()}, now))


@contextlib.contextmanager
def beside_postgres(home: Path, postgres_url: str, table: str, *setup: str) -> Iterator[tuple]:
    """An embedded connection and one to PostgreSQL 15, each having run the ``setup``
    statements that make ``table`` (dropped from PostgreSQL afterwards); both autocommit."""
    import psycopg

    import changeflow

    ours = changeflow.connect(home, host_seconds=0)
    ours.autocommit = True
    pg = psycopg.connect(postgres_url, autocommit=True)
    pg.execute(f"DROP TABLE IF EXISTS {table}")
    for c in (ours, pg):
        for sql in setup:
            c.execute(sql)
    try:
        yield ours, pg
    finally:
        pg.execute(f"DROP TABLE {table}")
        pg.close()
        ours.close()


def same_errors(ours: Any, pg: Any, statements: list[str]) -> None:
    """Each of ``statements`` fails on PostgreSQL and here, with the same SQLSTATE."""
    import psycopg

    from changeflow.adapter.connection import DatabaseError

    for sql in statements:
        try:
            pg.execute(sql)
        except psycopg.Error as e:
            theirs = e.sqlstate
        else:
            raise AssertionError(f"PostgreSQL accepts {sql!r}")
        try:
            ours.execute(sql).fetchall()
        except DatabaseError as e:
            assert e.sqlstate == theirs, (sql, str(e))
        else:
            raise AssertionError(f"accepted here, refused by PostgreSQL ({theirs}): {sql!r}")


def same_outcomes(ours: Any, pg: Any, statements: list[str]) -> None:
    """Each of ``statements``, run in order on both connections, gives the same
    :func:`outcome` (its SQLSTATE, or its columns and rows)."""
    for sql in statements:
        assert outcome(ours, sql) == outcome(pg, sql), sql


def outcome(conn: Any, sql: str, *, sort: bool = False) -> tuple:
    """What ``sql`` gives on a PostgreSQL or changeflow connection: its SQLSTATE, or its columns
    and rows as text (sorted when the statement's order is not defined)."""
    import psycopg

    from changeflow.adapter.connection import DatabaseError

    try:
        cur = conn.execute(sql)
    except (psycopg.Error, DatabaseError) as e:
        return ("error", e.sqlstate)
    if cur.description is None:
        return ("ok",)
    rows = [tuple("NULL" if v is None else str(v) for v in r) for r in cur.fetchall()]
    return ("ok", [d[0] for d in cur.description], sorted(rows, key=str) if sort else rows)


def unordered(conn: Any, sql: str) -> list:
    """``sql``'s rows in a fixed order (for a statement whose order is not defined); arrays
    as lists, as psycopg gives them."""
    rows = conn.execute(sql).fetchall()
    return sorted((tuple(list(v) if isinstance(v, tuple) else v for v in r) for r in rows), key=str)


def materialize(ours: Any, pg: Any, name: str, sql: str, options: str = "") -> str:
    """``CREATE MATERIALIZED VIEW name AS sql`` here (``WITH (options)`` if given), its columns
    named c0, c1, … where PostgreSQL's names for the query's columns repeat, as a view's may
    not; the SELECT that reads the view under the query's names."""
    names = [d[0] for d in pg.execute(sql).description]
    with_options = f" WITH ({options})" if options else ""
    if len(set(names)) == len(names):
        ours.execute(f"CREATE MATERIALIZED VIEW {name}{with_options} AS {sql}")
        return f"SELECT * FROM {name}"
    listed = ", ".join(f"c{k}" for k in range(len(names)))
    ours.execute(f"CREATE MATERIALIZED VIEW {name} ({listed}){with_options} AS {sql}")
    shown = ", ".join(f'c{k} AS "{n}"' for k, n in enumerate(names))
    return f"SELECT {shown} FROM {name}"


def maintained_as_postgres(
    ours: Any,
    pg: Any,
    queries: list[str],
    changes: list[str],
    rows: Any = unordered,
    options: str = "",
) -> None:
    """Each query, ad hoc and as a materialized view created first (``WITH (options)`` if
    given; see :func:`materialize`), gives PostgreSQL's rows before and after each of
    ``changes`` (run on both)."""
    reads = [materialize(ours, pg, f"v{i}", sql, options) for i, sql in enumerate(queries)]
    for change in [None, *changes]:
        if change is not None:
            for conn in (ours, pg):
                conn.execute(change)
        for i, sql in enumerate(queries):
            expected = rows(pg, sql)
            assert rows(ours, sql) == expected, (change, sql)
            assert rows(ours, reads[i]) == expected, (change, sql)
