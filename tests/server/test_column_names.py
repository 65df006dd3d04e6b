"""Unnamed select items are named as PostgreSQL 15 names them (its FigureColname rules: a cast
by its operand's name or else its type, a call by the name written, CASE by its ELSE, a
subscript by its array), casts to oid and the reg* types answer outside catalog queries, and
catalog functions (pg_get_viewdef, format_type…) answer in queries that read no table;
through ``changeflow serve`` to psycopg, parameters included, compared with PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.postgres

QUERIES: list[tuple[str, tuple]] = [
    ("SELECT %s::int[]", ([1, 2],)),
    ("SELECT %s::text, %s::bigint, %s::numeric(10,2)", ("a", 2, 3)),
    ("SELECT CAST(%s AS int), (%s)::text, %s::varchar", (1, 2, "x")),
    ("SELECT '1'::text, 2::bigint, 3::smallint, 4::integer, 1.5::float, 2.5::real", ()),
    ("SELECT 'x'::char(2) IS NULL, 'true'::boolean, NULL, true", ()),
    ("SELECT '2020-01-01'::date, '2020-01-01'::timestamp, '1 day'::interval", ()),
    ("SELECT DATE '2020-01-01', TIMESTAMP '2020-01-01 00:00:00', '{1}'::text[]", ()),
    ("SELECT id::text, CAST(id AS bigint), arr[1], arr[1]::text, (arr)[2] FROM {t}", ()),
    ("SELECT CASE WHEN id > 0 THEN 1 ELSE 2 END, CASE WHEN id > 0 THEN s ELSE s END FROM {t}", ()),
    ("SELECT CASE id WHEN 1 THEN 'x' END, CASE WHEN true THEN 1 ELSE id END FROM {t}", ()),
    (
        "SELECT upper(s), trim(s), ltrim(s), substring(s from 1 for 1), position('a' in s) "
        "FROM {t}",
        (),
    ),
    ("SELECT strpos(s, 'a'), substr(s, 1), char_length(s), ceiling(id), power(id, 2) FROM {t}", ()),
    ("SELECT coalesce(id, 0), nullif(id, 0), greatest(id, 2), least(id, 2) FROM {t}", ()),
    ("SELECT count(*), sum(id), max(s), string_agg(s, ',') FROM {t}", ()),
    (
        "SELECT extract(year from d), date_trunc('month', d)::date, split_part(s, 'b', 1) FROM {t}",
        (),
    ),
    ("SELECT lpad(s, 3), array_length(arr, 1), current_user IS NOT NULL FROM {t}", ()),
    ("SELECT id + 1, -id, id = 1, id IS NULL, s || 'x', s LIKE 'a%%' FROM {t}", ()),
    ("SELECT (SELECT count(*) FROM {t}), (SELECT max(id) AS m FROM {t}), EXISTS (SELECT 1)", ()),
    ("SELECT ARRAY[1, 2], unnest(arr), row_number() OVER (ORDER BY id) FROM {t}", ()),
    ("SELECT 2 ^ 10, mod(17, 5), true AND false, '{}'::jsonb @> '{}', 'a' ~ 'a'", ()),
    ('SELECT s COLLATE "C", id FROM {t} WHERE s < \'b\' COLLATE "C" ORDER BY s COLLATE "C"', ()),
    ("SELECT pg_get_viewdef('{t}'::regclass) IS NULL, format_type(1043, 9)", ()),
    ("SELECT has_table_privilege('{t}', 'select'), to_regclass('nosuch')", ()),
    ("SELECT pid = pg_backend_pid(), state FROM pg_stat_activity WHERE pid = pg_backend_pid()", ()),
    ("SELECT 1::oid, %s::oid, 'int4'::regtype, 'integer'::regtype::oid, 0::regtype::text", (7,)),
    ("SELECT 23::regtype, 'pg_class'::regclass, 'pg_class'::regclass::oid, 'int[]'::regtype", ()),
    ("SELECT 'public'::regnamespace, 'public'::regnamespace::oid, 0::regclass", ()),
]
REFUSED = ["SELECT 'nosuch'::regclass", "SELECT 'nosuch'::regtype"]


def _answer(conn: psycopg.Connection, sql: str, params: tuple) -> tuple:
    cur = conn.execute(sql, params or None)
    return [d.name for d in cur.description], cur.fetchall()


def test_column_names_and_reg_casts_as_postgres(server, postgres_url: str, table_name: str) -> None:
    create = f"CREATE TABLE {table_name} (id int, s text, arr int[], d date)"
    insert = f"INSERT INTO {table_name} VALUES (1, 'ab', ARRAY[3, 4], '2021-05-06')"
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(insert)
        try:
            for sql, params in QUERIES:
                sql = sql.replace("{t}", table_name)
                assert _answer(ours, sql, params) == _answer(pg, sql, params), sql
            for sql in REFUSED:
                states = []
                for conn in (ours, pg):
                    with pytest.raises(psycopg.Error) as e:
                        conn.execute(sql)
                    states.append(e.value.sqlstate)
                assert states[0] == states[1], sql
            # a table's regclass is its name, its oid the one pg_class gives it
            rows = ours.execute(
                f"SELECT '{table_name}'::regclass::text, '{table_name}'::regclass::oid"
            ).fetchall()
            (oid,) = ours.execute(
                f"SELECT oid FROM pg_class WHERE relname = '{table_name}'"
            ).fetchone()
            assert rows == [(table_name, oid)]
        finally:
            pg.execute(f"DROP TABLE {table_name}")
