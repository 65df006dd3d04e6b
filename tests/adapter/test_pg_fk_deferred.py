"""Deferred FOREIGN KEY constraints as PostgreSQL 15 has them: DEFERRABLE [INITIALLY
DEFERRED] checked at COMMIT against the tables as the transaction leaves them (23503 there
rolls it back), SET CONSTRAINTS, actions never deferred, and the catalogs' columns."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

TABLES = "dc, dc2, dc3, dc4, dp"
SETUP = [
    "CREATE TABLE dp (id int PRIMARY KEY)",
    "CREATE TABLE dc (id int, p int REFERENCES dp DEFERRABLE INITIALLY DEFERRED)",
    "CREATE TABLE dc2 (id int, p int REFERENCES dp DEFERRABLE)",
    "CREATE TABLE dc3 (id int, p int REFERENCES dp ON DELETE CASCADE INITIALLY DEFERRED)",
    "CREATE TABLE dc4 (id int, p int)",
]
STATEMENTS = [
    "BEGIN",
    "INSERT INTO dc VALUES (1, 10)",
    "INSERT INTO dp VALUES (10)",
    "COMMIT",
    "BEGIN",
    "INSERT INTO dc VALUES (2, 20)",
    "COMMIT",
    "SELECT * FROM dc ORDER BY id",
    "INSERT INTO dc VALUES (3, 30)",
    "BEGIN",
    "INSERT INTO dc VALUES (4, 40)",
    "DELETE FROM dc WHERE id = 4",
    "COMMIT",
    "BEGIN",
    "DELETE FROM dp WHERE id = 10",
    "INSERT INTO dp VALUES (10)",
    "COMMIT",
    "BEGIN",
    "DELETE FROM dp WHERE id = 10",
    "COMMIT",
    "BEGIN",
    "UPDATE dc SET p = 11 WHERE id = 1",
    "UPDATE dp SET id = 11 WHERE id = 10",
    "COMMIT",
    "SELECT * FROM dp ORDER BY id",
    "BEGIN",
    "SET CONSTRAINTS ALL IMMEDIATE",
    "INSERT INTO dc VALUES (5, 50)",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO dc VALUES (6, 60)",
    "SET CONSTRAINTS dc_p_fkey IMMEDIATE",
    "ROLLBACK",
    "BEGIN",
    "SET CONSTRAINTS nope DEFERRED",
    "ROLLBACK",
    "BEGIN",
    "SET CONSTRAINTS dp_pkey DEFERRED",
    "ROLLBACK",
    "SET CONSTRAINTS ALL DEFERRED",
    "INSERT INTO dc2 VALUES (1, 99)",
    "BEGIN",
    "INSERT INTO dc2 VALUES (1, 99)",
    "ROLLBACK",
    "BEGIN",
    "SET CONSTRAINTS public.dc2_p_fkey DEFERRED",
    "INSERT INTO dc2 VALUES (1, 99)",
    "INSERT INTO dp VALUES (99)",
    "COMMIT",
    "INSERT INTO dp VALUES (12)",
    "INSERT INTO dc3 VALUES (1, 99), (2, 11), (3, 12)",
    "BEGIN",
    "DELETE FROM dp WHERE id = 99",
    "COMMIT",
    "DELETE FROM dp WHERE id = 12",
    "SELECT * FROM dc3 ORDER BY id",
    "ALTER TABLE dc4 ADD CONSTRAINT dc4_p_fk_dp_id FOREIGN KEY (p) REFERENCES dp (id) "
    "DEFERRABLE INITIALLY DEFERRED",
    "BEGIN",
    "INSERT INTO dc4 VALUES (1, 7)",
    "INSERT INTO dp VALUES (7)",
    "COMMIT",
    "INSERT INTO dc4 VALUES (2, 8)",
    "SELECT * FROM dc4 ORDER BY id",
    "SELECT conname, condeferrable, condeferred, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE contype = 'f' AND conrelid::regclass::text LIKE 'dc%' ORDER BY 1",
    "SELECT constraint_name, is_deferrable, initially_deferred "
    "FROM information_schema.table_constraints WHERE table_name LIKE 'dc%' ORDER BY 1",
]


def test_deferred_foreign_keys_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, TABLES, *SETUP) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
