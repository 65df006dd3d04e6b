"""Any error in a transaction block fails the transaction, as PostgreSQL 15's does: one in a
statement that does not parse as much as one raised while it runs (a syntax error let the
block go on and commit its earlier writes), compared on the same statements."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

BLOCKS = [
    "BEGIN",
    "INSERT INTO ta VALUES (1)",
    "FOO BAR",
    "INSERT INTO ta VALUES (2)",
    "COMMIT",
    "SELECT count(*) FROM ta",
    "BEGIN",
    "INSERT INTO ta VALUES (3)",
    "SELECT FROM WHERE",
    "SELECT 1",
    "ROLLBACK",
    "SELECT count(*) FROM ta",
    "BEGIN",
    "INSERT INTO ta VALUES (4)",
    "SELECT * FROM nowhere",
    "COMMIT",
    "BEGIN",
    "INSERT INTO ta VALUES (5)",
    "SELECT 1 / 0",
    "COMMIT",
    "BEGIN",
    "INSERT INTO ta VALUES (6)",
    "COMMIT",
    "SELECT a FROM ta",
]


def test_an_error_of_any_kind_fails_the_block_as_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    create = "CREATE TABLE ta (a int)"
    with beside_postgres(tmp_path / "home", postgres_url, "ta", create) as (ours, pg):
        same_outcomes(ours, pg, BLOCKS)
