"""The json type compared with PostgreSQL 15: ``::json`` casts and json columns keep the text
as written (spaces, key order, duplicate keys), are checked as JSON on the way in (22P02),
answer ``->``, ``->>``, ``#>``, ``#>>`` with the part of the text they name, and have no
equality or ordering (42883 for GROUP BY, DISTINCT, UNION, ORDER BY, PARTITION BY, min/max);
stored in tables, kept in views and materialized views, and read after a restart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from psycopg.types.string import TextLoader

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_errors  # noqa: E402

import changeflow

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE jt (id int NOT NULL, j json)",
    'INSERT INTO jt VALUES (1, \'{"a": 1,  "b": [1, 2 ,3], "a": "x"}\'),'
    " (2, '[10, {\"k\": null}, \"s\\u00e9\"]'), (3, NULL), (4, '  \"str\"  '), (5, 'null')",
]
QUERIES = [
    "SELECT id, j FROM jt",
    "SELECT id, j -> 'a', j ->> 'a', j -> 'b', j -> 1, j ->> 2, j -> 0 FROM jt",
    "SELECT id, j -> 'b' -> 1, j -> -1, (j -> 'b') ->> 0, j -> 'a' -> 'b' FROM jt",
    "SELECT id, j::text, j::jsonb, to_json(j) FROM jt",
    "SELECT id, j #> '{b,1}', j #>> '{b}', json_typeof(j), json_typeof(j -> 'b') FROM jt",
    "SELECT pg_typeof(j), pg_typeof(j -> 'a'), pg_typeof(j ->> 'a') FROM jt",
    "SELECT id, count(*) FROM jt GROUP BY id, j::text",
    "SELECT count(j), count(*), count(j -> 'a') FROM jt",
    "SELECT id, j IS NULL, COALESCE(j, '\"none\"') FROM jt",
    "SELECT id, j FROM jt UNION ALL SELECT 9, '{}'::json",
]
CONSTANTS = [
    "SELECT '{\"x\": [1, 2]}'::json, '{\"x\": [1,  2]}'::json -> 'x', CAST('3' AS json)",
    "SELECT '{\"a\":1}'::json ->> 'a', '[1,2]'::json -> 5, '[1,2]'::json ->> -2",
    'SELECT \'{"a": {"b": [1, "two" , null]}}\'::json #> \'{a,b,1}\','
    ' \'{"a": {"b": [1, "two" , null]}}\'::json #>> \'{a,b,2}\'',
    "SELECT json_array_length('[1, [2, 3], {\"a\": 4}]'), json_typeof('true')",
    'SELECT \'{"a":1}\'::jsonb::json, \'{"b": 2, "a": 1}\'::json::jsonb',
    "SELECT j::text::json FROM jt WHERE id = 1",
    "SELECT pg_typeof(json_extract_path(NULL, NULL)), pg_typeof(json_extract_path_text(NULL, 'a'))",
    "SELECT json_extract_path('{\"a\": {\"b\": [1,  2]}}', 'a', 'b'),"
    " json_extract_path_text('{\"a\": {\"b\": [1,  2]}}', 'a', 'b', '1')",
    "SELECT jsonb_extract_path('{\"a\": {\"b\": [1,  2]}}', 'a', 'b'),"
    " jsonb_extract_path_text('{\"a\": {\"b\": [1,  2]}}', 'a', 'b', '1')",
    "SELECT json_extract_path('{\"a\": 1}', 'a'), jsonb_extract_path('{\"a\": 1}', 'a')",
    "SELECT DISTINCT j::text FROM jt ORDER BY 1",
    "SELECT column_name, data_type, udt_name FROM information_schema.columns"
    " WHERE table_name = 'jt' ORDER BY 1",
]
ERRORS = [
    "SELECT '{bad'::json",
    "SELECT 'NaN'::json",
    "SELECT 5::json",
    "SELECT 'x'::text::json",
    "INSERT INTO jt VALUES (6, 'nope')",
    "SELECT json_array_length('{}')",
    "SELECT json_extract_path('{\"a\": 1}'::jsonb, 'a')",
    "SELECT j FROM jt GROUP BY j",
    "SELECT DISTINCT j FROM jt",
    "SELECT id FROM jt ORDER BY j",
    "SELECT j = j FROM jt",
    "SELECT '1'::json UNION SELECT '2'::json",
    "SELECT '1'::json UNION ALL SELECT '2'::json ORDER BY 1",
    "SELECT '1'::json INTERSECT SELECT '1'::json",
    "SELECT count(DISTINCT j) FROM jt",
    "SELECT string_agg('a', ',' ORDER BY j) FROM jt",
    "SELECT row_number() OVER (PARTITION BY j) FROM jt",
    "SELECT row_number() OVER (ORDER BY j) FROM jt",
    "SELECT DISTINCT ON (j) id FROM jt",
    "SELECT max(j) FROM jt",
    "SELECT j IN ('1'::json) FROM jt",
    "SELECT x FROM (VALUES ('1'::json)) v(x) GROUP BY ROLLUP (x)",
]
CHANGES = [
    "INSERT INTO jt VALUES (6, '{\"a\"  : [true, false]}')",
    'UPDATE jt SET j = \'{"z": true, "a": "y"}\' WHERE id = 3',
    "DELETE FROM jt WHERE id = 2",
    "UPDATE jt SET j = j -> 'a' WHERE id = 1",
]


def rows(conn, sql: str) -> tuple:  # noqa: ANN001
    return outcome(conn, sql, sort=True)


def test_json_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "jt", *SETUP) as (ours, pg):
        pg.adapters.register_loader("json", TextLoader)  # its text, as here
        pg.adapters.register_loader("jsonb", TextLoader)
        for sql in CONSTANTS:
            assert rows(ours, sql) == rows(pg, sql), sql
        same_errors(ours, pg, ERRORS)
        for conn in (ours, pg):
            conn.execute("CREATE VIEW jv AS SELECT id, j, j -> 'a' AS a FROM jt")
        maintained_as_postgres(ours, pg, QUERIES, CHANGES, rows=rows)
        assert rows(ours, "SELECT * FROM jv") == rows(pg, "SELECT * FROM jv")
        ours.close()
        ours = changeflow.connect(home, host_seconds=0)
        for i, sql in enumerate(QUERIES):
            assert rows(ours, sql) == rows(pg, sql), sql
            assert rows(ours, f"SELECT * FROM v{i}")[2] == rows(pg, sql)[2], sql
        assert rows(ours, "SELECT * FROM jv") == rows(pg, "SELECT * FROM jv")
        pg.execute("DROP VIEW jv")
        ours.close()
