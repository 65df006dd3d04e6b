"""How ORDER BY, DISTINCT ON and GROUP BY resolve a bare name, a position and a parenthesized
one, compared with PostgreSQL 15: ORDER BY takes an output column's name first, then an input
column; GROUP BY an input column first, then an output name; two output columns of one name
are ambiguous (42702) only where they differ."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE xn (i int, t text, j int)"
INSERT = "INSERT INTO xn VALUES (1, 'b', 2), (2, 'a', 1), (10, 'c', 1), (3, NULL, NULL)"
QUERIES = [
    "SELECT i, i::text AS t FROM xn ORDER BY i",
    "SELECT i, i::text AS t FROM xn ORDER BY t",
    "SELECT i, i::text AS i FROM xn ORDER BY i",
    "SELECT i::text AS t, t FROM xn ORDER BY t",
    "SELECT j AS i, i FROM xn ORDER BY i",
    "SELECT j AS i FROM xn ORDER BY i",
    "SELECT i AS j, j AS i FROM xn ORDER BY i, j",
    "SELECT i + 1 AS i FROM xn ORDER BY i",
    "SELECT i + 1 AS i FROM xn ORDER BY i + 0",
    "SELECT j AS i, i FROM xn ORDER BY i + 0",
    "SELECT i AS k, i AS k FROM xn ORDER BY k",
    "SELECT i, i AS i FROM xn ORDER BY i",
    "SELECT i, j AS i FROM xn ORDER BY i",
    "SELECT 1 AS i, i FROM xn ORDER BY i",
    "SELECT xn.i, j AS i FROM xn ORDER BY xn.i",
    "SELECT i AS k FROM xn ORDER BY -k",
    "SELECT i AS k FROM xn ORDER BY (k)",
    "SELECT i, t FROM xn ORDER BY (2), 1",
    "SELECT i, t FROM xn ORDER BY ((2)) DESC, 1",
    "SELECT i AS t FROM xn ORDER BY 1 DESC, t",
    'SELECT i AS "I" FROM xn ORDER BY "I"',
    'SELECT i AS "I" FROM xn ORDER BY I',
    "SELECT *, i AS t FROM xn ORDER BY t",
    "SELECT DISTINCT i AS k FROM xn ORDER BY k",
    "SELECT DISTINCT ON ((k)) j AS k, i FROM xn ORDER BY (k), i",
    "SELECT i AS k, count(*) FROM xn GROUP BY k ORDER BY k",
    "SELECT i AS j, count(*) FROM xn GROUP BY j",
    "SELECT i + 1 AS j FROM xn GROUP BY j",
    "SELECT i + 1 AS k FROM xn GROUP BY (k)",
    "SELECT j AS i, count(*) FROM xn GROUP BY i ORDER BY i",
    "SELECT j, count(*) FROM xn GROUP BY (1)",
    "SELECT i AS a, j AS a FROM xn GROUP BY a",
    "SELECT i AS a, i AS a FROM xn GROUP BY a",
    "SELECT i + 1 AS k FROM xn GROUP BY k + 1",
    "SELECT j AS k, count(*) AS c FROM xn GROUP BY k HAVING c > 1",
    "SELECT j AS k, count(*) AS c FROM xn GROUP BY k HAVING k > 1",
    "SELECT i AS k, row_number() OVER (ORDER BY k) FROM xn",
    "SELECT i AS k FROM xn WHERE k > 1",
    "SELECT max(i) AS i FROM xn GROUP BY j ORDER BY i",
    "SELECT max(i) AS m FROM xn GROUP BY j ORDER BY i",
    "SELECT i::text AS i, count(*) FROM xn GROUP BY i ORDER BY i",
    "SELECT upper(t) AS t FROM xn GROUP BY t ORDER BY t",
    "SELECT j AS t, max(t) FROM xn GROUP BY t ORDER BY t",
    "SELECT sum(j) AS i FROM xn GROUP BY i ORDER BY i",
    "SELECT j, count(*) AS i FROM xn GROUP BY j ORDER BY i, j",
    "SELECT i AS k FROM xn UNION SELECT j FROM xn ORDER BY k",
    "SELECT i AS k FROM xn UNION SELECT j FROM xn ORDER BY (k)",
    "SELECT i AS k FROM xn UNION SELECT j FROM xn ORDER BY (1) DESC",
    "SELECT i AS k FROM xn UNION SELECT j FROM xn ORDER BY i",
]


def test_names_in_order_by_and_group_by_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "xn", CREATE, INSERT) as (ours, pg):
        for sql in QUERIES:
            unordered = "ORDER BY" not in sql
            assert outcome(ours, sql, sort=unordered) == outcome(pg, sql, sort=unordered), sql
