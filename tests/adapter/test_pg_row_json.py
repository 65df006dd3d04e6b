"""A table's row given to ``to_json``, ``to_jsonb`` and ``jsonb_agg``: a JSON object of its
columns by name (it was the row's record text as a JSON string), here and on PostgreSQL 15
(json compared as text), ad hoc and in views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE rj (id int PRIMARY KEY, g int, s text, x numeric(6,2), b bool)",
    "INSERT INTO rj VALUES (1, 1, 'a', 1.5, true), (2, 1, NULL, NULL, false),"
    " (3, 2, 'q\"t', -2, NULL)",
]
AD_HOC = [
    "SELECT to_json(rj)::text, to_jsonb(rj)::text FROM rj ORDER BY id",
    "SELECT to_json(t)::text, to_jsonb(t)::text FROM rj AS t WHERE id = 3",
    "SELECT jsonb_agg(rj ORDER BY id)::text FROM rj",
    "SELECT g, jsonb_agg(t ORDER BY id DESC)::text FROM rj t GROUP BY g ORDER BY g",
    "SELECT jsonb_agg(s ORDER BY id)::text, to_jsonb(s)::text FROM rj GROUP BY s ORDER BY 1",
    "SELECT jsonb_agg(t)::text FROM rj t WHERE id > 5",
]
QUERIES = [
    "SELECT id, to_jsonb(rj)::text AS j, to_json(rj)::text AS t FROM rj",
    "SELECT g, jsonb_agg(rj ORDER BY id)::text AS a FROM rj GROUP BY g",
]
CHANGES = [
    "INSERT INTO rj VALUES (4, 2, 'new', 0.25, true), (5, 3, NULL, 7, false)",
    "UPDATE rj SET s = 'changed', x = 9.99 WHERE id = 1",
    "DELETE FROM rj WHERE id IN (2, 3)",
]


def test_rows_as_json_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rj", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)


def test_rows_as_json_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rj", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
