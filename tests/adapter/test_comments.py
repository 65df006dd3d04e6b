"""COMMENT ON as PostgreSQL 15's: the same statements accepted or refused (SQLSTATE and
message), the comments read back through pg_description, obj_description and col_description,
kept across a restart and gone with their object."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres  # noqa: E402

SETUP = [
    "CREATE TABLE cm (a int PRIMARY KEY, b text, c int)",
    "CREATE VIEW cmv AS SELECT a FROM cm",
    "CREATE MATERIALIZED VIEW cmm AS SELECT a, c FROM cm",
    "CREATE INDEX cmi ON cm (b)",
]
STATEMENTS = [
    "COMMENT ON TABLE cmv IS 'x'",
    "COMMENT ON VIEW cm IS 'x'",
    "COMMENT ON TABLE nope IS 'x'",
    "COMMENT ON COLUMN cm.nope IS 'x'",
    "COMMENT ON COLUMN nope.a IS 'x'",
    "COMMENT ON INDEX cm IS 'x'",
    "COMMENT ON MATERIALIZED VIEW cmv IS 'x'",
    "COMMENT ON COLUMN cm IS 'x'",
    "COMMENT ON COLUMN cmv.a IS 'view column'",
    "COMMENT ON TABLE cm IS 'the table'",
    "COMMENT ON COLUMN cm.b IS E'b''s \\\\ column'",
    "COMMENT ON COLUMN cm.c IS 'c column'",
    "COMMENT ON COLUMN public.cm.a IS 'a column'",
    "COMMENT ON MATERIALIZED VIEW cmm IS 'totals'",
    "COMMENT ON COLUMN cmm.c IS 'mat column'",
    "COMMENT ON INDEX cmi IS 'by b'",
    "COMMENT ON INDEX cm_pkey IS 'the key'",
    "COMMENT ON INDEX public.cm_pkey IS 'the key, again'",
    "COMMENT ON VIEW cmv IS 'soon none'",
    "COMMENT ON VIEW cmv IS ''",
    "COMMENT ON COLUMN cm.a IS NULL",
    "SELECT objoid::regclass::text, classoid::regclass::text, objsubid, description"
    " FROM pg_description WHERE objoid IN ('cm'::regclass, 'cmv'::regclass, 'cmm'::regclass,"
    " 'cmi'::regclass, 'cm_pkey'::regclass) ORDER BY 1, 3",
    "SELECT obj_description('cm_pkey'::regclass, 'pg_class')",
    "SELECT obj_description('cm'::regclass, 'pg_class'), obj_description('cmi'::regclass),"
    " col_description('cm'::regclass, 2), col_description('cm'::regclass, 1),"
    " obj_description('cm'::regclass, 'pg_type')",
    "SELECT c.relname, d.description FROM pg_class c JOIN pg_description d ON d.objoid = c.oid"
    " AND d.objsubid = 0 WHERE c.relname LIKE 'cm%' ORDER BY 1",
    "DROP INDEX cmi",
    "SELECT count(*) FROM pg_description WHERE description = 'by b'",
]


def _outcome(conn, sql: str) -> tuple | list:
    import psycopg

    try:
        cur = conn.execute(sql)
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary)
    except DatabaseError as e:
        return (e.sqlstate, e.error.message)
    return [tuple(r) for r in cur.fetchall()] if cur.description else []


@pytest.mark.postgres
def test_comments_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "cm CASCADE", *SETUP) as (ours, pg):
        for sql in STATEMENTS:
            assert _outcome(ours, sql) == _outcome(pg, sql), sql


OTHERS_SETUP = [
    "CREATE SEQUENCE cm_seq",
    "CREATE TYPE cm_mood AS ENUM ('a', 'b')",
    "CREATE DOMAIN cm_dom AS int CHECK (VALUE > 0)",
    "CREATE FUNCTION cm_f(x int) RETURNS int LANGUAGE sql AS 'SELECT x'",
    "CREATE SCHEMA cm_s",
    "CREATE ROLE cm_role",
]
OTHERS = [
    "COMMENT ON SEQUENCE cm_seq IS 'a sequence'",
    "COMMENT ON SEQUENCE cm_mood IS 'x'",
    "COMMENT ON TYPE cm_mood IS 'moods'",
    "COMMENT ON DOMAIN cm_dom IS 'positive'",
    "COMMENT ON FUNCTION cm_f(int) IS 'identity'",
    "COMMENT ON SCHEMA cm_s IS 'mine'",
    "COMMENT ON ROLE cm_role IS 'a role'",
    "COMMENT ON TYPE cm_nope IS 'x'",
    "COMMENT ON SCHEMA cm_nope IS 'x'",
    "COMMENT ON ROLE cm_nope IS 'x'",
    "SELECT obj_description('cm_seq'::regclass, 'pg_class'),"
    " obj_description('cm_mood'::regtype, 'pg_type'),"
    " obj_description('cm_dom'::regtype, 'pg_type')",
    "SELECT d.description FROM pg_description d JOIN pg_proc p ON p.oid = d.objoid"
    " WHERE p.proname = 'cm_f'",
    "SELECT nspname, obj_description(oid, 'pg_namespace') FROM pg_namespace"
    " WHERE nspname IN ('public', 'cm_s') ORDER BY 1",
    "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'cm_role'",
    "COMMENT ON TYPE cm_mood IS NULL",
    "SELECT obj_description('cm_mood'::regtype, 'pg_type')",
]


@pytest.mark.postgres
def test_comments_on_other_objects_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    ours.autocommit = True
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for conn in (ours, pg):
                for sql in OTHERS_SETUP:
                    conn.execute(sql)
            for sql in OTHERS:
                assert _outcome(ours, sql) == _outcome(pg, sql), sql
        finally:
            for sql in ("SEQUENCE cm_seq", "TYPE cm_mood", "DOMAIN cm_dom", "FUNCTION cm_f"):
                pg.execute(f"DROP {sql}")
            pg.execute("DROP SCHEMA cm_s")
            pg.execute("DROP ROLE cm_role")
            ours.close()


def test_comments_outlive_a_restart_and_go_with_their_objects(tmp_path: Path) -> None:
    home = tmp_path / "home"
    described = (
        "SELECT description FROM pg_description WHERE objoid = 'cm'::regclass ORDER BY objsubid"
    )
    with changeflow.connect(home, host_seconds=0) as conn:
        conn.autocommit = True
        for sql in SETUP[:1]:
            conn.execute(sql)
        conn.execute("COMMENT ON TABLE cm IS 'kept'")
        conn.execute("COMMENT ON COLUMN cm.b IS 'b'")
        conn.execute("COMMENT ON COLUMN cm.c IS 'c'")
    with changeflow.connect(home, host_seconds=0) as conn:
        conn.autocommit = True
        assert conn.execute(described).fetchall() == [("kept",), ("b",), ("c",)]
        conn.execute("ALTER TABLE cm DROP COLUMN b")  # its comment goes with it
        conn.execute("ALTER TABLE cm ADD COLUMN d int")
        assert conn.execute(described).fetchall() == [("kept",), ("c",)]
        conn.execute("DROP TABLE cm")
        conn.execute("CREATE TABLE cm (a int, b text, c int)")
        assert conn.execute(described).fetchall() == []


def test_a_comment_in_a_transaction_lands_at_commit(tmp_path: Path) -> None:
    described = "SELECT obj_description('cm'::regclass, 'pg_class')"
    with changeflow.connect(tmp_path / "home", host_seconds=0) as conn:
        conn.autocommit = False  # each statement in a transaction until commit() or rollback()
        conn.execute("CREATE TABLE cm (a int)")
        conn.execute("COMMENT ON TABLE cm IS 'made in a transaction'")
        conn.commit()
        assert conn.execute(described).fetchone() == ("made in a transaction",)
        conn.commit()
        conn.execute("COMMENT ON TABLE cm IS 'rolled back'")
        with pytest.raises(DatabaseError) as e:
            conn.execute("COMMENT ON COLUMN cm.nope IS 'x'")
        assert e.value.sqlstate == "42703"
        conn.rollback()
        assert conn.execute(described).fetchone() == ("made in a transaction",)
