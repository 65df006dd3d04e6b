"""``array_to_json`` (pretty too), ``json_strip_nulls``, ``json_object`` and ``jsonb_object``
of one text array or two, ``jsonb - text[]`` and ``json 'text'`` literals: here and on
PostgreSQL 15, ad hoc and in views kept through changes, with PostgreSQL's errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE jm (id int PRIMARY KEY, k text, v text, n numeric)",
    "INSERT INTO jm VALUES (1, 'a', 'x', 1.5), (2, 'b', NULL, 2), (3, 'c', 'z', NULL)",
]
AD_HOC = [
    "SELECT json_build_array('a', 1, 'e', json '{\"x\": 3, \"y\": [1,2,3]}')::text,"
    " json '[1, 2]'::text, (json '{\"a\": 5}' -> 'a')::text",
    "SELECT array_to_json('{1,5,null}'::int[])::text, array_to_json('{1,5}'::int[], true)::text",
    "SELECT array_to_json('{{1,2},{3,4}}'::int[])::text, array_to_json(ARRAY['a', 'b\"'])::text",
    "SELECT array_to_json(ARRAY[1.50, 2]::numeric[])::text, array_to_json(ARRAY[true])::text",
    "SELECT array_to_json(array_agg(n ORDER BY id))::text FROM jm",
    'SELECT json_strip_nulls(\'{"a": 1.50, "b":null, "c" : [2, null, 3], "d":{"e":3,'
    '"f":null}}\')::text, json_strip_nulls(\'[1, {"x":null}]\')::text,'
    " json_strip_nulls('1')::text",
    "SELECT json_object('{a,1,b,2,3,NULL,\"d e f\",\"a b c\"}')::text, json_object('{}')::text",
    "SELECT json_object('{{a,1},{b,2}}')::text, json_object('{a,b}', '{1,NULL}')::text",
    "SELECT jsonb_object('{a,1,b,2}')::text, jsonb_object('{a,b}', '{1,2}')::text",
    "SELECT json_object(array_agg(k ORDER BY id), array_agg(v ORDER BY id))::text FROM jm",
    'SELECT (\'{"a":1, "b":2, "c":3}\'::jsonb - \'{b,c}\'::text[])::text,'
    " ('[\"a\", \"b\", 1]'::jsonb - '{a}'::text[])::text",
]
ERRORS = [
    "SELECT json 'nope'",
    "SELECT json_object('{a,b,c}')",
    "SELECT jsonb_object('{a,b}', '{1}')",
    "SELECT json_object(ARRAY[NULL, 'x'])",
    "SELECT json_object('{{a,b,c}}')",
    "SELECT array_to_json(1)",
    "SELECT '1'::jsonb - '{a}'::text[]",
]
QUERIES = [
    "SELECT id, array_to_json(ARRAY[id, 2])::text AS a, json_object(ARRAY[k, v])::text AS o,"
    " jsonb_object(ARRAY[k], ARRAY[v])::text AS b FROM jm",
]
CHANGES = ["INSERT INTO jm VALUES (4, 'd', 'w', 4)", "UPDATE jm SET v = 'q' WHERE id = 2"]


def test_json_functions_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "jm", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        same_errors(ours, pg, ERRORS)
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
