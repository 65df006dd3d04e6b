"""Joins in parentheses in FROM, ``(a JOIN b ON …)``, with and without an alias (which hides
the names inside and may rename the columns), nested, outer, with USING and of subqueries:
here and on PostgreSQL 15, ad hoc and in views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE pa (k int, v text)",
    "CREATE TABLE pb (k int, w int)",
    "CREATE TABLE pc (w int, z text)",
    "INSERT INTO pa VALUES (1, 'one'), (2, 'two'), (3, NULL), (NULL, 'none')",
    "INSERT INTO pb VALUES (1, 10), (1, 11), (3, 30), (4, 40)",
    "INSERT INTO pc VALUES (10, 'ten'), (30, 'thirty'), (99, 'lost')",
]
CLEANUP = ["DROP TABLE pb", "DROP TABLE pc"]
AD_HOC = [
    "SELECT * FROM (pa JOIN pb ON pa.k = pb.k) ORDER BY 1, 2, 3, 4",
    "SELECT * FROM (pa JOIN pb USING (k)) j ORDER BY 1, 2, 3",
    "SELECT j.k, j.w FROM (pa LEFT JOIN pb USING (k)) AS j ORDER BY 1, 2",
    "SELECT * FROM (pa JOIN pb ON pa.k = pb.k) AS j(a, b, c) ORDER BY 1, 3",
    "SELECT pa.v, pc.z FROM pa LEFT JOIN (pb JOIN pc ON pb.w = pc.w) ON pa.k = pb.k ORDER BY 1, 2",
    "SELECT * FROM pc RIGHT JOIN ((SELECT k, 5 AS x FROM pa) s1 LEFT JOIN"
    " (SELECT k AS x, w FROM pb) s2 USING (x)) s0 ON pc.w = s0.w ORDER BY 1, 2, 3, 4, 5",
    "SELECT * FROM ((SELECT k FROM pa) s1 JOIN (SELECT k, w FROM pb) s2 USING (k)) ORDER BY 1, 2",
    "SELECT count(*), sum(j.w) FROM ((pa JOIN pb USING (k)) JOIN pc USING (w)) j",
    "SELECT pa.k FROM (pa JOIN pb USING (k)) j",
    "SELECT j.nope FROM (pa JOIN pb USING (k)) j",
    "SELECT * FROM (pa JOIN pb USING (k)) j(a, b, c, d)",
    "SELECT j.k FROM (pa JOIN pb ON pa.k = pb.k) j",
]
QUERIES = [
    "SELECT pa.v, pc.z FROM pa LEFT JOIN (pb JOIN pc ON pb.w = pc.w) ON pa.k = pb.k",
    "SELECT j.k, j.v, j.w FROM (pa JOIN pb USING (k)) AS j",
    "SELECT s0.* FROM ((SELECT k, 1 AS x FROM pa) s1 LEFT JOIN (SELECT w AS x, k FROM pb) s2"
    " USING (x)) s0",
]
CHANGES = [
    "INSERT INTO pb VALUES (2, 10), (NULL, 1)",
    "INSERT INTO pc VALUES (11, 'eleven')",
    "UPDATE pa SET k = 4 WHERE v = 'two'",
    "DELETE FROM pb WHERE w = 10",
]


def test_parenthesized_joins_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "pa", *SETUP) as (ours, pg):
        try:
            same_outcomes(ours, pg, AD_HOC)
        finally:
            for sql in CLEANUP:
                pg.execute(sql)


def test_parenthesized_joins_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "pa", *SETUP) as (ours, pg):
        try:
            maintained_as_postgres(ours, pg, QUERIES, CHANGES)
        finally:
            for sql in CLEANUP:
                pg.execute(sql)
