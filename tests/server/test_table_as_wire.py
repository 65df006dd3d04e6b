"""CREATE TABLE … AS and SELECT … INTO through ``changeflow serve``, beside PostgreSQL 15:
psycopg sees the same command tags (``SELECT n``, ``CREATE TABLE AS``) and the same rows, and
the server, hosting its tables meanwhile, answers the statements that follow."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.postgres


def test_command_tags_and_rows_as_postgres(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    statements = [
        f"CREATE TABLE {t} (id int, name text, price numeric(8,2))",
        f"INSERT INTO {t} VALUES (1, 'a', 1.5), (2, 'b', 2), (3, NULL, NULL)",
        f"CREATE TABLE {t}_a AS SELECT id, price * 2 AS doubled FROM {t} WHERE id > 1",
        f"SELECT name, id INTO {t}_b FROM {t}",
        f"CREATE TABLE {t}_c (x) AS SELECT price FROM {t} WITH NO DATA",
        f"CREATE TABLE IF NOT EXISTS {t}_c AS SELECT 1",
        f"INSERT INTO {t}_c SELECT doubled FROM {t}_a",
    ]
    reads = [f"SELECT * FROM {t}_a ORDER BY id", f"SELECT * FROM {t}_b ORDER BY id"]
    reads.append(f"SELECT * FROM {t}_c ORDER BY x")
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for sql in statements:
                tags = []
                for conn in (ours, pg):
                    cur = conn.cursor()
                    cur.execute(sql)
                    tags.append(cur.statusmessage)
                assert tags[0] == tags[1], sql
            for sql in reads:
                assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall(), sql
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE IF EXISTS {t}, {t}_a, {t}_b, {t}_c")
