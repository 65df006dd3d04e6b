"""to_json's column is json (OID 114) on the wire, as PostgreSQL 15's: psycopg reads the same
values from both, in text and in binary."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.postgres

SQL = (
    "SELECT to_json(ARRAY['a', NULL]) AS j, to_json(1.5) AS n, to_json(true) AS b,"
    " to_json('{\"k\": [1, 2]}'::jsonb) AS o"
)


def test_to_json_on_the_wire_as_postgres(server, postgres_url: str) -> None:
    with server.connect() as ours, psycopg.connect(postgres_url) as pg:
        for binary in (False, True):
            mine = ours.cursor(binary=binary).execute(SQL)
            theirs = pg.cursor(binary=binary).execute(SQL)
            assert [d.type_code for d in mine.description] == [114] * 4
            assert [d.type_code for d in theirs.description] == [114] * 4
            assert mine.fetchall() == theirs.fetchall() == [(["a", None], 1.5, True, {"k": [1, 2]})]


def test_json_column_on_the_wire_as_postgres(server, postgres_url: str) -> None:
    """A json column and ``->`` on it are json (OID 114), their text as written; the same
    values from both, in text and in binary."""
    setup = ["CREATE TABLE jw (id int, j json)", "INSERT INTO jw VALUES (1, '{\"a\":  [1, 2]}')"]
    query = "SELECT j, j -> 'a', j ->> 'a' FROM jw"
    with server.connect() as ours, psycopg.connect(postgres_url) as pg:
        pg.execute("DROP TABLE IF EXISTS jw")
        for conn in (ours, pg):
            for sql in setup:
                conn.execute(sql)
        for binary in (False, True):
            mine = ours.cursor(binary=binary).execute(query)
            theirs = pg.cursor(binary=binary).execute(query)
            assert [d.type_code for d in mine.description] == [114, 114, 25]
            assert [d.type_code for d in theirs.description] == [114, 114, 25]
            assert mine.fetchall() == theirs.fetchall() == [({"a": [1, 2]}, [1, 2], "[1, 2]")]
        assert ours.execute("SELECT j::text FROM jw").fetchall() == [('{"a":  [1, 2]}',)]
        pg.execute("DROP TABLE jw")
        pg.commit()


def test_json_array_column_on_the_wire_as_postgres(server, postgres_url: str) -> None:
    """A json[] column is json[] (OID 199) on the wire, an element of it json (114); the
    same values from both, in text and in binary."""
    setup = [
        "CREATE TABLE jaw (id int, j json[])",
        "INSERT INTO jaw VALUES (1, ARRAY['{\"a\":  [1, 2]}'::json, NULL, '\"x y\"'])",
    ]
    query = "SELECT j, j[1], ARRAY['1'::json, '[]'] AS lit, j::text FROM jaw"
    with server.connect() as ours, psycopg.connect(postgres_url) as pg:
        pg.execute("DROP TABLE IF EXISTS jaw")
        for conn in (ours, pg):
            for sql in setup:
                conn.execute(sql)
        try:
            for binary in (False, True):
                mine = ours.cursor(binary=binary).execute(query)
                theirs = pg.cursor(binary=binary).execute(query)
                assert [d.type_code for d in mine.description] == [199, 114, 199, 25]
                assert [d.type_code for d in theirs.description] == [199, 114, 199, 25]
                expected = [
                    (
                        [{"a": [1, 2]}, None, "x y"],
                        {"a": [1, 2]},
                        [1, []],
                        '{"{\\"a\\":  [1, 2]}",NULL,"\\"x y\\""}',
                    )
                ]
                assert mine.fetchall() == theirs.fetchall() == expected
        finally:
            pg.execute("DROP TABLE jaw")
            pg.commit()
