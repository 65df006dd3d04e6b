"""char(n) on the wire as PostgreSQL 15 sends it: type OID 1042 (bpchar) with typmod n + 4 in
RowDescription, values blank-padded to n; text (OID 25) once cast, concatenated or computed;
through ``changeflow serve`` to psycopg (simple and extended protocol), compared with
PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.postgres

QUERIES: list[tuple[str, tuple]] = [
    ("SELECT id, a, b, c FROM {t} ORDER BY id", ()),
    ("SELECT a, b FROM {t} WHERE id = %s", (1,)),
    ("SELECT 'ab'::char(4), 'x'::char, 'abc'::character(2), 'ab'::char(4)::text", ()),
    ("SELECT a || '|', a::text, a::char(2), upper(a), count(*) FROM {t} GROUP BY a", ()),
    ("SELECT x.a, y.b FROM {t} x JOIN {t} y ON x.a = y.b ORDER BY x.id, y.id", ()),
]


def _answer(conn: psycopg.Connection, sql: str, params: tuple) -> tuple:
    cur = conn.execute(sql, params or None)
    result = cur.pgresult
    assert result is not None
    fields = [(result.ftype(i), result.fmod(i)) for i in range(result.nfields)]
    return fields, sorted(cur.fetchall(), key=str)


def test_char_on_the_wire_as_postgres(server, postgres_url: str, table_name: str) -> None:
    create = f"CREATE TABLE {table_name} (id int, a char(4), b character(6), c char)"
    insert = (
        f"INSERT INTO {table_name} VALUES (1, 'ab', 'ab  ', 'x'), (2, 'abcd  ', 'abcd', NULL),"
        " (3, NULL, 'q', ' ')"
    )
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(insert)
        try:
            for sql, params in QUERIES:
                sql = sql.replace("{t}", table_name)
                assert _answer(ours, sql, params) == _answer(pg, sql, params), sql
                prepared = (sql, params or None)
                for conn in (ours, pg):  # the extended protocol's Describe, prepared
                    conn.execute(*prepared, prepare=True)
                assert _answer(ours, sql, params) == _answer(pg, sql, params), sql
        finally:
            pg.execute(f"DROP TABLE {table_name}")


def test_the_name_type_on_the_wire_as_postgres(server, postgres_url: str, table_name: str) -> None:
    """A name column and a cast to name: type OID 19 in RowDescription, compared, sorted,
    concatenated and cut to 63 characters as PostgreSQL's (63 bytes there)."""
    create = f"CREATE TABLE {table_name} (id int, n name)"
    insert = f"INSERT INTO {table_name} VALUES (1, 'hello'), (2, 'world'), (3, NULL)"
    queries = [
        f"SELECT id, n FROM {table_name} ORDER BY n DESC",
        f"SELECT n || '!', pg_typeof(n), n = 'hello' FROM {table_name} WHERE id = 1",
        "SELECT 'abc'::name, pg_typeof('abc'::name), length(repeat('x', 70)::name)",
        f"SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attname = 'n'"
        f" AND attrelid = '{table_name}'::regclass",
    ]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(insert)
        try:
            for sql in queries:
                assert _answer(ours, sql, ()) == _answer(pg, sql, ()), sql
        finally:
            pg.execute(f"DROP TABLE {table_name}")
