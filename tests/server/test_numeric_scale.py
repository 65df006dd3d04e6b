"""numeric keeps its scale on the way out, as PostgreSQL 15 prints it (the oracle: the same
statements on a throwaway PostgreSQL server)."""

from __future__ import annotations

import psycopg
import pytest

QUERIES = [
    "SELECT id, x FROM {t} ORDER BY id",
    "SELECT id, x * 2, x + 1, -x FROM {t} ORDER BY id",
    "SELECT id, round(x, 1), x::numeric(10,3), abs(x) FROM {t} ORDER BY id",
    "SELECT sum(x), min(x), max(x) FROM {t}",
    "SELECT id, x FROM {t} WHERE x > 0 ORDER BY id",
]


def _texts(cur, sql: str) -> list[tuple]:
    cur.execute(sql)
    return [tuple(None if v is None else str(v) for v in row) for row in cur.fetchall()]


@pytest.mark.postgres
def test_numeric_scale_as_postgres_prints_it(server, postgres_url: str, table_name: str) -> None:
    create = f"CREATE TABLE {table_name} (id int, x numeric(12,2))"
    insert = f"INSERT INTO {table_name} VALUES (1, 1470.1), (2, 5), (3, -0.5), (4, 287.5)"
    with (
        server.connect() as ours,
        psycopg.connect(postgres_url, autocommit=True) as pg,
    ):
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(insert)
        try:
            for binary in (False, True):
                for query in QUERIES:
                    sql = query.format(t=table_name)
                    with ours.cursor(binary=binary) as a, pg.cursor(binary=binary) as b:
                        assert _texts(a, sql) == _texts(b, sql), (sql, binary)
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {table_name}")
