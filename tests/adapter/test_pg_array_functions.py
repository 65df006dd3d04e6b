"""array_ndims, array_dims, trim_array, array_fill, array_replace, array_position(s),
to_json and to_jsonb of other types compared with PostgreSQL 15: ad hoc and as materialized
views kept through inserts, updates and deletes; and the calls PostgreSQL refuses, with its
SQLSTATEs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE af (id int NOT NULL, a int[], t text[], n int, x numeric(6,2))"
INSERT = (
    "INSERT INTO af VALUES (1, '{1,2,1}', '{x,NULL,y}', 1, 1.50), (2, '{}', '{}', 0, NULL), "
    "(3, NULL, NULL, 2, 2.25), (4, '{NULL,3,NULL}', '{y}', NULL, 0)"
)
CHANGES = [
    "INSERT INTO af VALUES (5, '{5,5,5,5}', '{z,z}', 3, 9.99)",
    "UPDATE af SET a = '{2,1}', n = 1 WHERE id = 2",
    "DELETE FROM af WHERE id IN (1, 4)",
]
QUERIES = [
    "SELECT id, array_ndims(a), array_dims(a), array_dims(t), array_ndims(t) FROM af",
    "SELECT id, trim_array(a, 0), trim_array(t, least(cardinality(t), 1)) FROM af",
    "SELECT id, array_fill(n, ARRAY[2]), array_fill(x, ARRAY[coalesce(n, 0)]), "
    "array_fill('k'::text, ARRAY[1], ARRAY[1]) FROM af",
    "SELECT id, array_replace(a, 1, 7), array_replace(a, NULL, 0), array_replace(t, 'y', "
    "NULL), array_replace(a, n, id) FROM af",
    "SELECT id, array_position(a, 1), array_position(a, NULL), array_position(a, 1, 2), "
    "array_position(t, 'y'), array_positions(a, 1), array_positions(t, NULL) FROM af",
    "SELECT id, array_position(a, n::bigint), array_positions(a, 1.0), array_replace(a, 1, "
    "1.5) FROM af",
    "SELECT id FROM af WHERE array_position(a, 1) IS NOT NULL",
    "SELECT id, to_jsonb(a)::text, to_jsonb(x)::text, to_jsonb(t)::text FROM af",
    "SELECT id, to_json(a)::text, to_json(x)::text, to_json(t)::text, to_json(n)::jsonb::text,"
    " to_json(id > 1)::text, pg_typeof(to_json(t))::text FROM af",
]
AD_HOC = [
    "SELECT array_position('{1,2}', '2'), array_replace('{a,b}', 'a', 'c'), "
    "array_remove('{1,2}', 1), array_position(ARRAY[1, 2], '2'), array_positions(NULL, 1)",
    "SELECT array_fill(NULL::int, ARRAY[2]), array_fill(1.5, ARRAY[0]), trim_array(NULL::int[], 1)",
    "SELECT to_jsonb(1.50)::text, to_jsonb(true)::text, to_jsonb(date '2020-01-01')::text, "
    "to_jsonb(timestamptz '2020-01-01 00:00:01.5+00')::text, to_jsonb(interval '1 day')::text",
    "SELECT to_json(1.50)::text, to_json(E'a\\t\"b'::text)::text, to_json('NaN'::float8)::text,"
    " to_json(date '2020-01-01')::text, to_json(timestamptz '2020-01-01 00:00:01.5+00')::text,"
    " to_json('{\"a\": [1, 2]}'::jsonb)::text, to_json(NULL::int) IS NULL",
]
REFUSED = [
    "SELECT trim_array(ARRAY[1, 2], 3)",
    "SELECT trim_array(ARRAY[1, 2], -1)",
    "SELECT array_fill(7, NULL)",
    "SELECT array_fill(7, ARRAY[-1])",
    "SELECT array_fill('a', ARRAY[2])",
    "SELECT array_fill(7, ARRAY['a'])",
    "SELECT array_position(ARRAY[1, 2], 1, NULL)",
    "SELECT array_position(ARRAY[1, 2], 'a')",
    "SELECT array_position(ARRAY[1, 2], 'a'::text)",
    "SELECT array_ndims('{1,2}')",
    "SELECT array_dims(1)",
    "SELECT trim_array('{1,2}', 1)",
    "SELECT array_to_string('{1,2}', ',')",
    "SELECT cardinality('{1,2}')",
    "SELECT array_length('{1}', 1)",
    "SELECT to_jsonb('a')",
    "SELECT to_json('a')",
    "SELECT to_json(NULL)",
    "SELECT to_json(1) = to_json(1)",
    "SELECT array_replace(ARRAY[1], 'x'::text, 2)",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "af", CREATE, INSERT) as pair:
        yield pair


def test_array_functions_ad_hoc_and_maintained_as_postgres(both) -> None:
    ours, pg = both
    maintained_as_postgres(ours, pg, QUERIES, CHANGES)


def test_array_functions_of_literals_as_postgres(both) -> None:
    ours, pg = both
    for sql in AD_HOC:
        theirs = [tuple(list(v) if isinstance(v, list) else v for v in r) for r in pg.execute(sql)]
        mine = [tuple(list(v) if isinstance(v, tuple) else v for v in r) for r in ours.execute(sql)]
        assert mine == theirs, sql


def test_array_function_errors_as_postgres(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)
