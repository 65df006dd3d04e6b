"""CHECK constraints through the server, compared with PostgreSQL 15: psql's ``\\d`` lists
them, SQLAlchemy's inspector reads them, and COPY and prepared INSERTs (psycopg's
executemany) are refused as PostgreSQL refuses them, writing nothing."""

from __future__ import annotations

import psycopg
import pytest
from test_psql import _same_psql_output

CREATE = (
    "CREATE TABLE {t} (id int, x int CHECK (x > 0), y int, CONSTRAINT {t}_c CHECK (y < x), "
    "CHECK (y > -5 AND (x < 100 OR y IS NULL)))"
)


def _refusal(conn: psycopg.Connection, fn) -> tuple:
    try:
        fn(conn)
    except psycopg.Error as e:
        return e.sqlstate, e.diag.message_primary, e.diag.message_detail
    return ("ok",)


def _rows(conn: psycopg.Connection, table: str) -> list:
    return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()


@pytest.mark.postgres
def test_copy_and_prepared_inserts_as_postgres(server, postgres_url: str, table_name: str) -> None:
    t = table_name

    def copy(rows: list[tuple]):
        def run(conn: psycopg.Connection) -> None:
            with conn.cursor() as cur, cur.copy(f"COPY {t} FROM STDIN") as c:
                for row in rows:
                    c.write_row(row)

        return run

    def many(rows: list[tuple]):
        def run(conn: psycopg.Connection) -> None:
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)", rows)

        return run

    writes = [
        copy([(1, 5, 1), (2, None, None)]),
        copy([(3, 5, 1), (4, 0, -1)]),
        copy([(5, 5, 9)]),
        copy([(12, 6, 1), (13, 5, 9), (14, 0, -1)]),
        many([(6, 7, 1), (7, 8, 2)]),
        many([(8, 7, 1), (9, 8, -9), (10, 1, 0)]),
        many([(11, -1, None)]),
    ]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(CREATE.format(t=t))
        try:
            for write in writes:
                assert _refusal(ours, write) == _refusal(pg, write)
                assert _rows(ours, t) == _rows(pg, t)
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {t}")


@pytest.mark.postgres
def test_describe_lists_check_constraints_as_postgres(start_server, postgres_url: str) -> None:
    setup = [CREATE.format(t="pgchk"), "CREATE TABLE pgchk2 (a text CHECK (a <> ''), b int)"]
    teardown = ["DROP TABLE IF EXISTS pgchk", "DROP TABLE IF EXISTS pgchk2"]
    commands = ["\\d pgchk", "\\d pgchk2", "\\d+ pgchk"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)


@pytest.mark.postgres
def test_inspector_check_constraints_as_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    sa = pytest.importorskip("sqlalchemy")

    def inspect(url: str) -> list:
        engine = sa.create_engine(url)
        try:
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(sa.text(CREATE.format(t=table_name)))
            found = sa.inspect(engine).get_check_constraints(table_name)
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(sa.text(f"DROP TABLE {table_name}"))
            return sorted(found, key=lambda c: c["name"])
        finally:
            engine.dispose()

    ours = inspect(f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize")
    theirs = inspect(postgres_url.replace("postgresql://", "postgresql+psycopg://", 1))
    assert ours == theirs
    assert len(ours) == 3
