"""Arrays of json (``json[]``) as columns, literals, casts, subscripts, unnest and array_agg,
compared with PostgreSQL 15: each element keeps its text as written; json[] has no equality
or ordering (42883), as json has none; maintained in a materialized view through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE jarr (id int, j json[])",
    "INSERT INTO jarr VALUES (1, ARRAY['{\"a\": 1}'::json, '[1,  2]'::json]),"
    ' (2, \'{"{\\"b\\":2}",null,"\\"x y\\""}\'), (3, NULL), (4, \'{}\')',
]
STATEMENTS = [
    "SELECT id, j::text, j[1]::text, j[2]::text, j[3]::text, pg_typeof(j), pg_typeof(j[1]),"
    " cardinality(j), array_length(j, 1) FROM jarr ORDER BY id",
    "SELECT id, j[1] -> 'a', j[2] ->> 0 FROM jarr ORDER BY id",
    'SELECT ARRAY[\'{"a":1}\'::json]::text, \'{"{}", "[]", null}\'::json[]::text,'
    " ARRAY['1'::json, NULL]::text",
    'SELECT \'{"{}", "[]"}\'::json[]::text, \'{"{}", "[ ]"}\'::json[]::jsonb[]::text,'
    " ARRAY['{\"a\":  1}'::json]::text[]::text, ARRAY['{\"a\": 1}'::jsonb]::json[]::text",
    "SELECT array_agg(x::json ORDER BY x)::text FROM (VALUES ('1'), ('{\"x\": [1, 2]}')) v(x)",
    "SELECT id, u::text FROM jarr, unnest(j) u ORDER BY id, 2",
    "SELECT CAST(NULL AS json[]), '{}'::json[]::text, pg_typeof('{}'::json[])",
    "SELECT '{1,2'::json[]",
    'SELECT \'{"{", "x"}\'::json[]',
    "SELECT ARRAY['1'::json] = ARRAY['1'::json]",
    "SELECT j FROM jarr GROUP BY j",
    "SELECT DISTINCT j FROM jarr",
    "SELECT j FROM jarr ORDER BY j",
    "INSERT INTO jarr VALUES (5, '{\"not json\"}')",
]
MAINTAINED = [
    "SELECT id, j::text AS t, j[1]::text AS first, cardinality(j) AS n FROM jarr",
    "SELECT id, u::text AS u FROM jarr, unnest(j) u",
]
CHANGES = [
    "INSERT INTO jarr VALUES (6, ARRAY['{\"c\": [true]}'::json])",
    "UPDATE jarr SET j = array_append(j, '7'::json) WHERE id = 1",
    "DELETE FROM jarr WHERE id = 2",
]


def test_json_arrays_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "jarr", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)


def test_json_arrays_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "jarr", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, MAINTAINED, CHANGES, rows=_rows)


def _rows(conn, sql: str) -> tuple:  # noqa: ANN001
    return outcome(conn, sql, sort=True)


CATALOG = [
    "SELECT oid::int, typname, typelem::int, typarray::int, typcategory FROM pg_type"
    " WHERE oid IN (114, 199) ORDER BY 1",
    "SELECT format_type(199, -1), '_json'::regtype::text, 'json[]'::regtype::oid::int",
    "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
    " WHERE a.attrelid = 'jarr'::regclass AND a.attnum > 0 ORDER BY a.attnum",
    "SELECT column_name, data_type, udt_name FROM information_schema.columns"
    " WHERE table_name = 'jarr' ORDER BY ordinal_position",
]


def test_json_arrays_in_the_catalogs_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """json[] is _json (199) in pg_type, and an array column is ARRAY in information_schema."""
    setup = ["CREATE TABLE jarr (id int, j json[], n int[])"]
    with beside_postgres(tmp_path / "home", postgres_url, "jarr", *setup) as (ours, pg):
        same_outcomes(ours, pg, CATALOG)
