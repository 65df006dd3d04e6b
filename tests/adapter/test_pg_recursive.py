"""WITH RECURSIVE compared with PostgreSQL 15: the same statements on the same data through
inserts, updates and deletes (UNION ALL and UNION); a recursion without end is stopped with an
error; a materialized view keeps it exact through the same changes and a restart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError
from changeflow.compute import recursive as R

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import (  # noqa: E402
    beside_postgres,
    maintained_as_postgres,
    same_errors,
    same_outcomes,
    unordered,
)

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE edge (a int, b int, w numeric(4,1))"
INSERT = "INSERT INTO edge VALUES (1, 2, 1.5), (2, 3, 2), (3, 1, 0.5), (3, 4, 1), (5, NULL, 1)"
CHANGES = [
    "INSERT INTO edge VALUES (4, 6, 2), (6, 2, 1)",
    "UPDATE edge SET b = 5 WHERE a = 3 AND b = 1",
    "DELETE FROM edge WHERE a = 2",
]
QUERIES = [
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
    "WITH RECURSIVE reach(a, b) AS (SELECT a, b FROM edge UNION"
    " SELECT reach.a, edge.b FROM reach JOIN edge ON reach.b = edge.a) SELECT * FROM reach",
    "WITH RECURSIVE walk(node, depth, cost) AS (SELECT 1, 0, 0.0::numeric(4,1) UNION ALL"
    " SELECT edge.b, depth + 1, (cost + edge.w)::numeric(4,1) FROM walk JOIN edge"
    " ON walk.node = edge.a WHERE depth < 6)"
    " SELECT node, count(*), min(depth), max(cost) FROM walk GROUP BY node",
    "WITH RECURSIVE up AS (SELECT 4 AS x UNION SELECT edge.a FROM up, edge WHERE edge.b = up.x),"
    " named AS (SELECT x, x * 10 AS y FROM up) SELECT * FROM named WHERE y > 10",
]

# Recursive terms PostgreSQL refuses (42P19, FOR UPDATE 0A000); some would never end here.
WELL_FORMED = [
    f"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL {term}) SELECT * FROM r"
    for term in [
        "SELECT n + 1 FROM r WHERE n IN (SELECT n FROM r)",
        "SELECT n + 1 FROM r WHERE EXISTS (SELECT 1 FROM r)",
        "SELECT (SELECT max(n) FROM r) FROM edge",
        "SELECT r.n + 1 FROM edge LEFT JOIN r ON r.n = edge.a",
        "SELECT r.n + 1 FROM r RIGHT JOIN edge ON r.n = edge.a",
        "SELECT r.n + 1 FROM r FULL JOIN edge ON r.n = edge.a",
        "SELECT r.n + 1 FROM r JOIN edge ON true RIGHT JOIN edge e2 ON e2.a = r.n",
        "SELECT * FROM (SELECT n + 1 FROM r UNION ALL SELECT n + 2 FROM r) s",
        "(SELECT 3 EXCEPT SELECT n + 1 FROM r WHERE n < 5)",
        "(SELECT n + 1 FROM r WHERE n < 5 EXCEPT ALL SELECT 3)",
        "(SELECT n + 1 FROM r WHERE n < 5 INTERSECT ALL SELECT 3)",
        "SELECT count(*)::int FROM r",
        "SELECT n + 1 FROM r WHERE n < 5 FOR UPDATE",
    ]
]


def _rows(conn: Any, sql: str) -> list:
    return sorted(conn.execute(sql).fetchall(), key=str)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "edge", CREATE, INSERT) as pair:
        yield pair


def test_recursive_queries_as_postgres(both) -> None:
    ours, pg = both
    for change in [None, *CHANGES]:
        if change is not None:
            for c in (ours, pg):
                c.execute(change)
        for sql in QUERIES:
            assert _rows(ours, sql) == _rows(pg, sql), (change, sql)


def test_recursive_errors(both, monkeypatch: pytest.MonkeyPatch) -> None:
    ours, pg = both
    same_errors(
        ours,
        pg,
        [
            "WITH RECURSIVE r(n) AS (SELECT n FROM r UNION SELECT 1) SELECT * FROM r",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n::bigint + 1 FROM r WHERE n < 3)"
            " SELECT * FROM r",
            *WELL_FORMED,
        ],
    )
    same_outcomes(  # the reference is allowed on EXCEPT's left and in INTERSECT
        ours,
        pg,
        [
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL (SELECT n + 1 FROM r WHERE n < 5"
            f" {op} SELECT generate_series(2, 3))) SELECT * FROM r ORDER BY n"
            for op in ("EXCEPT", "INTERSECT")
        ],
    )
    monkeypatch.setattr(R, "MAX_STEPS", 50)
    endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT * FROM r"
    with pytest.raises(DatabaseError) as caught:
        ours.execute(endless)
    assert caught.value.sqlstate == "54001" and "fixed point" in str(caught.value)


def test_recursive_views_maintained_and_rehydrated(tmp_path: Path, postgres_url: str) -> None:
    """Each query as a materialized view (the transitive closure among them), compared with
    PostgreSQL after each change of edges, then again after a restart and a later change."""
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "edge", CREATE, INSERT) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
        ours.close()
        again = changeflow.connect(home, host_seconds=0)
        again.autocommit = True
        try:
            for change in [None, "INSERT INTO edge VALUES (2, 3, 1), (4, 7, 1)"]:
                if change is not None:
                    for conn in (again, pg):
                        conn.execute(change)
                for i, sql in enumerate(QUERIES):
                    assert unordered(again, f"SELECT * FROM v{i}") == unordered(pg, sql), sql
        finally:
            again.close()


def test_recursive_view_refuses_the_cluster_tier(tmp_path: Path) -> None:
    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        ours.execute(CREATE)
        with pytest.raises(DatabaseError) as caught:
            ours.execute(f"CREATE MATERIALIZED VIEW rv WITH (CLUSTER = true) AS {QUERIES[1]}")
        assert caught.value.sqlstate == "0A000" and "WITH RECURSIVE" in str(caught.value)
    finally:
        ours.close()


def test_create_recursive_view_as_postgres(both) -> None:
    """``CREATE [OR REPLACE] [TEMP] RECURSIVE VIEW v (cols) AS …``: a view of a WITH
    RECURSIVE of its name, as PostgreSQL reads it."""
    ours, pg = both
    same_outcomes(
        ours,
        pg,
        [
            "CREATE RECURSIVE VIEW nums (n) AS VALUES (1) UNION ALL"
            " SELECT n + 1 FROM nums WHERE n < 5",
            "SELECT * FROM nums",
            "CREATE OR REPLACE RECURSIVE VIEW nums (n) AS VALUES (1) UNION ALL"
            " SELECT n + 1 FROM nums WHERE n < 7",
            "SELECT * FROM nums",
            "CREATE TEMP RECURSIVE VIEW reach (a, b) AS SELECT a, b FROM edge"
            " UNION SELECT r.a, e.b FROM reach r JOIN edge e ON r.b = e.a",
            "SELECT * FROM reach ORDER BY a, b",
            "CREATE RECURSIVE VIEW nocols AS SELECT 1",
            "DROP VIEW nums",
            "DROP VIEW reach",
        ],
    )
