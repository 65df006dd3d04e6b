"""SQL functions (``CREATE FUNCTION … LANGUAGE sql``): calls planned as their bodies with the
arguments in place, by parameter name or ``$n``, with DEFAULTs, STRICT, ``RETURN expr``,
bodies reading tables, functions calling functions, in WHERE, UPDATE and a maintained view;
pg_proc and PostgreSQL's catalog functions; the DDL in transactions and across a restart.
Compared with PostgreSQL 15."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_outcomes  # noqa: E402

import changeflow  # noqa: E402

pytestmark = pytest.mark.postgres

FUNCTIONS = ("add1", "greet", "twice", "total", "add2", "clamp")
SETUP = [
    "CREATE TABLE ft (id int, x int, s text)",
    "INSERT INTO ft VALUES (1, 10, 'a'), (2, 20, NULL), (3, NULL, 'c')",
    "CREATE FUNCTION add1(a int) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT a + 1 $$",
    "CREATE FUNCTION greet(name text, punct text DEFAULT '!') RETURNS text"
    " AS 'SELECT ''hi '' || name || punct' LANGUAGE sql STRICT",
    "CREATE FUNCTION twice(numeric) RETURNS numeric LANGUAGE sql RETURN $1 * 2",
    "CREATE FUNCTION total() RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT sum(x) FROM ft $$",
    "CREATE FUNCTION add2(a int) RETURNS int LANGUAGE sql AS $$ SELECT add1(add1(a)) $$",
    "CREATE FUNCTION clamp(v int, lo int = 0, hi int = 15) RETURNS int IMMUTABLE"
    " LANGUAGE sql AS $$ SELECT least(greatest(v, lo), hi); $$",
]
AD_HOC = [
    "SELECT add1(4), add1(NULL), add1(add1(1)), add2(5)",
    "SELECT greet('bob'), greet('al', '?'), greet(NULL), greet('x', NULL)",
    "SELECT twice(2.5), twice(3)",
    "SELECT total(), id, add1(x), clamp(x), clamp(x, 12), clamp(x, 0, 11) FROM ft ORDER BY id",
    "SELECT id FROM ft WHERE add1(x) > 15 ORDER BY id",
    "WITH t AS (SELECT add1(x) AS y FROM ft) SELECT sum(y) FROM t",
    "SELECT p.proname, pg_get_function_result(p.oid), pg_get_function_arguments(p.oid),"
    " p.provolatile, p.proisstrict, p.pronargs, p.prokind FROM pg_proc p"
    " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' ORDER BY 1",
]
DDL_AS_POSTGRES = [
    "SELECT add1(1, 2)",
    "SELECT add1(4.5)",  # (no implicit cast from numeric to integer: no such function)
    "SELECT add1(2::bigint)",
    "SELECT add1('a'::text)",
    "SELECT add1('7'), add1(2::smallint), twice(2::bigint), twice(1.5::float8)",
    "SELECT greet(5)",
    "SELECT clamp(1, 2.5)",
    "SELECT nosuch(1)",
    "CREATE FUNCTION bad(a int) RETURNS int LANGUAGE sql AS $$ SELECT nosuch + a $$",
    "CREATE FUNCTION add1(a int) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$",
    "DROP FUNCTION nosuch",
    "CREATE VIEW fview AS SELECT add1(x) FROM ft",
    "DROP FUNCTION add1",
    "DROP VIEW fview",
]
QUERIES = [
    "SELECT id, add1(x) AS y, greet(s) AS g FROM ft",
    "SELECT clamp(sum(x)::int) AS c FROM ft",
]
CHANGES = ["INSERT INTO ft VALUES (4, 40, 'd')", "UPDATE ft SET x = add1(x) WHERE id = 1"]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    import psycopg

    with beside_postgres(tmp_path / "home", postgres_url, "ft", *SETUP) as (ours, pg):
        yield ours, pg
    with psycopg.connect(postgres_url, autocommit=True) as pg:  # (the shared server's)
        for f in FUNCTIONS:
            pg.execute(f"DROP FUNCTION IF EXISTS {f}")


def test_sql_functions_as_postgres(both) -> None:
    ours, pg = both
    same_outcomes(ours, pg, AD_HOC)
    for sql in DDL_AS_POSTGRES:
        assert outcome(ours, sql) == outcome(pg, sql), sql


def test_sql_functions_maintained_as_postgres(both) -> None:
    ours, pg = both
    maintained_as_postgres(ours, pg, QUERIES, CHANGES)


def test_what_is_refused_says_so(both) -> None:
    ours, _ = both
    for sql in [
        "CREATE FUNCTION p(a int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN a; END $$",
        "CREATE FUNCTION s() RETURNS SETOF int LANGUAGE sql AS $$ SELECT 1 $$",
        "CREATE FUNCTION o(OUT a int) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$",
    ]:
        assert outcome(ours, sql) == ("error", "0A000"), sql
    ours.execute("CREATE FUNCTION r() RETURNS float8 LANGUAGE sql AS $$ SELECT random() $$")
    view = "CREATE MATERIALIZED VIEW rv AS SELECT id, r() FROM ft"  # a random value, as there
    assert outcome(ours, view) == ("error", "0A000")
    ours.execute(  # a function made to call itself: refused where it is called
        "CREATE OR REPLACE FUNCTION r() RETURNS float8 LANGUAGE sql AS $$ SELECT r() + 1 $$"
    )
    assert outcome(ours, "SELECT r()") == ("error", "0A000")


def test_function_ddl_in_transactions_and_after_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    for sql in [
        "BEGIN",
        "CREATE FUNCTION f3() RETURNS int LANGUAGE sql AS $$ SELECT 3 $$",
        "ROLLBACK",
    ]:
        conn.execute(sql)
    assert outcome(conn, "SELECT f3()") == ("error", "42883")
    for sql in [
        "CREATE FUNCTION f3() RETURNS int LANGUAGE sql AS $$ SELECT 3 $$",
        "BEGIN",
        "DROP FUNCTION f3()",
        "ROLLBACK",
        "CREATE OR REPLACE FUNCTION f4(a int) RETURNS int LANGUAGE sql AS $$ SELECT f3() + a $$",
    ]:
        conn.execute(sql)
    conn.close()
    again = changeflow.connect(home, host_seconds=0)
    again.autocommit = True
    assert again.execute("SELECT f3(), f4(1)").fetchall() == [(3, 4)]
    again.execute("DROP FUNCTION IF EXISTS f4, f3")
    assert outcome(again, "SELECT f3()") == ("error", "42883")
    again.close()


def test_a_check_calling_a_function_follows_its_new_body(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    setup = [
        "DROP FUNCTION IF EXISTS lim",
        "CREATE FUNCTION lim() RETURNS int LANGUAGE sql AS $$ SELECT 10 $$",
        "CREATE TABLE ck (a int CHECK (a < lim()))",
    ]
    statements = [
        "INSERT INTO ck VALUES (5)",
        "INSERT INTO ck VALUES (15)",
        "CREATE OR REPLACE FUNCTION lim() RETURNS int LANGUAGE sql AS $$ SELECT 20 $$",
        "INSERT INTO ck VALUES (15)",
        "SELECT * FROM ck ORDER BY a",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "ck", *setup) as (ours, pg):
        same_outcomes(ours, pg, statements)
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        pg.execute("DROP FUNCTION IF EXISTS lim")
