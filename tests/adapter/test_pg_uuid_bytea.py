"""uuid and bytea compared with PostgreSQL 15: casts from text, hex output, length,
comparisons and aggregates, ad hoc and as materialized views kept through inserts, updates,
deletes and a restart; gen_random_uuid() ad hoc only."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, materialize, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE ub (id int NOT NULL, g int, u uuid, b bytea)"
INSERT = (
    "INSERT INTO ub VALUES (1, 1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x0102ff'), "
    "(2, 1, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12', 'abc'), (3, 2, NULL, '\\x'), "
    "(4, 2, '{b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', NULL), (5, NULL, "
    "'00000000000000000000000000000000', 'a\\\\b\\001')"
)
CHANGES = [
    "INSERT INTO ub VALUES (6, 1, 'ffffffff-9c0b-4ef8-bb6d-6bb9bd380a11', '\\xdeadbeef')",
    "UPDATE ub SET b = '\\x00', u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13' WHERE id = 3",
    "DELETE FROM ub WHERE id IN (1, 5)",
    "UPDATE ub SET g = 2 WHERE id = 2",
]
QUERIES = [
    "SELECT id, u, b, u::text, b::text, length(b) FROM ub",
    "SELECT id FROM ub WHERE u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' OR b = '\\x0102ff' "
    "OR u > 'b0000000-0000-0000-0000-000000000000'",
    "SELECT g, count(DISTINCT u), count(DISTINCT b), string_agg(u::text, ',' ORDER BY u DESC) "
    "FROM ub GROUP BY g",
    "SELECT a.id, b.id FROM ub a JOIN ub b ON a.u = b.u",
    "SELECT u, count(*) FROM ub GROUP BY u",
    "SELECT id, encode(b, 'hex'), encode(b, 'escape'), encode(b, 'base64'), "
    "decode(encode(b, 'base64'), 'base64'), decode(encode(b, 'hex'), 'hex'), "
    "decode(encode(b, 'escape'), 'escape'), pg_typeof(b), pg_typeof(u) FROM ub",
]


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "ub", CREATE, INSERT) as pair:
        yield pair


def test_uuid_and_bytea_ad_hoc_and_maintained_as_postgres(tmp_path: Path, both) -> None:
    ours, pg = both
    for i, sql in enumerate(QUERIES):
        materialize(ours, pg, f"ubv{i}", sql)
    for n, change in enumerate([None, *CHANGES]):
        if change is not None:
            for c in (ours, pg):
                c.execute(change)
        if n == 2:  # the views' plans and stored columns are read back after a restart
            ours.close()
            ours = changeflow.connect(tmp_path / "home", host_seconds=0)
            ours.autocommit = True
        for i, sql in enumerate(QUERIES):
            want = _sorted(pg.execute(sql).fetchall())
            assert _sorted(ours.execute(sql).fetchall()) == want, (sql, change)
            assert _sorted(ours.execute(f"SELECT * FROM ubv{i}").fetchall()) == want, (sql, change)
    ours.close()


REFUSED = [
    "SELECT 'a0eebc99'::uuid",
    "SELECT '\\xabc'::bytea",
    "SELECT '\\x0g'::bytea",
    "SELECT 'a\\9'::bytea",
    "SELECT u + 1 FROM ub",
    "SELECT u = b FROM ub",
    "SELECT length(u) FROM ub",
    "SELECT min(u) FROM ub",
    "SELECT max(b) FROM ub",
    "SELECT decode('zz', 'hex')",
    "SELECT decode('abc', 'hex')",
    "SELECT encode(b, 'nope') FROM ub",
    "SELECT decode('a\\9', 'escape')",
]


def test_uuid_and_bytea_errors_as_postgres_gives_them(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)


def test_random_values_ad_hoc_and_refused_in_views(tmp_path: Path) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE r (n int)")
    conn.execute("INSERT INTO r SELECT * FROM generate_series(1, 50)")
    conn.execute("INSERT INTO r SELECT * FROM generate_series(1, 5)")
    got = [u for (u,) in conn.execute("SELECT gen_random_uuid() FROM r").fetchall()]
    assert len(set(got)) == 55 and all(isinstance(u, uuid.UUID) and u.version == 4 for u in got)
    conn.execute("CREATE TABLE ids (id uuid NOT NULL, n int)")
    conn.execute("INSERT INTO ids SELECT gen_random_uuid(), n FROM r")
    assert conn.execute("SELECT count(DISTINCT id) FROM ids").fetchall() == [(55,)]
    rolled = [x for (x,) in conn.execute("SELECT random() FROM r").fetchall()]  # each row its own
    assert len(set(rolled)) == 55 and all(isinstance(x, float) and 0 <= x < 1 for x in rolled)
    conn.execute("CREATE TABLE rolls (x float8)")
    conn.execute("INSERT INTO rolls SELECT random() FROM r")
    assert conn.execute("SELECT count(DISTINCT x), max(x) < 1 FROM rolls").fetchall() == [
        (55, True)
    ]
    for view in ("MATERIALIZED VIEW", "VIEW"):
        for call in ("gen_random_uuid()", "random()", "localtimestamp"):
            with pytest.raises(DatabaseError) as caught:
                conn.execute(f"CREATE {view} v AS SELECT {call}, n FROM r")
            assert caught.value.sqlstate == "0A000"
    conn.close()


def test_the_catalog_names_uuid_and_bytea_as_postgres(both) -> None:
    ours, pg = both
    sql = (
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN "
        "pg_class c ON a.attrelid = c.oid WHERE c.relname = 'ub' AND a.attnum > 0 "
        "ORDER BY a.attnum"
    )
    assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall()
