"""LIKE and ILIKE with PostgreSQL's escapes (backslash by default, ``ESCAPE 'c'``, none with
``ESCAPE ''``), ad hoc, in materialized views and in catalog queries, compared with
PostgreSQL 15."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE lk (id int, s text)"
INSERT = (
    "INSERT INTO lk VALUES (1, 'a_b'), (2, 'axb'), (3, 'a%b'), (4, 'a\\b'), (5, 'A_B'),"
    " (6, 'a#b'), (7, NULL), (8, 'a\\_b')"
)
PATTERNS = [
    "s LIKE 'a\\_b'",
    "s LIKE 'a_b'",
    "s ILIKE 'a\\_b'",
    "s NOT LIKE 'a\\%b'",
    "s LIKE 'a\\\\b'",
    "s LIKE 'a#_b' ESCAPE '#'",
    "s NOT ILIKE 'a#_b' ESCAPE '#'",
    "s LIKE 'a##b' ESCAPE '#'",
    "s LIKE 'a\\b' ESCAPE ''",
    "s LIKE 'a\\_b' ESCAPE ''",
    "s LIKE 'a\\%' ESCAPE '\\'",
    "s ILIKE 'A!%B' ESCAPE '!'",
    "s LIKE 'a_b' ESCAPE NULL",
]
CHANGES = [
    "INSERT INTO lk VALUES (9, 'a_b'), (10, 'a\\\\b'), (11, 'a!%b')",
    "DELETE FROM lk WHERE id IN (1, 4)",
    "UPDATE lk SET s = 'A%B' WHERE id = 2",
]


def test_like_escapes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "lk", CREATE, INSERT) as (ours, pg):
        queries = [f"SELECT id, {p} AS m FROM lk" for p in PATTERNS]
        queries += ["SELECT id FROM lk WHERE s LIKE 'a#%b' ESCAPE '#' OR s LIKE 'a\\\\b'"]
        maintained_as_postgres(ours, pg, queries, CHANGES)
        same_outcomes(
            ours, pg, ["SELECT like_escape('a#_b##c\\d', '#')", "SELECT like_escape('a\\_b', '')"]
        )
        same_errors(
            ours,
            pg,
            [
                "SELECT s LIKE 'a#' ESCAPE '#' FROM lk",
                "SELECT s LIKE 'ab' ESCAPE '##' FROM lk",
                "SELECT s LIKE 'a\\' FROM lk",
            ],
        )


def test_catalog_queries_match_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    setup = ["CREATE TABLE lk_a (x int)", "CREATE TABLE lkxa (x int)"]
    with beside_postgres(tmp_path / "home", postgres_url, "lk_a", *setup) as (ours, pg):
        try:
            for p in [
                "LIKE 'lk\\_a'",
                "LIKE 'LK_A'",
                "ILIKE 'LK_A'",
                "NOT LIKE 'lk\\_%'",
                "LIKE 'lk#_a' ESCAPE '#'",
                "NOT LIKE 'lk#_a' ESCAPE '#'",
                "LIKE 'lk\\_a' ESCAPE ''",
            ]:
                sql = (
                    "SELECT relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"
                    " ON n.oid = c.relnamespace WHERE nspname = 'public' AND relname LIKE 'lk%'"
                    f" AND relname {p} ORDER BY 1"
                )
                assert outcome(ours, sql) == outcome(pg, sql), sql
        finally:
            pg.execute("DROP TABLE IF EXISTS lkxa")
