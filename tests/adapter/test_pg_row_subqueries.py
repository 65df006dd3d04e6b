"""A row compared with a subquery of as many columns, ``(a, b) = (SELECT x, y …)``, as
PostgreSQL 15 compares it: each operator's rule for rows, NULL where the subquery has no row,
21000 where it has several, a DISTINCT subquery's rows once, correlated subqueries, and 42601
for a subquery of the wrong width; ad hoc and maintained, compared with a real PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE rs (id int NOT NULL, g int, name text)",
    "INSERT INTO rs VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c'), (4, NULL, NULL)",
]


def test_row_subquery_comparisons_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rs", *SETUP) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "SELECT ROW(1, 2) = (SELECT 1, 2), (1, 2) <> (SELECT 1, 3)",
                "SELECT (1, 'a') = (SELECT id, name FROM rs WHERE id = 1)",
                "SELECT (1, 'a') = (SELECT id, name FROM rs WHERE id = 9)",
                "SELECT (2, 'a') > (SELECT id, name FROM rs WHERE id = 1), "
                "(1, 'b') <= (SELECT id, name FROM rs WHERE id = 1)",
                "SELECT (1, 1) = (SELECT DISTINCT g, g FROM rs WHERE g = 1)",
                "SELECT id FROM rs WHERE (g, name) = (SELECT 1, 'b') ORDER BY id",
                "SELECT id, (g, name) = (SELECT max(i.g), max(i.name) FROM rs i WHERE i.id = o.id)"
                " FROM rs o ORDER BY id",
            ],
        )
        same_errors(
            ours,
            pg,
            [
                "SELECT (1, 'a') = (SELECT id, name FROM rs)",
                "SELECT (1, 'a') = (SELECT DISTINCT g, g FROM rs)",
                "SELECT (1, 2, 3) = (SELECT 1, 2)",
                "SELECT (1, 2) = (SELECT 1, 2, 3)",
                "SELECT (SELECT 1, 2) = (1, 2)",
            ],
        )


def test_row_subquery_comparisons_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rs", *SETUP) as (ours, pg):
        maintained_as_postgres(
            ours,
            pg,
            [
                "SELECT id, name FROM rs o WHERE (o.g, o.name) = "
                "(SELECT i.g, max(i.name) FROM rs i WHERE i.g = o.g GROUP BY i.g)",
                "SELECT id, (g, id) < (SELECT min(g), max(id) FROM rs) AS lower FROM rs",
            ],
            [
                "INSERT INTO rs VALUES (5, 2, 'z'), (6, 1, 'c')",
                "DELETE FROM rs WHERE id = 5",
                "UPDATE rs SET name = 'zz' WHERE id = 2",
            ],
        )


def test_row_in_a_correlated_subquery_with_bare_columns_as_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    """``(g, name) IN (SELECT g, name FROM other WHERE other.id = rs.id)``: the row's bare
    columns are the outer table's, though the subquery's table has columns of those names."""
    with beside_postgres(tmp_path / "home", postgres_url, "rs", *SETUP) as (ours, pg):
        for conn in (ours, pg):
            conn.execute("DROP TABLE IF EXISTS rs_other")
            conn.execute("CREATE TABLE rs_other (id int, g int, name text)")
            conn.execute("INSERT INTO rs_other VALUES (1, 1, 'a'), (3, 2, 'z'), (4, 5, NULL)")
        try:
            maintained_as_postgres(
                ours,
                pg,
                [
                    "SELECT id FROM rs WHERE (g, name) IN "
                    "(SELECT g, name FROM rs_other WHERE rs_other.id = rs.id)",
                    "SELECT id FROM rs WHERE (g, name) NOT IN "
                    "(SELECT g, name FROM rs_other WHERE id = rs.id)",
                    "SELECT id, (g, name) IN (SELECT g, name FROM rs_other o WHERE o.id = x.id) "
                    "FROM rs x",
                ],
                [
                    "INSERT INTO rs_other VALUES (2, 1, 'b')",
                    "UPDATE rs SET name = 'z' WHERE id = 3",
                    "DELETE FROM rs_other WHERE id = 1",
                ],
            )
        finally:
            pg.execute("DROP TABLE rs_other CASCADE")
