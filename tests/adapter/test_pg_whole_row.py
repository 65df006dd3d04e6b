"""A table's name as a value (the whole row) compared with PostgreSQL 15: ``SELECT t``,
``t::text``, ``count(t)`` and ``row_to_json(t)``, ad hoc and in materialized views through
inserts, updates and deletes; and a count of a function that is not NULL over NULLs
(``count(concat(…))``) over no rows and some."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE wr (id int NOT NULL, s text, b bool, x numeric(5,2), d date)"
INSERT = (
    "INSERT INTO wr VALUES (1, 'plain', true, 1.5, '2024-01-02'), (2, 'a b,\"c\"', false, NULL,"
    " NULL), (3, '', NULL, -2, '1999-12-31'), (4, NULL, NULL, NULL, NULL),"
    " (5, 'x\\y', true, 0, NULL)"
)
CHANGES = [
    "INSERT INTO wr VALUES (6, '(paren)', false, 10.25, '2000-02-29')",
    "UPDATE wr SET s = 'changed' WHERE id = 1",
    "DELETE FROM wr WHERE id IN (2, 4)",
]
QUERIES = [
    "SELECT wr FROM wr",
    "SELECT id, wr::text FROM wr WHERE wr::text LIKE '%,t,%'",
    "SELECT count(wr), count(*) FROM wr",
    "SELECT t::text FROM (SELECT id, s FROM wr WHERE id > 2) t",
    "SELECT b, count(t) FROM (SELECT b, s FROM wr) t GROUP BY b",
    "SELECT id, row_to_json(wr)::text FROM wr",  # json as PostgreSQL writes it
    "SELECT count(concat(s, x)), count(coalesce(s, 'none')) FROM wr WHERE id > 100",
    "SELECT count(concat(s, x)), count(coalesce(s, 'none')) FROM wr",
]


def rows(conn: Any, sql: str) -> list:
    """Rows as text, JSON as its value (key order aside)."""
    out = []
    for r in conn.execute(sql).fetchall():
        values = []
        for v in r:
            if isinstance(v, dict) or type(v).__name__ == "Jsonb":
                v = json.dumps(v if isinstance(v, dict) else json.loads(str(v)), sort_keys=True)
            values.append(None if v is None else str(v))
        out.append(tuple(values))
    return sorted(out, key=str)


def test_whole_rows_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "wr", CREATE, INSERT) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES, rows=rows)
