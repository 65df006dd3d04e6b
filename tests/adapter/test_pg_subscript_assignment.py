"""Assignments into a column's elements, as PostgreSQL 15's: ``UPDATE … SET a[i] = v`` (an
array grown with NULLs, a NULL array made one, the value cast to the element type) and
``SET j['k'][0] = v`` (jsonb: missing steps made as objects or arrays, arrays padded with
nulls, negative positions from the end, a NULL column an empty object or array), several in
one SET and in MERGE; rows and SQLSTATEs compared with PostgreSQL, and a view kept through
them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE sa (id int, a int[], j jsonb, t text[])"
INSERT = (
    "INSERT INTO sa VALUES (1, '{1,2,3}', '{\"k\":1,\"arr\":[1,2]}', '{x}'), "
    "(2, NULL, NULL, NULL), (3, '{}', '[1,2]', '{}'), (4, '{5}', '\"s\"', NULL)"
)
BACK = " RETURNING id, a::text, j::text, t::text"
STATEMENTS = [
    s + BACK
    for s in [
        "UPDATE sa SET a[5] = 9 WHERE id = 1",
        "UPDATE sa SET a[1] = 9 WHERE id = 2",
        "UPDATE sa SET a[2] = 9 WHERE id = 2",
        "UPDATE sa SET a[1] = 9 WHERE id = 3",
        "UPDATE sa SET a[1] = '7', t[2] = 5 WHERE id = 1",
        "UPDATE sa SET a[1] = NULL, a[2] = a[1] + 1 WHERE id = 1",
        "UPDATE sa SET a[2.6] = 1, a[3] = 2 WHERE id = 1",
        "UPDATE sa SET j['k'] = '5' WHERE id = 1",
        "UPDATE sa SET j['n']['m'] = '5' WHERE id = 1",
        "UPDATE sa SET j['arr'][5] = '5' WHERE id = 1",
        "UPDATE sa SET j['arr'][-1] = '7' WHERE id = 1",
        "UPDATE sa SET j['k'] = NULL WHERE id = 1",
        "UPDATE sa SET j['x'] = '1' WHERE id = 2",
        "UPDATE sa SET j[0] = '1' WHERE id = 2",
        "UPDATE sa SET j[1] = '9' WHERE id = 3",
        "UPDATE sa SET j['q']['2']['w'] = to_jsonb(id), j['r'] = '{\"a\": [1]}', "
        "j['r']['a'][3] = '\"x\"' WHERE id = 1",
        "UPDATE sa SET j[0] = '5', a[1] = id * 10 WHERE id = 2",
        "UPDATE sa SET a[4] = 4 WHERE id = 3",
        "UPDATE sa SET j = NULL WHERE id = 3",
        "UPDATE sa SET j[0] = '\"first\"' WHERE id = 3",
    ]
] + [
    "MERGE INTO sa USING (VALUES (1, 100), (4, 400)) s(id, v) ON sa.id = s.id "
    "WHEN MATCHED THEN UPDATE SET a[2] = s.v, j['merged'] = to_jsonb(s.v)",
    "SELECT id, a::text, j::text, t::text FROM sa ORDER BY id",
]
REFUSED = [
    "UPDATE sa SET a[NULL] = 9 WHERE id = 1",
    "UPDATE sa SET j['arr'][-9] = '7' WHERE id = 1",
    "UPDATE sa SET j['k']['x'] = '1' WHERE id = 1",
    "UPDATE sa SET j['z'] = '9' WHERE id = 3",
    "UPDATE sa SET j['z'] = '9' WHERE id = 4",
    "UPDATE sa SET j['k'] = 5 WHERE id = 1",
    "UPDATE sa SET j[NULL] = '5' WHERE id = 1",
    "UPDATE sa SET a[2] = 1, a = '{1}' WHERE id = 1",
    "UPDATE sa SET id[1] = 1 WHERE id = 1",
    "UPDATE sa SET a[2] = 'x' WHERE id = 1",
]


def test_subscript_assignment_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "sa", CREATE, INSERT) as (ours, pg):
        ours.execute(
            "CREATE MATERIALIZED VIEW sa_text AS SELECT id, a::text AS a, j::text AS j FROM sa"
        )
        same_outcomes(ours, pg, STATEMENTS)
        same_errors(ours, pg, REFUSED)
        kept = "SELECT id, a, j FROM sa_text ORDER BY id"
        assert outcome(ours, kept) == outcome(pg, "SELECT id, a::text, j::text FROM sa ORDER BY id")


def test_an_element_below_the_first_is_refused_with_a_reason(tmp_path: Path) -> None:
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute(CREATE)
    conn.execute(INSERT)
    for sql in ("UPDATE sa SET a[0] = 9 WHERE id = 4", "UPDATE sa SET a[3] = 9 WHERE id = 3"):
        with pytest.raises(DatabaseError) as e:
            conn.execute(sql)
        assert e.value.sqlstate == "0A000" and "start at 1" in str(e.value), sql
    assert conn.execute("SELECT a FROM sa WHERE id IN (3, 4) ORDER BY id").fetchall() == [
        ((),),
        ((5,),),
    ]
    conn.close()
