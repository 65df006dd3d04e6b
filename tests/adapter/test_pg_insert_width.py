"""INSERT without a column list and fewer values than columns fills the first N columns (the
rest take their defaults), as PostgreSQL 15; more values, or VALUES rows of different
lengths, are 42601."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

STATEMENTS = [
    "INSERT INTO ins_w VALUES (1)",
    "INSERT INTO ins_w VALUES (2, 3), (4, 5)",
    "INSERT INTO ins_w SELECT 6",
    "INSERT INTO ins_w SELECT 7, 8 RETURNING *",
    "INSERT INTO ins_w VALUES (9, 9, 'x', 9)",
    "INSERT INTO ins_w VALUES (10), (11, 12)",
    "INSERT INTO ins_w SELECT 1, 2, 'x', 4",
    "SELECT * FROM ins_w ORDER BY a",
]


def test_insert_of_fewer_values_than_columns_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    setup = ("CREATE TABLE ins_w (a int, b int DEFAULT 7, c text DEFAULT 'd')",)
    with beside_postgres(tmp_path / "home", postgres_url, "ins_w", *setup) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
