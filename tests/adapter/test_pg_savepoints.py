"""Savepoints as PostgreSQL 15's: SAVEPOINT, ROLLBACK TO [SAVEPOINT], RELEASE [SAVEPOINT]
undo or keep a transaction's writes and DDL since the mark, a rollback to one ends the failed
state, names may repeat (the latest is meant), and each is refused outside a transaction
block; compared on the same statements, then psycopg's nested transactions over the wire."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

STATEMENTS = [
    "SAVEPOINT a",
    "RELEASE SAVEPOINT a",
    "ROLLBACK TO a",
    "BEGIN",
    "INSERT INTO sp VALUES (1)",
    "SAVEPOINT a",
    "INSERT INTO sp VALUES (2)",
    "SAVEPOINT b",
    "INSERT INTO sp VALUES (3)",
    "ROLLBACK TO SAVEPOINT a",
    "SELECT k FROM sp ORDER BY k",
    "ROLLBACK TO b",
    "INSERT INTO sp VALUES (4)",
    "SAVEPOINT a",
    "INSERT INTO sp VALUES (5)",
    "RELEASE a",
    "SELECT k FROM sp ORDER BY k",
    "ROLLBACK TO a",
    "SELECT k FROM sp ORDER BY k",
    'SAVEPOINT "Mixed"',
    "SELECT 1 / 0",
    "INSERT INTO sp VALUES (6)",
    'RELEASE "Mixed"',
    'ROLLBACK TO "Mixed"',
    "INSERT INTO sp VALUES (7)",
    "SAVEPOINT ddl",
    "CREATE TABLE sp_later (x int)",
    "INSERT INTO sp_later VALUES (1)",
    "UPDATE sp SET k = k * 10",
    "ROLLBACK TO SAVEPOINT ddl",
    "SELECT count(*) FROM sp_later",
    "ROLLBACK TO mixed",
    "SELECT k FROM sp ORDER BY k",
    "COMMIT",
    "SELECT k FROM sp ORDER BY k",
    "SELECT count(*) FROM sp_later",
    "BEGIN",
    "SAVEPOINT s",
    "DELETE FROM sp WHERE k = 1",
    "RELEASE s",
    "COMMIT",
    "SELECT k FROM sp ORDER BY k",
]


def test_savepoints_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    create = "CREATE TABLE sp (k int)"
    with beside_postgres(tmp_path / "home", postgres_url, "sp", create) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
