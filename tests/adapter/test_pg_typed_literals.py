"""A typed literal (``date '…'``) binds before the operators after it (``::``, ``->``,
``[…]``), as PostgreSQL 15 reads it: the same values, and the same errors, as PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

QUERIES = [
    "SELECT time '10:00'::text, date '2024-01-01'::text, numeric '1.50'::text",
    "SELECT timestamp '2024-01-01 10:00:05'::time, timestamp '2024-01-01 10:00'::date",
    "SELECT int '12'::text || 'x', (text '{3,4}'::int[])[2], cardinality(text '{1,2}'::int[])",
    "SELECT jsonb '{\"a\": [1, 2]}' -> 'a', jsonb '{\"a\": 1}' ->> 'a'",
    "SELECT interval '1 day'::text, CAST(CAST('7' AS int) AS text)",
]


def test_typed_literals_bind_first_as_in_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "xl", "CREATE TABLE xl (i int)") as (
        ours,
        pg,
    ):
        same_outcomes(ours, pg, QUERIES)
        same_errors(
            ours,
            pg,
            [
                "SELECT date '2024-01-01'::time",  # 42846, not the string read as a time (22007)
                "SELECT time '10:00'::date",
                "SELECT date '2024-01-01'::time::text",
            ],
        )
