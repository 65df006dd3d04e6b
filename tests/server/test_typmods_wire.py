"""RowDescription's type modifiers as PostgreSQL 15 sends them (numeric(p,s) and varchar(n)
columns of tables and views, kept through projections, joins and subqueries, lost in
arithmetic and aggregates), read through psycopg's description (its precision, scale and
display size come from them), by the extended and the simple protocol."""

from __future__ import annotations

import psycopg
import pytest

SETUP = [
    "CREATE TABLE {t} (id int, p numeric(10,2), v varchar(7), p2 numeric(8,3), n numeric, "
    "t text, w numeric(6))",
    "CREATE VIEW {t}_v AS SELECT p, v, p * 2 AS d FROM {t}",
    "CREATE MATERIALIZED VIEW {t}_m AS SELECT p, v, sum(p2) AS s FROM {t} GROUP BY p, v",
]
QUERIES = [
    "SELECT * FROM {t}",
    "SELECT id, p, v FROM {t} WHERE id > 0",
    "SELECT p + 1 AS q, sum(p) AS s, max(p) AS m, upper(v) AS u FROM {t} GROUP BY p, v",
    "SELECT * FROM {t}_v",
    "SELECT * FROM {t}_m",
    "SELECT p FROM {t} UNION ALL SELECT p FROM {t}",
    "SELECT p FROM {t} UNION ALL SELECT p2 FROM {t}",
    "SELECT coalesce(p, p) AS c, CASE WHEN id > 0 THEN p ELSE p END AS k FROM {t}",
    "SELECT nullif(v, 'a') AS a, nullif(p, 0) AS b, coalesce(v, v) AS c FROM {t}",
    "SELECT a.p, b.v FROM {t} a JOIN {t} b ON a.id = b.id",
    "SELECT * FROM (SELECT p, v FROM {t}) s WHERE 1 = 0",
]


def _described(conn: psycopg.Connection, sql: str, simple: bool) -> list[tuple]:
    factory = psycopg.ClientCursor if simple else psycopg.Cursor
    with factory(conn) as cur:
        cur.execute(sql)
        return [
            (d.name, d.type_code, d.precision, d.scale, d.display_size)
            for d in cur.description or ()
        ]


@pytest.mark.postgres
def test_type_modifiers_as_postgres(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            for sql in SETUP:
                conn.execute(sql.format(t=t))
        try:
            for query in QUERIES:
                sql = query.format(t=t)
                for simple in (False, True):
                    assert _described(ours, sql, simple) == _described(pg, sql, simple), sql
            assert _described(ours, f"SELECT p FROM {t}", False) == [("p", 1700, 10, 2, None)]
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP MATERIALIZED VIEW {t}_m")
                conn.execute(f"DROP VIEW {t}_v")
                conn.execute(f"DROP TABLE {t}")
