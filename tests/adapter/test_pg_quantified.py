"""Quantified comparisons (``x op ANY|ALL (subquery)``) whose subquery names an outer column
unqualified, compared with PostgreSQL 15: ad hoc, in a view and maintained in a materialized
view through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE quant_a (x int, k2 int, y int)",
    "CREATE TABLE quant_b (y int, k int)",
    "INSERT INTO quant_a VALUES (1, 1, 0), (5, 1, 0), (10, 2, 0), (NULL, 2, 0), (3, 3, 0),"
    " (4, 4, 0)",
    "INSERT INTO quant_b VALUES (2, 1), (4, 1), (7, 2), (NULL, 3)",
]
QUERIES = [
    "SELECT x, k2 FROM quant_a WHERE x > ALL (SELECT y FROM quant_b WHERE quant_b.k = k2)",
    "SELECT x, k2 FROM quant_a WHERE x > ANY (SELECT y FROM quant_b WHERE quant_b.k = k2)",
    "SELECT x, x < ALL (SELECT y FROM quant_b WHERE k = k2) AS lo,"
    " x <= ANY (SELECT y FROM quant_b b WHERE b.k = k2) AS hi FROM quant_a",
    # y is a column of both: the left side's y is quant_a's, the subquery's quant_b's
    "SELECT x, k2, y FROM quant_a WHERE y < ALL (SELECT y FROM quant_b WHERE quant_b.k = k2)",
    "SELECT a.x, y <= ANY (SELECT b.y - 2 FROM quant_b b WHERE b.k = k2) AS t FROM quant_a a",
    # y is quant_b's too: the inner y is quant_b's, the outer x is still the outer row's
    "SELECT x, x >= ALL (SELECT y FROM quant_b WHERE k = k2 AND y > 0) AS top FROM quant_a",
]
CHANGES = [
    "INSERT INTO quant_b VALUES (20, 2), (0, 4)",
    "UPDATE quant_a SET k2 = 1 WHERE x = 10",
    "DELETE FROM quant_b WHERE y IS NULL",
]


def test_unqualified_outer_columns_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "quant_a", *SETUP) as (ours, pg):
        try:
            for i, sql in enumerate(QUERIES):
                assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql
                for conn in (ours, pg):
                    conn.execute(f"CREATE VIEW quant_v{i} AS {sql}")
                view = f"SELECT * FROM quant_v{i}"
                assert outcome(ours, view, sort=True) == outcome(pg, view, sort=True), sql
            maintained_as_postgres(ours, pg, QUERIES, CHANGES, rows=_rows)
        finally:
            for i in range(len(QUERIES)):
                pg.execute(f"DROP VIEW IF EXISTS quant_v{i}")
            pg.execute("DROP TABLE IF EXISTS quant_b")


def _rows(conn, sql: str) -> tuple:  # noqa: ANN001
    return outcome(conn, sql, sort=True)
