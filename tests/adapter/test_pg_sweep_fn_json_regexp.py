"""json builders (``json_build_object``, ``json_build_array``, ``row_to_json``), jsonb edits
(``jsonb_pretty``, ``jsonb_insert``, ``#-``), the set-returning ``regexp_matches`` and
``regexp_split_to_table``, ``substring(s SIMILAR p ESCAPE e)`` and jsonpath queries here and
on PostgreSQL 15: the same outcomes ad hoc, and the same rows in views kept through changes
(json compared as text: psycopg reads PostgreSQL's json into Python values)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE jr (id int PRIMARY KEY, g int, x numeric(6,2), y float8, s text, d date,"
    " j jsonb)",
    "INSERT INTO jr VALUES (1, 1, 3, 1.5, 'a,b', '2024-01-02', '{\"a\": [1, 2], \"b\": {}}'),"
    " (2, 1, 5.25, 2.5, 'c', '2024-02-03', '[1, {\"c\": null}]'),"
    " (3, 2, NULL, NULL, NULL, NULL, NULL), (4, 2, -6, 4.0, 'x y,z', '2023-12-31', '7'),"
    " (5, 2, 6, 0.25, 'q\"r', '2023-12-31', '{}')",
]
JSON = [
    "SELECT json_build_object('a', 1, 'b', 'x')::text, json_build_array(1, 'a', NULL, true)::text",
    "SELECT json_build_object()::text, json_build_array()::text,"
    " json_build_object(1, 2, 'k', json_build_array(1.50, 'q'), 'j', '{\"x\": 1}'::jsonb)::text",
    "SELECT json_build_object(NULL, 1)",
    "SELECT json_build_object(1)",
    "SELECT id, json_build_object('s', s, 'x', x, 'd', d, 'y', y, 'j', j)::text FROM jr"
    " ORDER BY id",
    "SELECT row_to_json(jr)::text FROM jr ORDER BY id",
    "SELECT row_to_json(ROW(1, 'a', NULL, 1.5, true))::text, pg_typeof(row_to_json(ROW(1)))",
    "SELECT id, jsonb_pretty(j) FROM jr ORDER BY id",
    'SELECT jsonb_pretty(\'{"a":{},"b":[],"c":[{}],"d":"x\\u00e9"}\'), jsonb_pretty(\'[]\')',
    "SELECT jsonb_insert('{\"a\":[0,1,2]}', '{a,1}', '\"new\"')::text,"
    " jsonb_insert('{\"a\":[0,1,2]}', '{a,1}', '\"new\"', true)::text",
    "SELECT jsonb_insert('{\"a\":1}', '{b}', '2')::text, jsonb_insert('[1,2]', '{-1}', '9')::text,"
    " jsonb_insert('[1,2]', '{-1}', '9', true)::text, jsonb_insert('[1,2]', '{9}', '9')::text,"
    " jsonb_insert('{\"a\":1}', '{x,y}', '2')::text",
    "SELECT jsonb_insert('{\"a\":1}', '{a}', '2')",
    "SELECT jsonb_insert('1', '{a}', '2')",
    'SELECT (\'{"a":1,"b":{"c":2}}\'::jsonb #- \'{b,c}\')::text,'
    " ('[1,2,3]'::jsonb #- '{-1}')::text, ('{\"a\":[1,2]}'::jsonb #- '{a,0}')::text,"
    " ('{\"a\":1}'::jsonb #- '{x,y}')::text, ('{\"a\":1}'::jsonb #- '{}')::text",
    "SELECT '1'::jsonb #- '{a}'",
    "SELECT '[1]'::jsonb #- '{a}'",
    "SELECT id, (j #- '{a,0}')::text, jsonb_insert(j, '{0}', to_jsonb(s))::text FROM jr"
    " WHERE id <> 4 ORDER BY id",
]
REGEXP = [
    "SELECT regexp_matches('foobarbequebaz', '(bar)(beque)')::text",
    "SELECT regexp_matches('abcabc', '(b)(c)', 'g')::text,"
    " regexp_matches('a1b2', '[0-9]', 'g')::text AS n ORDER BY n",
    "SELECT regexp_matches('abc', 'x')",
    "SELECT regexp_matches('aBc', 'b', 'ig')::text",
    "SELECT id, regexp_matches(s, '[a-z]', 'g')::text AS m FROM jr ORDER BY id, m",
    "SELECT id, regexp_matches(s, '([a-z])(,)?')::text FROM jr ORDER BY id",
    "SELECT regexp_split_to_table('hello world  foo', '\\s+') AS w ORDER BY w",
    "SELECT id, regexp_split_to_table(s, ',') AS w FROM jr ORDER BY id, w",
    "SELECT * FROM regexp_split_to_table('a,b,c', ',')",
    "SELECT * FROM regexp_split_to_table('a,b,c', ',') AS t(x) ORDER BY x DESC",
    "SELECT m::text AS t FROM regexp_matches('a1b2', '([a-z])([0-9])', 'g') AS m ORDER BY t",
    "SELECT jr.id, w FROM jr, regexp_split_to_table(jr.s, ',') AS w ORDER BY jr.id, w",
    "SELECT id, m::text FROM jr CROSS JOIN LATERAL regexp_matches(jr.s, '[a-z]', 'g') AS m"
    " ORDER BY id, m",
    "SELECT regexp_matches('a')",
    "SELECT substring('foobar' SIMILAR '%#\"o_b#\"%' ESCAPE '#'),"
    " substring('foobar' SIMILAR 'f%' ESCAPE '#'), substring('foobar' SIMILAR 'x%' ESCAPE '#'),"
    " substring('foobar' SIMILAR '#\"f#\"%' ESCAPE '#')",
    "SELECT id, substring(s SIMILAR '%#\"[a-z]#\"%' ESCAPE '#') FROM jr ORDER BY id",
    "SELECT similar_to_escape('%#\"o_b#\"%', '#'), 'foobar' SIMILAR TO '%#\"o_b#\"%' ESCAPE '#'",
    "SELECT substring('foobar' SIMILAR '#\"a#\"b#\"c' ESCAPE '#')",
]
JSONPATH = [
    "SELECT jsonb_path_exists('{\"a\":[1,2,3]}', '$.a[*] ? (@ > 2)'),"
    " jsonb_path_exists('{\"a\":{\"b\":1}}', '$.a.b'),"
    " jsonb_path_exists('{\"a\":{\"b\":1}}', '$.a.c')",
    "SELECT jsonb_path_query('{\"a\":[1,2,3]}', '$.a[*]')::text AS v ORDER BY v",
    "SELECT jsonb_path_query_array('{\"a\":[1,2,3]}', '$.a[1 to 2]')::text,"
    " jsonb_path_query_first('{\"a\":[1,2,3]}', '$.a[last]')::text,"
    ' jsonb_path_query_array(\'{"a":[{"b":1},{"b":2},{"c":3}]}\', \'$.a.b\')::text',
    'SELECT jsonb_path_query_array(\'{"a":[{"b":1,"n":"x"},{"b":2,"n":"y"}]}\','
    " '$.a[*] ? (@.b >= 2 || @.n == \"x\").n')::text",
    'SELECT jsonb_path_query_array(\'{"a":{"x":1,"y":[2]}}\', \'$.a.*\')::text,'
    " jsonb_path_query_array('[1,[2,3]]', '$[*]')::text,"
    " jsonb_path_query_array('{\"a\":5}', 'lax $.a[0]')::text",
    "SELECT jsonb_path_exists('{\"a\":1}', 'strict $.b')",
    "SELECT jsonb_path_exists('{\"a\":[1,\"x\",null]}', '$.a[*] ? (@ == null)'),"
    " jsonb_path_exists('{\"a\":[1,\"x\"]}', '$.a ? (exists(@[*] ? (@ > 0)))')",
    "SELECT v::text AS t FROM jsonb_path_query('{\"a\":[1,2]}', '$.a[*]') AS v ORDER BY t",
    "SELECT id, jsonb_path_query_first(j, '$.a[0]')::text, jsonb_path_exists(j, '$.b') FROM jr"
    " ORDER BY id",
    "SELECT jsonb_path_query_array('[1, 5, 9]', '$[*] ? (@ > $min && @ < $max)',"
    ' \'{"min": 2, "max": 10}\')::text',
    "SELECT jsonb_path_exists('[1]', '$[*] ? (@ > $x)', '{}')",
    "SELECT jsonb_path_exists('[1]', '$[*] ? (@ > 0)', '[1]')",
    "SELECT jsonb_path_exists('{\"a\":1}', 'strict $.b', '{}', true),"
    " jsonb_path_query_first('[1]', 'strict $[3]', '{}', true)",
    "SELECT v::text AS t FROM jsonb_path_query('[1, 2]', 'strict $[5]', '{}', true) AS v",
    "SELECT jsonb_path_match('{\"a\":1}', '$.a == 1'), jsonb_path_exists('{\"a\":1}',"
    " '$.a == 2'), jsonb_path_query_array('{\"a\":1}', '$.a == 2 || $.a > 0')::text",
    "SELECT jsonb_path_match('{\"a\":1}', '$.a')",
    "SELECT jsonb_path_match('{\"a\":[1,2]}', 'exists($.a[*] ? (@ > 1))'),"
    " '{\"a\":[1,2]}'::jsonb @@ '$.a[*] > 1', '{\"a\":\"x\"}'::jsonb @@ '$.a > 1',"
    " jsonb_path_match('{\"a\":1}', '$.a', '{}', true), '{\"a\":1}'::jsonb @@ '$.a'",
    "SELECT id, j @@ '$.a[*] > 1', j @? '$.a ? (@ == 1)' FROM jr ORDER BY id",
    'SELECT jsonb_path_query_array(\'[{"n":"Abc"},{"n":"xyz"},{"n":1}]\','
    ' \'$[*] ? (@.n like_regex "^a" flag "i").n\')::text,'
    ' jsonb_path_query_array(\'[{"n":"Abc"},{"n":"xyz"}]\','
    " '$[*] ? (@.n starts with \"x\").n')::text",
    'SELECT jsonb_path_query_array(\'{"a":[1,2,3],"b":"x","c":{}}\', \'$.a.size()\')::text,'
    ' jsonb_path_query_array(\'{"a":[1,2,3],"b":"x","c":{}}\', \'$.*.type()\')::text,'
    " jsonb_path_query_array('[-1.5, 2.25, \"3.5\"]', '$[*].double()')::text,"
    " jsonb_path_query_array('[-1.5, 2.25]', '$[*].abs()')::text,"
    " jsonb_path_query_array('[-1.5, 2.25]', '$[*].floor()')::text,"
    " jsonb_path_query_array('[-1.5, 2.25]', '$[*].ceiling()')::text",
    "SELECT jsonb_path_exists('{\"a\":[1,2,3]}', '$.a ? (@.size() > 2)'),"
    ' jsonb_path_match(\'{"a":"hello"}\', \'$.a like_regex "l+"\')',
    "SELECT jsonb_path_query_array('{\"a\":\"x\"}', '$.a.abs()')",
    "SELECT jsonb_path_query_array('{\"a\":\"x\"}', 'strict $.a.size()')",
]
QUERIES = [
    "SELECT id, json_build_object('s', s, 'x', x)::text AS o, json_build_array(g, d)::text AS a"
    " FROM jr",
    "SELECT id, row_to_json(jr)::text AS r FROM jr",
    "SELECT id, jsonb_pretty(j) AS p, (j #- '{0}')::text AS d FROM jr WHERE id <> 4",
    "SELECT id, regexp_matches(s, '[a-z]', 'g')::text AS m FROM jr",
    "SELECT id, regexp_split_to_table(s, ',') AS part FROM jr",
    "SELECT id, substring(s SIMILAR '%#\"[a-z]#\"%' ESCAPE '#') AS f FROM jr",
    # NULL of arguments that are not NULL: the view's column is nullable
    "SELECT id, regexp_match(coalesce(s, ''), 'zz')::text AS r, (j -> 'k')::text AS k,"
    " jsonb_path_query_first(j, '$.nope')::text AS f, j @? 'strict $.a' AS e,"
    " array_length('{}'::int[], 1) AS n FROM jr",
    "SELECT id, jsonb_path_query(j, 'lax $.a[*]')::text AS v,"
    " jsonb_path_exists(j, '$.a') AS e FROM jr",
]
CHANGES = [
    "INSERT INTO jr VALUES (6, 1, 1, 0, 'm,n,o', '2024-03-01', '{\"a\": [9]}')",
    "UPDATE jr SET s = 'zz', j = '[3]' WHERE id = 1",
    "DELETE FROM jr WHERE id IN (2, 5)",
]


def test_json_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "jr", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, JSON)


def test_regexp_sets_and_similar_substring_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "jr", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, REGEXP)


def test_jsonpath_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """jsonpath's everyday subset: keys, wildcards, subscripts, filters, lax and strict."""
    with beside_postgres(tmp_path / "home", postgres_url, "jr", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, JSONPATH)


def test_json_and_regexp_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "jr", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
