"""The oid type flows as PostgreSQL 15's types do: a view's oid column read through a join, a
CTE, a subquery or min/max is still an oid on the way out (and to pg_typeof); arithmetic,
negation, sum and avg of an oid are refused (42883); a cast to oid takes a smallint's or
integer's bits (``(-1)::int::oid`` is 4294967295), range-checks a bigint (22003) and refuses
other numbers (42846), ad hoc and in views through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE tof (id int NOT NULL, o int8, i int4)"
INSERT = "INSERT INTO tof VALUES (1, 23, -1), (2, 4294967295, 5), (3, NULL, NULL)"
VIEWS = [
    "CREATE VIEW tof_v AS SELECT id, o::oid AS x FROM tof WHERE o >= 0",
    "CREATE MATERIALIZED VIEW tof_m AS SELECT id, i::oid AS y FROM tof",
]
READS = [
    "SELECT x FROM tof_v ORDER BY 1",
    "SELECT t.x, q.id FROM tof_v t JOIN tof q ON q.id = t.id ORDER BY 2",
    "WITH c AS (SELECT x FROM tof_v) SELECT x FROM c ORDER BY 1",
    "SELECT s.x FROM (SELECT x FROM tof_v) s ORDER BY 1",
    "SELECT max(x), min(y) FROM tof_v JOIN tof_m USING (id)",
    "SELECT x::bigint + 1 FROM tof_v ORDER BY 1",
    "SELECT y, id FROM tof_m ORDER BY 2",
    "SELECT m.y, v.x FROM tof_m m LEFT JOIN tof_v v ON v.id = m.id ORDER BY m.id",
    "SELECT x FROM tof_v WHERE x = 23",
    "SELECT i::oid, (-1)::int::oid, (-1)::smallint::oid, 16384::oid FROM tof ORDER BY id",
    "SELECT s.z FROM (SELECT 5::oid AS z) s",
]
ERRORS = [
    "SELECT x + 0 FROM tof_v",
    "SELECT 1 * x FROM (SELECT x FROM tof_v) s",
    "WITH c AS (SELECT y FROM tof_m) SELECT y - 1 FROM c",
    "SELECT -x FROM tof_v",
    "SELECT sum(x) FROM tof_v",
    "SELECT avg(y) FROM tof_m",
    "SELECT 5::oid + 1",
    "SELECT (o - 24)::oid FROM tof",
    "SELECT (-1)::bigint::oid",
    "SELECT 4294967296::oid",
    "SELECT 1.5::oid",
    "SELECT 1.5::float8::oid",
]
TYPES = [
    "SELECT pg_typeof(x), pg_typeof(id) FROM tof_v ORDER BY id LIMIT 1",
    "SELECT pg_typeof(y) FROM (SELECT y FROM tof_m) s LIMIT 1",
    "SELECT pg_typeof(5::oid), pg_typeof(5::oid::bigint)",
]
TYPE_OIDS = {"integer": 23, "bigint": 20, "oid": 26}


def test_oid_flows_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "tof", CREATE, INSERT) as (ours, pg):
        try:
            for sql in VIEWS:
                for conn in (ours, pg):
                    conn.execute(sql)
            for change in (
                None,
                "INSERT INTO tof VALUES (4, 5, -7)",
                "DELETE FROM tof WHERE id = 1",
            ):
                if change is not None:
                    for conn in (ours, pg):
                        conn.execute(change)
                    pg.execute("REFRESH MATERIALIZED VIEW tof_m")  # kept here, refreshed there
                same_outcomes(ours, pg, READS + ERRORS + TYPES)
                for sql in READS:  # the oid columns' type on the way out
                    mine = [TYPE_OIDS[d[1]] for d in ours.execute(sql).description]
                    assert mine == [d.type_code for d in pg.execute(sql).description], sql
        finally:
            pg.execute("DROP TABLE tof CASCADE")
            pg.execute("CREATE TABLE tof (id int)")  # for beside_postgres to drop
