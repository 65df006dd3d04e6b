"""DROP's errors as PostgreSQL 15 words them, in and out of a transaction block: a missing
table, view, materialized view or index (42P01, 42704), a name of another kind (42809), and
IF EXISTS skipping."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

STATEMENTS = [
    "DROP TABLE nope_t",
    "DROP VIEW nope_t",
    "DROP MATERIALIZED VIEW nope_t",
    "DROP INDEX nope_t",
    "DROP VIEW drop_t",
    "DROP INDEX drop_t",
    "DROP MATERIALIZED VIEW drop_t",
    "DROP TABLE IF EXISTS nope_t, nope_u",
    "BEGIN",
    "DROP TABLE nope_t",
    "ROLLBACK",
    "BEGIN",
    "DROP VIEW drop_t",
    "ROLLBACK",
    "SELECT count(*) FROM drop_t",
]


def test_drop_errors_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    create = "CREATE TABLE drop_t (a int)"
    with beside_postgres(tmp_path / "home", postgres_url, "drop_t", create) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
        for sql in STATEMENTS[:7]:
            mine, theirs = _message(ours, sql), _message(pg, sql)
            assert mine == theirs, sql


def _message(conn: object, sql: str) -> str:
    try:
        conn.execute(sql)  # type: ignore[attr-defined]
    except Exception as e:  # noqa: BLE001 (either client's error)
        return str(e).splitlines()[0]
    return "ok"
