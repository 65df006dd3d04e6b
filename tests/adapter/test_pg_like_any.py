"""``x [NOT] [I]LIKE ANY|ALL (array)`` as PostgreSQL 15 has it (``~~ ANY`` …): a literal
array, a quoted one, an array column, NULL elements and NULL operands, ad hoc and in
materialized views kept through writes; a non-text operand is 42883 as there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE la (id int NOT NULL, s text, p text[])"
INSERT = (
    "INSERT INTO la VALUES (1, 'apple', ARRAY['a%', 'x%']), (2, 'Pear', ARRAY['p%']),"
    " (3, NULL, ARRAY['%']), (4, 'fig', NULL), (5, 'kiwi', ARRAY[NULL, 'k%']),"
    " (6, 'lime', ARRAY[NULL, 'z%']), (7, 'date', '{}')"
)
QUERIES = [
    "SELECT id, s LIKE ANY (p), s LIKE ALL (p), s NOT LIKE ANY (p), s NOT LIKE ALL (p) FROM la",
    "SELECT id, s ILIKE ANY (ARRAY['P%', 'A%']), s NOT ILIKE ALL ('{%E, %I%}') FROM la",
    "SELECT id FROM la WHERE s LIKE ANY (ARRAY['a%', 'k%', 'l%'])",
]
CHANGES = [
    "INSERT INTO la VALUES (8, 'avocado', ARRAY['a%', '%o'])",
    "UPDATE la SET p = ARRAY['f%'] WHERE id = 4",
    "DELETE FROM la WHERE id = 1",
]


def test_like_any_and_all_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "la", CREATE, INSERT) as (ours, pg):
        same_outcomes(ours, pg, [*QUERIES, "SELECT 1 LIKE ANY (ARRAY['1'])"])
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
