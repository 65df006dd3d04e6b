"""What tools pointed at a PostgreSQL read and write about indexes, constraints and comments,
through ``changeflow serve`` beside PostgreSQL 15: errors with their details, SQLAlchemy's
inspector."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.postgres


def _error(conn: psycopg.Connection, sql: str) -> tuple:
    try:
        conn.execute(sql)
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary, e.diag.message_detail, e.diag.message_hint)
    return ()


def test_errors_carry_their_details_and_hints(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    statements = [
        f"CREATE TABLE {t} (id int PRIMARY KEY, b text)",
        f"INSERT INTO {t} VALUES (1, 'x'), (2, 'x')",
        f"CREATE UNIQUE INDEX {t}_b ON {t} (b)",
        f"CREATE UNIQUE INDEX {t}_b ON {t} (id, b)",
        f"INSERT INTO {t} VALUES (1, 'y')",
        f"INSERT INTO {t} VALUES (3, 'x')",
        f"SELECT b LIKE 'x' ESCAPE '##' FROM {t}",
        f"INSERT INTO {t} VALUES (4, 'y') ON CONFLICT (b) DO NOTHING",
    ]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for sql in statements:
                assert _error(ours, sql) == _error(pg, sql), sql
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {t}")
