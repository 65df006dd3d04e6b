"""A SELECT of one ordered derived table keeps its order, as PostgreSQL's plan does: ``SELECT *
FROM (SELECT … ORDER BY a DESC) s LIMIT 3`` gives the three largest, in order (positions,
aliases, expressions and NULLS placement of the inner ORDER BY carried out, and keys the
derived table does not show; nested derived tables too); ad hoc and maintained, compared with
a real PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE so (a int, b text)",
    "INSERT INTO so SELECT g, 'x' || (g % 7) FROM generate_series(1, 40) g",
    "INSERT INTO so VALUES (NULL, 'n')",
]


def test_an_ordered_derived_table_keeps_its_order_as_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "so", *SETUP) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "SELECT * FROM (SELECT * FROM so ORDER BY a DESC NULLS LAST) s LIMIT 3",
                "SELECT * FROM (SELECT * FROM so ORDER BY a DESC) s LIMIT 3",
                "SELECT a FROM (SELECT a FROM so ORDER BY a DESC LIMIT 10) s LIMIT 3 OFFSET 1",
                "SELECT s.b FROM (SELECT a, b FROM so ORDER BY 2, 1 DESC) s LIMIT 4",
                "SELECT x FROM (SELECT a * 2 AS x FROM so ORDER BY a * 2 DESC NULLS LAST) s "
                "LIMIT 2",
                "SELECT * FROM (SELECT * FROM (SELECT * FROM so ORDER BY a) i) o LIMIT 2",
                "SELECT * FROM (SELECT a, b FROM so WHERE a < 10 ORDER BY b DESC, a) s",
                "SELECT count(*) FROM (SELECT * FROM so ORDER BY a DESC) s",
                # ordered by what the derived table does not show
                "SELECT * FROM (SELECT b FROM so ORDER BY a DESC NULLS LAST) s LIMIT 3",
                "SELECT s.* FROM (SELECT b FROM so o ORDER BY o.a % 5, a) s LIMIT 4 OFFSET 2",
                "SELECT upper(b) FROM (SELECT b FROM so ORDER BY a) s LIMIT 2",
                "SELECT * FROM (SELECT b, count(*) FROM so GROUP BY b ORDER BY max(a) DESC) s "
                "LIMIT 2",
            ],
        )
        maintained_as_postgres(
            ours,
            pg,
            [
                "SELECT * FROM (SELECT a, b FROM so WHERE a IS NOT NULL ORDER BY a DESC) s LIMIT 3",
                "SELECT * FROM (SELECT b FROM so WHERE a IS NOT NULL ORDER BY a DESC) s LIMIT 3",
            ],
            [
                "INSERT INTO so VALUES (100, 'big')",
                "DELETE FROM so WHERE a = 100",
                "UPDATE so SET a = 99 WHERE a = 5",
            ],
        )
