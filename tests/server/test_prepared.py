"""Prepared statements as clients use them: psycopg's automatic preparing (and the DEALLOCATE
ALL it sends after DDL or a rollback), SQL's PREPARE/EXECUTE/DEALLOCATE, and asyncpg, which
binds parameters in binary by the types Describe reports."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import psycopg
import pytest
from psycopg import errors


def test_psycopg_prepares_and_deallocates(server, table_name: str) -> None:
    with server.connect(autocommit=True) as conn:
        conn.prepare_threshold = 0  # prepare every statement at its first run
        conn.execute(f"CREATE TABLE {table_name} (id int, name text)")
        for i in range(7):
            conn.execute(f"INSERT INTO {table_name} VALUES (%s, %s)", (i, f"n{i}"))
        got = [
            conn.execute(f"SELECT name FROM {table_name} WHERE id = %s", (i,)).fetchall()
            for i in range(7)
        ]
        assert got == [[(f"n{i}",)] for i in range(7)]
        conn.execute(f"DROP TABLE {table_name}")  # psycopg then sends DEALLOCATE ALL
        conn.execute(f"CREATE TABLE {table_name} (id int, name text)")
        conn.execute(f"INSERT INTO {table_name} VALUES (%s, %s)", (1, "again"))
        assert conn.execute(f"SELECT name FROM {table_name}").fetchall() == [("again",)]
        conn.execute(f"DROP TABLE {table_name}")


def test_prepare_execute_deallocate_in_sql(conn: psycopg.Connection, table_name: str) -> None:
    conn.execute(f"CREATE TABLE {table_name} (id int, price numeric)")
    cur = conn.cursor()
    cur.execute(f"PREPARE ins (int, numeric) AS INSERT INTO {table_name} VALUES ($1, $2)")
    assert cur.statusmessage == "PREPARE"
    cur.execute("EXECUTE ins (1, 2.5)")
    assert cur.statusmessage == "INSERT 0 1"
    cur.execute("EXECUTE ins (2, '3')")
    cur.execute(f"PREPARE q AS SELECT id, price FROM {table_name} WHERE id >= $1 ORDER BY id")
    assert cur.execute("EXECUTE q (2)").fetchall() == [(2, Decimal("3"))]
    assert cur.execute("EXECUTE q(0)").fetchall() == [(1, Decimal("2.5")), (2, Decimal("3"))]
    with pytest.raises(errors.DuplicatePreparedStatement):
        cur.execute("PREPARE q AS SELECT 1")
    cur.execute("DEALLOCATE q")
    with pytest.raises(errors.InvalidSqlStatementName):
        cur.execute("EXECUTE q (1)")
    with pytest.raises(errors.InvalidSqlStatementName):
        cur.execute("DEALLOCATE q")
    cur.execute("DEALLOCATE ALL")
    assert cur.statusmessage == "DEALLOCATE ALL"
    with pytest.raises(errors.InvalidSqlStatementName):
        cur.execute("EXECUTE ins (3, 1)")
    conn.execute(f"DROP TABLE {table_name}")


def test_asyncpg_infers_parameter_types(server, table_name: str) -> None:
    asyncpg = pytest.importorskip("asyncpg")

    async def main() -> list:
        c = await asyncpg.connect(host=server.host, port=server.port, user="tester")
        try:
            await c.execute(
                f"CREATE TABLE {table_name} (id int, name text, price numeric, at date)"
            )
            await c.executemany(
                f"INSERT INTO {table_name} VALUES ($1, $2, $3, $4)",
                [(1, "a", Decimal("1.5"), None), (2, "b", Decimal("-2"), dt.date(2024, 2, 29))],
            )
            await c.execute(f"UPDATE {table_name} SET name = $1 WHERE id = $2", "B", 2)
            rows = await c.fetch(
                f"SELECT id, name, price FROM {table_name} WHERE id IN ($1, $2) AND price > $3"
                " ORDER BY id",
                1,
                2,
                Decimal("-5"),
            )
            dated = await c.fetchval(
                f"SELECT id FROM {table_name} WHERE at = $1", dt.date(2024, 2, 29)
            )
            assert dated == 2
            await c.execute(f"DROP TABLE {table_name}")
            return [tuple(r) for r in rows]
        finally:
            await c.close()

    assert asyncio.run(main()) == [(1, "a", Decimal("1.5")), (2, "B", Decimal("-2"))]


def test_savepoints_around_reads(server, table_name: str) -> None:
    with server.connect(autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table_name} (id int)")
        conn.autocommit = False
        with conn.transaction():
            conn.execute(f"SELECT * FROM {table_name}")
            with pytest.raises(errors.UndefinedTable), conn.transaction():  # SAVEPOINT
                conn.execute("SELECT * FROM no_such_table")  # then ROLLBACK TO SAVEPOINT
            assert conn.execute(f"SELECT count(*) FROM {table_name}").fetchone() == (0,)
        conn.execute(f"INSERT INTO {table_name} VALUES (1)")
        conn.execute("SAVEPOINT s")
        conn.execute(f"INSERT INTO {table_name} VALUES (2)")
        conn.execute("ROLLBACK TO SAVEPOINT s")  # the writes since are undone
        assert conn.execute(f"SELECT id FROM {table_name}").fetchall() == [(1,)]
        conn.rollback()
        conn.autocommit = True
        assert conn.execute(f"SELECT count(*) FROM {table_name}").fetchone() == (0,)
        conn.execute(f"DROP TABLE {table_name}")


def test_returning_over_the_wire(conn: psycopg.Connection, table_name: str) -> None:
    conn.execute(f"CREATE TABLE {table_name} (id int, name text)")
    cur = conn.execute(
        f"INSERT INTO {table_name} VALUES (%s, %s), (%s, %s) RETURNING id, upper(name) AS u",
        (1, "a", 2, "b"),
    )
    assert cur.statusmessage == "INSERT 0 2" and [d.name for d in cur.description] == ["id", "u"]
    assert sorted(cur.fetchall()) == [(1, "A"), (2, "B")]
    cur = conn.execute(f"DELETE FROM {table_name} WHERE id = %s RETURNING *", (2,))
    assert cur.fetchall() == [(2, "b")]
    assert conn.execute(f"TRUNCATE {table_name}").statusmessage == "TRUNCATE TABLE"
    assert conn.execute(f"SELECT count(*) FROM {table_name}").fetchone() == (0,)
    conn.execute(f"DROP TABLE {table_name}")


def test_views_calling_functions_survive_a_server_restart(start_server, tmp_path) -> None:
    home = tmp_path / "fnhome"
    server = start_server(home=home)
    query = (
        "SELECT id, upper(name) AS u, length(name) AS n, name || '!' AS bang, round(x, 1) AS r,"
        " extract(year FROM at) AS y FROM t"
    )
    with server.connect() as conn:
        conn.execute("CREATE TABLE t (id int, name text, x numeric(12,2), at timestamptz)")
        conn.execute("INSERT INTO t VALUES (1, 'ab', 2.25, '2024-05-06 00:00:00+00')")
        conn.execute(f"CREATE MATERIALIZED VIEW v AS {query}")
        expected = conn.execute(f"{query} ORDER BY id").fetchall()
        assert conn.execute("SELECT * FROM v ORDER BY id").fetchall() == expected
    assert server.stop() == 0
    server = start_server(home=home)
    with server.connect() as conn:
        assert conn.execute("SELECT * FROM v ORDER BY id").fetchall() == expected
    assert "Traceback" not in server.stderr()


def _defaults_afresh(conn: psycopg.Connection, table: str) -> tuple[list[int], int]:
    """Run prepared UPDATEs and INSERTs that take columns' DEFAULTs (a sequence's nextval and
    now()); the sequence values the updated row took and how many distinct times it saw."""
    conn.prepare_threshold = 0  # every statement prepared, its plan kept
    for sql in (
        f"DROP TABLE IF EXISTS {table}",
        f"DROP SEQUENCE IF EXISTS {table}_s",
        f"CREATE SEQUENCE {table}_s",
        f"CREATE TABLE {table} (id int, v bigint DEFAULT nextval('{table}_s'),"
        " ts timestamptz DEFAULT now())",
    ):
        conn.execute(sql)
    values, times = [], set()
    for i in range(4):
        conn.execute(f"INSERT INTO {table} (id) VALUES (%s)", (10 + i,))
        conn.execute(f"INSERT INTO {table} VALUES (%s, DEFAULT, DEFAULT)", (20 + i,))
        conn.execute(f"UPDATE {table} SET v = DEFAULT, ts = DEFAULT WHERE id = %s", (10,))
        v, ts = conn.execute(f"SELECT v, ts FROM {table} WHERE id = %s", (10,)).fetchone()
        values.append(v)
        times.add(ts)
    times |= {r[0] for r in conn.execute(f"SELECT ts FROM {table} WHERE id <> 10")}
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"DROP SEQUENCE {table}_s")
    return values, len(times)


def test_a_prepared_statement_takes_defaults_afresh(
    server, postgres_url: str, table_name: str
) -> None:
    """Each run of a prepared UPDATE ... SET c = DEFAULT (or INSERT taking a DEFAULT) evaluates
    the default again, as PostgreSQL does: a new nextval and a new now() each time."""
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        expected = _defaults_afresh(pg, table_name)
        assert expected == ([3, 6, 9, 12], 11)
        assert _defaults_afresh(ours, table_name) == expected
