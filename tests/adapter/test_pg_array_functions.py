"""array_ndims, array_dims, trim_array, array_fill, array_replace, array_position(s),
to_json and to_jsonb of other types compared with PostgreSQL 15: ad hoc and as materialized
views kept through inserts, updates and deletes; and the calls PostgreSQL refuses, with its
SQLSTATEs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

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
    "SELECT array_fill(7, ARRAY[0], ARRAY[5]), array_fill(7, ARRAY[0, 2]),"
    " array_fill(7, '{}'::int[]), array_fill(7, ARRAY[2, 0], ARRAY[3, 4]),"
    " array_fill(7, '{}'::int[], '{}'::int[]),"
    " array_fill(7, ARRAY[3], ARRAY[1]), array_fill('x'::text, ARRAY[0, 3], ARRAY[2, 2])",
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
    "SELECT array_fill(7, ARRAY[1, 2, 3, 4, 5, 6, 7])",
    "SELECT array_fill(7, ARRAY[NULL]::int[], ARRAY[2])",
    "SELECT array_fill(7, ARRAY[-1, 2])",
    "SELECT array_fill(7, ARRAY[2], ARRAY[NULL]::int[])",
    "SELECT array_fill(7, ARRAY[2], NULL)",
    "SELECT array_fill(7, ARRAY[2], ARRAY[1, 2])",
    "SELECT array_fill(7, ARRAY[100000, 100000])",
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


# PostgreSQL's answers that an array here cannot hold (a lower bound other than 1)
NOT_HELD = ["SELECT array_fill(7, ARRAY[2], ARRAY[0])"]


def test_array_fill_of_shapes_not_held_is_refused(both) -> None:
    ours, pg = both
    assert [pg.execute(sql).fetchone()[0] for sql in NOT_HELD] == [[7, 7]]
    for sql in NOT_HELD:
        with pytest.raises(DatabaseError) as caught:
            ours.execute(sql)
        assert caught.value.sqlstate == "0A000", sql
        assert "lower bounds of 1" in str(caught.value), sql
    sql = "SELECT array_fill(7, ARRAY[2, 2])::text, array_fill('x'::text, ARRAY[1, 2], ARRAY[1, 1])"
    assert ours.execute(sql).fetchall() == [("{{7,7},{7,7}}", (("x", "x"),))]
    assert pg.execute(sql).fetchall() == [("{{7,7},{7,7}}", [["x", "x"]])]


@pytest.mark.spark
def test_array_fill_in_a_cluster_tier_view(tmp_path: Path, spark) -> None:
    """array_fill's Spark form gives the process tier's arrays and errors."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        conn.execute("CREATE TABLE fl (id int, d int[], l int[])")
        conn.execute(
            "INSERT INTO fl VALUES (1, '{3}', '{1}'), (2, '{0,2}', '{1,1}'), (3, '{2,0}', '{3,4}'),"
            " (4, '{}', '{}'), (5, '{0}', '{5}')"
        )
        select = "SELECT id, array_fill(id, d) AS a, array_fill('x'::text, d, l) AS b FROM fl"
        conn.execute(f"CREATE MATERIALIZED VIEW fv WITH (CLUSTER = true) AS {select}")
        expected = [(1, (1, 1, 1), ("x", "x", "x")), (2, (), ()), (3, (), ())]
        expected += [(4, (), ()), (5, (), ())]
        assert conn.execute("SELECT * FROM fv ORDER BY id").fetchall() == expected
        assert conn.execute(f"{select} ORDER BY id").fetchall() == expected
        bad = {"'{2,2}', '{1,1}'": "0A000", "'{2}', '{0}'": "0A000", "'{-1}', '{1}'": "54000"}
        bad |= {"'{2}', '{1,1}'": "2202E", "'{NULL}', '{1}'": "22004", "NULL, '{1}'": "22004"}
        for i, (row, state) in enumerate(bad.items()):
            conn.execute(f"CREATE TABLE fl{i} (id int, d int[], l int[])")
            conn.execute(f"INSERT INTO fl{i} VALUES (1, {row})")
            with pytest.raises(DatabaseError) as caught:
                conn.execute(
                    f"CREATE MATERIALIZED VIEW fv{i} WITH (CLUSTER = true) AS"
                    f" SELECT array_fill(id, d, l) FROM fl{i}"
                )
                conn.execute(f"SELECT * FROM fv{i}").fetchall()
            assert caught.value.sqlstate == state, row
    finally:
        conn.close()
