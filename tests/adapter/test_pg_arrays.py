"""Arrays compared with PostgreSQL 15: literals, casts from text, subscripts, cardinality,
array_length, ``= ANY``/``<> ALL``, array_agg and unnest (in FROM, LATERAL and in the select
list), ad hoc and as materialized views kept through
inserts, updates, deletes and a restart; rows are compared as PostgreSQL prints them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError
from changeflow.compute.scalars import array_text
from changeflow.compute.types import TEXT

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, materialize, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE arr (id int NOT NULL, g int, x int, s text, a int[], t text[])"
INSERT = (
    "INSERT INTO arr VALUES (1, 1, 3, 'b', '{1,2,3}', '{x,\"y z\"}'), (2, 1, NULL, 'a', "
    "ARRAY[4], '{}'), (3, 2, 5, NULL, NULL, ARRAY['q', NULL]), (4, 2, 7, 'c', '{7,NULL,9}', "
    "NULL), (5, NULL, 1, 'd', '{}', '{\"\",NULL,\"NULL\"}')"
)
CHANGES = [
    "INSERT INTO arr VALUES (6, 1, 2, 'e', ARRAY[2, 2], '{w}'), (7, 3, NULL, NULL, NULL, NULL)",
    "UPDATE arr SET a = ARRAY[x, id] WHERE id IN (2, 3)",
    "DELETE FROM arr WHERE id IN (1, 5)",
    "UPDATE arr SET g = 2, t = '{moved}' WHERE id = 6",
]
QUERIES = [
    "SELECT id, a, t, a[1], a[2], a[0], a[4], t[1], cardinality(a), array_length(a, 1) FROM arr",
    "SELECT id, a[g], a[g::bigint], a[length(s) + 0], a[1.6], a[id - 4], a[2:id], t[-1 + g] "
    "FROM arr",
    "SELECT id, 2 = ANY(a), 9 <> ALL(a), x = ANY(ARRAY[1, 3, NULL]), s = ANY(t) FROM arr",
    "SELECT id, ARRAY[id, x], ARRAY[s, 'k'], '{5,6}'::int[], (ARRAY[x, id])[2], "
    "array_length(a, 2), ARRAY[id]::text FROM arr",
    "SELECT g, array_agg(x ORDER BY id), array_agg(s ORDER BY s DESC NULLS LAST), "
    "array_agg(DISTINCT x ORDER BY x) FROM arr GROUP BY g",
    "SELECT g, array_agg(a ORDER BY id)::text FROM arr WHERE a IS NOT NULL AND cardinality(a)"
    " = 1 GROUP BY g",
    "SELECT id FROM arr WHERE 7 = ANY(a) OR 'q' = ANY(t)",
    "SELECT id, a < ARRAY[5], a = '{1,2,3}', t >= '{q}' FROM arr",
    "SELECT g, max(a), min(a), min(t), count(DISTINCT a) FROM arr GROUP BY g",
    "SELECT arr.id, u.v, u.n FROM arr, unnest('{1,7,NULL}'::int[]) WITH ORDINALITY AS u(v, n) "
    "WHERE u.v = ANY(arr.a)",
    "SELECT arr.id, u.x, u.n FROM arr, unnest(arr.a) WITH ORDINALITY AS u(x, n)",
    "SELECT id, unnest(t) FROM arr",
    "SELECT id, e * 2 FROM arr CROSS JOIN LATERAL unnest(a) AS e WHERE e > 1",
    "SELECT g, count(*), sum(e) FROM arr, unnest(arr.a) AS e GROUP BY g",
    "SELECT g, unnest(array_agg(id ORDER BY id)) FROM arr GROUP BY g",
    "SELECT o.id, ARRAY(SELECT i.id FROM arr i WHERE i.g = o.g ORDER BY i.id DESC) FROM arr o",
    "SELECT ARRAY(SELECT s FROM arr WHERE s IS NOT NULL ORDER BY s), ARRAY(SELECT x FROM arr "
    "WHERE false), cardinality(ARRAY(SELECT DISTINCT g FROM arr))",
    "SELECT id, a || x, x || a, a || a, a || NULL, t || s, '{0}' || a, array_remove(a, 2), "
    "array_remove(t, NULL), array_append(NULL, id), array_prepend(s, t), array_cat(a, '{0}') "
    "FROM arr",
]


def _shown(rows: list[tuple]) -> list[tuple]:
    """Rows as PostgreSQL prints them (an array as its text form), sorted."""

    def text(v: object) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, list | tuple):
            return array_text(tuple(None if e is None else str(e) for e in v), TEXT)
        return str(v)

    return sorted((tuple(text(v) for v in r) for r in rows), key=str)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "arr", CREATE, INSERT) as pair:
        yield pair


def test_arrays_ad_hoc_and_maintained_as_postgres(tmp_path: Path, both) -> None:
    ours, pg = both
    queries = [q for q in QUERIES if "array_agg(a" not in q]  # arrays of arrays: not here
    for i, sql in enumerate(queries):
        materialize(ours, pg, f"av{i}", sql)
    for n, change in enumerate([None, *CHANGES]):
        if change is not None:
            for c in (ours, pg):
                c.execute(change)
        if n == 2:  # the views' plans and array columns are read back after a restart
            ours.close()
            ours = changeflow.connect(tmp_path / "home", host_seconds=0)
            ours.autocommit = True
        for i, sql in enumerate(queries):
            want = _shown(pg.execute(sql).fetchall())
            assert _shown(ours.execute(sql).fetchall()) == want, (sql, change)
            assert _shown(ours.execute(f"SELECT * FROM av{i}").fetchall()) == want, (sql, change)
    ours.close()


REFUSED = [
    "SELECT '{1,2'::int[]",
    "SELECT '{a}'::int[]",
    "SELECT x[1] FROM arr",
    "SELECT a['x'] FROM arr",
    "SELECT a['1'::text] FROM arr",
    "SELECT 1 = ANY(x) FROM arr",
    "SELECT cardinality(x) FROM arr",
    "SELECT ARRAY[1, 'a'::text]",
    "SELECT ARRAY(SELECT id, g FROM arr)",
    "SELECT a || t FROM arr",
    "SELECT array_append(a, s) FROM arr",
    "SELECT 'x' || a FROM arr",
]


def test_array_errors_as_postgres_gives_them(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)


def test_unnest_of_a_column_runs_on_the_process_tier(tmp_path: Path) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE p (id int, a int[])")
    with pytest.raises(DatabaseError) as caught:
        conn.execute(
            "CREATE MATERIALIZED VIEW c WITH (CLUSTER = true) AS SELECT id, unnest(a) FROM p"
        )
    assert caught.value.sqlstate == "0A000" and "in-process tier" in str(caught.value)
    conn.execute("CREATE MATERIALIZED VIEW c AS SELECT id, unnest(a) FROM p")
    conn.execute("INSERT INTO p VALUES (1, '{3,4}')")
    assert sorted(conn.execute("SELECT * FROM c").fetchall()) == [(1, 3), (1, 4)]
    conn.close()


CATALOG = (
    "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_class "
    "c ON a.attrelid = c.oid WHERE c.relname = '{}' AND a.attnum > 0 ORDER BY a.attnum"
)


def test_the_catalog_names_array_types_as_postgres(both) -> None:
    ours, pg = both
    sql = CATALOG.format("arr")
    assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall()


U1, U2 = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12"
UUIDS = [
    "CREATE TABLE ua (id int NOT NULL, us uuid[])",
    f"INSERT INTO ua VALUES (1, ARRAY['{U1}'::uuid, NULL]), (2, '{{{U2},{U1}}}'), (3, NULL)",
]
UUID_QUERIES = [
    "SELECT id, us, us[2], cardinality(us), us::text FROM ua",
    f"SELECT id FROM ua WHERE '{U1}'::uuid = ANY(us)",
    "SELECT id, unnest(us) FROM ua",
    "SELECT array_agg(u ORDER BY u NULLS FIRST) FROM ua, unnest(ua.us) AS u",
    "SELECT id, ARRAY[NULL::uuid, us[1]] FROM ua",
]


def test_uuid_arrays_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """uuid[] as a column, a literal, a subscript's source, unnest's and array_agg's, ad hoc
    and as materialized views through a change."""
    with beside_postgres(tmp_path / "home", postgres_url, "ua", *UUIDS) as (ours, pg):
        for i, sql in enumerate(UUID_QUERIES):
            materialize(ours, pg, f"uv{i}", sql)
        for change in [None, f"UPDATE ua SET us = ARRAY[us[1], '{U2}'] WHERE id = 1"]:
            if change is not None:
                for c in (ours, pg):
                    c.execute(change)
            for i, sql in enumerate(UUID_QUERIES):
                want = _shown(pg.execute(sql).fetchall())
                assert _shown(ours.execute(sql).fetchall()) == want, (sql, change)
                assert _shown(ours.execute(f"SELECT * FROM uv{i}").fetchall()) == want, sql
