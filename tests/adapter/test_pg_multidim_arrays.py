"""Arrays of several dimensions (``ARRAY[[1,2],[3,4]]``, ``'{{1,2},{3,4}}'::int[]``) compared
with PostgreSQL 15: literals, subscripts, the shape functions, unnest, casts, comparison,
concatenation, errors (2202E, 22P02, 0A000, 22000), in ad hoc queries and in a view. A table's
or materialized view's column stores one dimension: storing more is refused (0A000)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE mdim (id int, a int[], t text[])",
    "INSERT INTO mdim VALUES (1, ARRAY[1,2], ARRAY['a b', NULL]), (2, ARRAY[3,4], ARRAY['c',"
    " '{']), (3, NULL, NULL), (4, '{}', '{}')",
]
STATEMENTS = [
    "SELECT ARRAY[[1,2],[3,4]]::text, '{{1,2},{3,4}}'::int[]::text, ARRAY[[[1]]]::text",
    "SELECT (ARRAY[[1,2],[3,4]])[2][1], (ARRAY[[1,2],[3,4]])[1], (ARRAY[[1,2],[3,4]])[1][5],"
    " (ARRAY[[1,2],[3,4]])[1][2][1], (ARRAY[[1,2],[3,4]])[NULL][1]",
    "SELECT array_dims(ARRAY[[1,2],[3,4]]), array_ndims(ARRAY[[1,2],[3,4]]),"
    " array_length(ARRAY[[1,2],[3,4]], 2), array_length(ARRAY[[1,2],[3,4]], 3),"
    " array_upper(ARRAY[[1,2,3],[4,5,6]], 2), array_lower(ARRAY[[1,2],[3,4]], 2),"
    " cardinality(ARRAY[[1,2],[3,4]]), array_dims('{{{1,2}},{{3,4}}}'::int[])",
    "SELECT unnest(ARRAY[[1,2],[3,4]])",
    "SELECT u FROM unnest('{{a,b},{c,NULL}}'::text[]) u ORDER BY 1",
    "SELECT ARRAY[[1,2],[3]]",
    "SELECT ARRAY[ARRAY[1,2], NULL]",
    "SELECT ARRAY[ARRAY[1,2], ARRAY[]::int[]]",
    "SELECT ARRAY[ARRAY[]::int[], ARRAY[]::int[]]::text",
    "SELECT '{{1,2},{3}}'::int[]",
    "SELECT '{{1,2},3}'::int[]",
    "SELECT '{{},{}}'::int[]",
    'SELECT \'{ { 1 , 2 } , { 3 , 4 } }\'::int[]::text, \'{{"a b",NULL},{"c","{"}}\'::text[]::text,'
    " ARRAY[['a b', NULL], ['c', '{']]::text",
    "SELECT ARRAY[[1,2],[3,4]] = '{{1,2},{3,4}}', ARRAY[[1,2],[3,4]] = ARRAY[1,2,3,4],"
    " ARRAY[[1,2],[3,4]] < ARRAY[1,2,3,4], ARRAY[[1,2],[3,4]] > ARRAY[1,2,3],"
    " ARRAY[[1,2]] < ARRAY[[1,3]]",
    "SELECT a::text FROM (VALUES (ARRAY[[1,2],[3,4]]), (ARRAY[1,2,3,4]), (ARRAY[[1],[2],[3],"
    "[4]]), (ARRAY[0])) v(a) ORDER BY a",
    "SELECT ARRAY[[1.5,2],[3,4]]::text, ARRAY[ARRAY[1,2], ARRAY[3.5,4]]::text,"
    " ARRAY[[1,2],[3,4]]::numeric[]::text, '{{1,2}}'::int[]::text[]::text",
    "SELECT 3 = ANY(ARRAY[[1,2],[3,4]]), 5 = ANY(ARRAY[[1,2],[3,4]]),"
    " array_to_string(ARRAY[[1,NULL],[3,4]], ',', '*')",
    "SELECT trim_array(ARRAY[[1,2],[3,4]], 1)::text, array_replace(ARRAY[[1,2],[3,2]], 2, 9)::text,"
    " array_fill(7, ARRAY[2,3])::text, array_cat(ARRAY[[1,2]], ARRAY[[3,4]])::text,"
    " array_cat(ARRAY[1,2], ARRAY[[3,4]])::text, (ARRAY[[1,2]] || ARRAY[5,6])::text",
    "SELECT array_cat(ARRAY[[1,2]], ARRAY[3])",
    "SELECT array_position(ARRAY[[1,2],[3,4]], 3)",
    "SELECT array_append(ARRAY[[1,2],[3,4]], 3)",
    "SELECT array_remove(ARRAY[[1,2]], 1)",
    "SELECT id, ARRAY[a, a]::text, (ARRAY[a, a])[2][1], array_dims(ARRAY[a, a]),"
    " ARRAY[t, t]::text FROM mdim ORDER BY id",
    "SELECT id, ARRAY[a, ARRAY[5,6]] FROM mdim WHERE id = 4",
    "SELECT array_agg(a)::text FROM (VALUES (ARRAY[1,2]), (ARRAY[3,4])) v(a)",
    "SELECT array_agg(a ORDER BY a DESC)::text FROM (VALUES (ARRAY[1,2]), (ARRAY[3,4])) v(a)",
    "SELECT array_agg(a) FROM (VALUES (ARRAY[1,2]), (ARRAY[3])) v(a)",
    "SELECT array_agg(a) FROM (VALUES (ARRAY[1,2]), (NULL)) v(a)",
    "SELECT array_agg(a) FROM (VALUES (ARRAY[1,2]), ('{}')) v(a)",
    "SELECT array_agg(a) FROM (VALUES ('{}'::int[]), (ARRAY[1])) v(a)",
    "SELECT array_agg(a)::text FROM (VALUES (ARRAY[[1,2]]), (ARRAY[[3,4]])) v(a)",
    "SELECT ARRAY(SELECT ARRAY[i, i] FROM generate_series(1, 2) i)::text",
    "SELECT k, array_agg(ARRAY[k, x] ORDER BY x)::text FROM (VALUES (1, 1), (1, 2), (2, 5))"
    " v(k, x) GROUP BY k ORDER BY k",
    "SELECT id, array_agg(t)::text FROM mdim WHERE id < 3 GROUP BY id ORDER BY id",
    "CREATE VIEW mdim_v AS SELECT id, ARRAY[a, a] AS aa, (ARRAY[a, a])[2][2] AS x FROM mdim",
    "SELECT id, aa::text, x, array_ndims(aa), cardinality(aa) FROM mdim_v ORDER BY id",
    "SELECT id, u FROM mdim_v, unnest(aa) u ORDER BY id, u",
]
REFUSED = [
    "INSERT INTO mdim VALUES (5, ARRAY[[1,2],[3,4]], NULL)",
    "INSERT INTO mdim (id, t) VALUES (5, '{{a},{b}}')",
    "UPDATE mdim SET a = ARRAY[a, a] WHERE id = 1",
]


def test_multidimensional_arrays_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "mdim", *SETUP) as (ours, pg):
        try:
            same_outcomes(ours, pg, STATEMENTS)
        finally:
            pg.execute("DROP VIEW IF EXISTS mdim_v")


def test_storing_several_dimensions_is_refused(tmp_path: Path, postgres_url: str) -> None:
    """PostgreSQL stores them; here a stored array has one dimension: 0A000, nothing written."""
    with beside_postgres(tmp_path / "home", postgres_url, "mdim", *SETUP) as (ours, _):
        for sql in REFUSED:
            assert outcome(ours, sql) == ("error", "0A000"), sql
        assert outcome(ours, "SELECT id, a::text FROM mdim ORDER BY id") == (
            "ok",
            ["id", "a"],
            [("1", "{1,2}"), ("2", "{3,4}"), ("3", "NULL"), ("4", "{}")],
        )
