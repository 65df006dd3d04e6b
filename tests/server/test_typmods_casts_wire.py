"""The types and type modifiers of casts on the wire as PostgreSQL 15 sends them in
RowDescription: ``x::numeric(10,2)`` ((10 << 16 | 2) + 4), ``x::varchar(5)`` (1043, 9),
``x::char(3)`` (1042, 7), ``::varchar`` without a length (1043, -1), ``::bpchar`` (1042, -1);
and ``pg_typeof`` of char(n) and varchar(n) columns; by the extended and the simple protocol."""

from __future__ import annotations

import psycopg
import pytest

QUERIES = [
    "SELECT n::numeric(10,2) AS a, n::numeric(5) AS b, s::varchar(5) AS c, s::char(3) AS d,"
    " s::varchar AS e, s::bpchar AS f FROM {t}",
    "SELECT '1.234'::numeric(6,1) AS a, 'abc'::varchar(2) AS b, 'ab'::char(3) AS c,"
    " 'ab'::varchar AS d, CAST(n AS decimal(8,3)) AS e FROM {t}",
    "SELECT coalesce(n::numeric(10,2), 0::numeric(10,2)) AS a, (n::numeric(10,2)) + 1 AS b,"
    " upper(s::varchar(5)) AS c FROM {t}",
    "SELECT coalesce(c, 'zz') AS a, c::bpchar AS b, coalesce(c, v::char(6)) AS c FROM {t}",
    "SELECT coalesce(c, NULL) AS b, coalesce(c, c) AS c, CASE WHEN n > 0 THEN c ELSE c END AS d"
    " FROM {t}",
    "SELECT pg_typeof(c)::text AS a, pg_typeof(v)::text AS b, pg_typeof(s)::text AS c,"
    " pg_typeof(c::text)::text AS d, pg_typeof(s::varchar)::text AS e,"
    " pg_typeof('x'::bpchar)::text AS f FROM {t}",
]


def _described(conn: psycopg.Connection, sql: str, simple: bool) -> tuple:
    factory = psycopg.ClientCursor if simple else psycopg.Cursor
    with factory(conn) as cur:
        cur.execute(sql)
        result = cur.pgresult
        assert result is not None
        fields = [(result.ftype(i), result.fmod(i)) for i in range(result.nfields)]
        return fields, cur.fetchall()


@pytest.mark.postgres
def test_cast_type_modifiers_as_postgres(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    create = f"CREATE TABLE {t} (n numeric, s text, c char(4), v varchar(6))"
    insert = f"INSERT INTO {t} VALUES (3.14159, 'abcdef', 'ab', 'xy')"
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(insert)
        try:
            for query in QUERIES:
                sql = query.format(t=t)
                for simple in (False, True):
                    assert _described(ours, sql, simple) == _described(pg, sql, simple), sql
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {t}")
