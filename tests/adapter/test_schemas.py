"""CREATE SCHEMA and DROP SCHEMA as PostgreSQL 15 does them: each statement's outcome (its
SQLSTATE, or its rows) compared with PostgreSQL's; schemas and their items survive a restart
(psql's ``\\dn`` and ``\\dt s.*`` through ``changeflow serve``: tests/server/test_psql.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

SCHEMAS = ("sa", "sb")
STEPS = [
    "CREATE TABLE sa.t (a int)",
    "CREATE SCHEMA sa",
    "CREATE SCHEMA sa",
    "CREATE SCHEMA IF NOT EXISTS sa",
    "CREATE SCHEMA public",
    "CREATE SCHEMA sb",
    "CREATE TABLE sa.t (a int PRIMARY KEY, b text)",
    "CREATE TABLE sb.t (a int, c numeric(6,2))",
    "INSERT INTO sa.t VALUES (1, 'one'), (2, 'two')",
    "INSERT INTO sb.t VALUES (1, 1.5)",
    "INSERT INTO public.base VALUES (3)",
    "INSERT INTO sa.t VALUES (1, 'dup')",
    "SELECT * FROM sa.t ORDER BY a",
    "SELECT * FROM sb.t",
    "SELECT * FROM base",
    "SELECT * FROM t",
    "SELECT * FROM sc.t",
    "SELECT x.a, x.b, y.c FROM sa.t AS x JOIN sb.t AS y ON x.a = y.a",
    "SELECT sa.t.b FROM sa.t WHERE sa.t.a = 2",
    "UPDATE sa.t SET b = 'uno' WHERE a = 1 RETURNING t.a, b",
    "DELETE FROM sb.t RETURNING *",
    "ALTER TABLE sa.t ADD COLUMN d int DEFAULT 4",
    "CREATE VIEW sa.v AS SELECT a, b FROM sa.t WHERE a > 1",
    "SELECT * FROM sa.v",
    "SELECT * FROM v",
    "ALTER TABLE sb.t RENAME TO u",
    "SELECT * FROM sb.u",
    "SET search_path TO sa, public",
    "SHOW search_path",
    "CREATE TABLE t3 (z int)",
    "INSERT INTO t3 VALUES (1)",
    "SELECT * FROM sa.t3",
    "SELECT a, b FROM t ORDER BY a",
    "SELECT * FROM base",
    "SELECT table_schema FROM information_schema.tables WHERE table_name = 't3'",
    "ALTER TABLE t3 ADD COLUMN y int DEFAULT 2",
    "SELECT * FROM t3",
    "DROP TABLE t3",
    "SET search_path TO nope",
    "CREATE TABLE t4 (z int)",
    "SET search_path TO public",
    "SELECT * FROM t3",
    "SELECT nspname FROM pg_namespace WHERE nspname LIKE 's_' ORDER BY 1",
    "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 's_' ORDER BY 1",
    "SELECT table_schema, table_name, table_type FROM information_schema.tables "
    "WHERE table_schema LIKE 's_' ORDER BY 1, 2",
    "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n "
    "ON n.oid = c.relnamespace WHERE n.nspname LIKE 's_' AND c.relkind IN ('r', 'v') "
    "ORDER BY 1, 2",
    "SELECT table_schema, column_name FROM information_schema.columns "
    "WHERE table_schema = 'sa' AND table_name = 't' ORDER BY ordinal_position",
    "DROP SCHEMA sa",
    "DROP SCHEMA nope",
    "DROP SCHEMA IF EXISTS nope",
    "DROP TABLE sb.u",
    "DROP SCHEMA sb",
    "DROP SCHEMA sa CASCADE",
    "SELECT * FROM sa.t",
    "CREATE TABLE sa.t (a int)",
    "SELECT nspname FROM pg_namespace WHERE nspname LIKE 's_' ORDER BY 1",
]


@pytest.mark.postgres
def test_schemas_as_postgres(tmp_path: Path, postgres_url: str) -> None:

    create = "CREATE TABLE base (a int)"
    with beside_postgres(tmp_path / "home", postgres_url, "base", create) as (ours, pg):
        try:
            for sql in STEPS:
                want = outcome(pg, sql)
                assert outcome(ours, sql) == want, sql
        finally:
            pg.execute(f"DROP SCHEMA IF EXISTS {', '.join(SCHEMAS)} CASCADE")


def test_schemas_and_their_items_survive_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE SCHEMA sales")
    conn.execute("CREATE TABLE sales.orders (id int, amount int)")
    conn.execute("CREATE TABLE orders (id int)")  # the same name in public
    conn.execute("INSERT INTO sales.orders VALUES (1, 10), (2, 20)")
    conn.execute(
        "CREATE MATERIALIZED VIEW sales.total AS SELECT sum(amount) AS s FROM sales.orders"
    )
    conn.execute("CREATE INDEX by_id ON sales.orders (id)")
    conn.close()

    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    conn.execute("INSERT INTO sales.orders VALUES (3, 30)")
    assert conn.execute("SELECT s FROM sales.total").fetchall() == [(60,)]
    assert conn.execute("SELECT * FROM sales.orders WHERE id = 3").fetchall() == [(3, 30)]
    assert conn.execute("SELECT count(*) FROM orders").fetchall() == [(0,)]
    indexes = "SELECT schemaname, tablename, indexname FROM pg_indexes WHERE schemaname = 'sales'"
    assert conn.execute(indexes).fetchall() == [("sales", "orders", "by_id")]
    with pytest.raises(DatabaseError) as e:
        conn.execute("DROP SCHEMA sales")
    assert e.value.sqlstate == "2BP01"
    conn.execute("DROP SCHEMA sales CASCADE")
    names = "SELECT relname FROM pg_class WHERE relkind IN ('r', 'm', 'i') ORDER BY 1"
    assert conn.execute(names).fetchall() == [("orders",)]
    conn.close()


@pytest.mark.parametrize(
    "sql", ['CREATE TABLE "a.b" (x int)', 'CREATE VIEW "v.w" AS SELECT 1', 'CREATE SCHEMA "s.t"']
)
def test_a_name_with_a_dot_is_refused(tmp_path: Path, sql: str) -> None:
    """The catalog names an item of a schema ``schema.name``: a dot inside a name would be
    read as a schema, so it is refused, not misfiled."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    with pytest.raises(DatabaseError) as e:
        conn.execute(sql)
    assert e.value.sqlstate == "0A000" and "dot" in str(e.value)
    conn.close()
