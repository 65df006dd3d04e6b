"""Subqueries in VALUES as PostgreSQL 15 runs them: an INSERT's rows may compute a value from
the table (``VALUES ((SELECT max(id) + 1 FROM t), 'x')``, with DEFAULT and quoted literals
beside them), a VALUES list in a query may hold scalar subqueries (ad hoc and maintained), and
a subquery's errors are PostgreSQL's (21000, 42601); compared with a real PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE vs (id int NOT NULL, name text, d date DEFAULT '2020-01-01')",
    "INSERT INTO vs VALUES (1, 'a')",
]


def test_insert_values_with_subqueries_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "vs", *SETUP) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "INSERT INTO vs VALUES ((SELECT max(id) + 1 FROM vs), 'b')",
                "INSERT INTO vs VALUES ((SELECT max(id) + 1 FROM vs), "
                "(SELECT name FROM vs WHERE id = 1), '2021-05-05'), (10, 'z', DEFAULT)",
                "INSERT INTO vs (id, d) VALUES ((SELECT count(*) FROM vs) * 100, DEFAULT)",
                "INSERT INTO vs (name, id) VALUES ('e', 1 + (SELECT max(id) FROM vs "
                "WHERE EXISTS (SELECT 1 FROM vs WHERE name = 'z')))",
                "INSERT INTO vs VALUES ((SELECT id FROM vs), 'x')",
                "INSERT INTO vs VALUES ((SELECT 1, 2), 'x')",
                "INSERT INTO vs VALUES ((SELECT NULL::int), 'x')",
                "SELECT * FROM vs ORDER BY id",
                "VALUES ((SELECT count(*) FROM vs)), (2) ORDER BY 1",
                "VALUES (1, (SELECT max(name) FROM vs)), (2, 'k') ORDER BY 1",
                "VALUES ((SELECT 1), 2), (3)",
            ],
        )


def test_values_with_subqueries_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "vs", *SETUP) as (ours, pg):
        maintained_as_postgres(
            ours,
            pg,
            [
                "SELECT * FROM (VALUES ('rows', (SELECT count(*) FROM vs)), "
                "('top', (SELECT max(id) FROM vs))) v(k, n)",
            ],
            [
                "INSERT INTO vs VALUES (5, 'e'), (6, 'f')",
                "DELETE FROM vs WHERE id = 6",
                "UPDATE vs SET id = 9 WHERE id = 5",
            ],
        )
