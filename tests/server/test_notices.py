"""NOTICEs where IF EXISTS / IF NOT EXISTS skip a statement's work and of what DROP … CASCADE
(of tables, views, schemas) drops besides, as PostgreSQL 15 sends them (severity, SQLSTATE,
message and detail), to psycopg's notice handlers and to psql, compared with the same
statements on a throwaway PostgreSQL server."""

from __future__ import annotations

import psycopg
import pytest
from serve_clients import PSQL, notices_of, psql

pytestmark = pytest.mark.postgres

STATEMENTS = [
    "DROP TABLE IF EXISTS {t}_no, public.{t}_no2",
    "DROP TABLE IF EXISTS {t}_nos.x",
    "CREATE TABLE {t} (a int, b text)",
    "CREATE TABLE IF NOT EXISTS {t} (a int)",
    "CREATE TABLE IF NOT EXISTS {t}_new (a int)",
    "DROP TABLE IF EXISTS {t}_new, {t}_no",
    "DROP VIEW IF EXISTS {t}_v",
    'DROP VIEW IF EXISTS "{t}_Quoted"',
    "DROP MATERIALIZED VIEW IF EXISTS {t}_mv",
    "CREATE MATERIALIZED VIEW IF NOT EXISTS {t} AS SELECT 1",
    "DROP INDEX IF EXISTS {t}_i",
    "CREATE INDEX IF NOT EXISTS {t}_i ON {t} (a)",
    "CREATE INDEX IF NOT EXISTS {t}_i ON {t} (a)",
    "DROP INDEX IF EXISTS {t}_i",
    "DROP SEQUENCE IF EXISTS {t}_s",
    "CREATE SEQUENCE IF NOT EXISTS {t}",
    "CREATE SCHEMA IF NOT EXISTS public",
    "DROP SCHEMA IF EXISTS {t}_schema",
    "ALTER TABLE IF EXISTS {t}_no ADD COLUMN c int",
    "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS a int",
    "ALTER TABLE {t} DROP COLUMN IF EXISTS c",
    "CREATE VIEW {t}_v1 AS SELECT a FROM {t}",
    "DROP TABLE {t} CASCADE",
    "CREATE TABLE {t} (a int, b text)",
    "CREATE INDEX {t}_i ON {t} (a)",
    "CREATE VIEW {t}_v1 AS SELECT a FROM {t}",
    "CREATE VIEW {t}_v2 AS SELECT b FROM {t}",
    "CREATE MATERIALIZED VIEW {t}_m3 AS SELECT a FROM {t}_v1",
    "CREATE INDEX {t}_m3_i ON {t}_m3 (a)",
    "CREATE VIEW {t}_v4 AS SELECT b FROM {t}_v2",
    "DROP VIEW IF EXISTS {t}_nope, {t}_v2 CASCADE",
    "DROP TABLE {t} CASCADE",
    "CREATE TABLE {t}_a (x int)",
    "CREATE TABLE {t}_b (y int)",
    "CREATE VIEW {t}_va AS SELECT * FROM {t}_a",
    "CREATE VIEW {t}_vb AS SELECT * FROM {t}_b",
    "CREATE VIEW {t}_vab AS SELECT * FROM {t}_va, {t}_vb",
    "CREATE VIEW {t}_va2 AS SELECT * FROM {t}_a",
    "DROP TABLE {t}_a, {t}_b CASCADE",
    "CREATE SCHEMA {t}_s1",
    "CREATE SCHEMA {t}_s2",
    "CREATE SCHEMA {t}_s3",
    "CREATE TABLE {t}_s1.a (x serial)",
    "CREATE INDEX {t}_ai ON {t}_s1.a (x)",
    "CREATE SEQUENCE {t}_s1.q",
    "CREATE TABLE {t}_s2.b (y int)",
    "CREATE VIEW {t}_s2.v AS SELECT * FROM {t}_s1.a, {t}_s2.b",
    "CREATE VIEW {t}_w AS SELECT * FROM {t}_s1.a",
    "CREATE MATERIALIZED VIEW {t}_s1.m AS SELECT * FROM {t}_s2.b",
    "DROP SCHEMA {t}_s3 CASCADE",
    "DROP SCHEMA IF EXISTS {t}_nos, {t}_s1, {t}_s2 CASCADE",
]


def test_notices_reach_psycopg_as_from_postgres(server, postgres_url: str, table_name: str) -> None:
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for statement in STATEMENTS:
                sql = statement.format(t=table_name)
                assert notices_of(ours, sql) == notices_of(pg, sql), sql
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {table_name}, {table_name}_new CASCADE")
            pg.execute(f"DROP TABLE IF EXISTS {table_name}_a, {table_name}_b CASCADE")
            for n in (1, 2, 3):
                pg.execute(f"DROP SCHEMA IF EXISTS {table_name}_s{n} CASCADE")
    # nothing is noted where nothing is skipped
    with server.connect() as ours:
        assert notices_of(ours, f"CREATE TABLE {table_name} (a int)") == []
        assert notices_of(ours, f"DROP TABLE IF EXISTS {table_name}") == []


@pytest.mark.skipif(PSQL is None, reason="psql is not installed")
def test_psql_shows_notices(server, table_name: str) -> None:
    out = psql(server, "-c", f"DROP TABLE IF EXISTS {table_name}_gone")
    assert out.returncode == 0, out.stderr
    assert out.stderr == f'NOTICE:  table "{table_name}_gone" does not exist, skipping\n'
    assert out.stdout.strip() == "DROP TABLE"
