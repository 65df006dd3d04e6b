"""CHECK constraints as PostgreSQL 15 has them: enforced on every write (23514, NULL passes,
a failing statement writes nothing), named by its rules, and listed in pg_constraint with
pg_get_constraintdef's text."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = (
    "CREATE TABLE chk_t (id int PRIMARY KEY, x int CHECK (x > 0), y int, s text "
    "CHECK (s <> ''), CONSTRAINT chk_c CHECK (y < x), CHECK (y > -5 AND x < 100), "
    "CHECK (x IS NOT NULL OR y IS NULL), CHECK ((x + 1) * 2 > y))"
)
STATEMENTS = [
    "INSERT INTO chk_t VALUES (1, 5, 1, 'a')",
    "INSERT INTO chk_t VALUES (2, NULL, NULL, NULL)",
    "INSERT INTO chk_t VALUES (3, 0, -1, 'b')",
    "INSERT INTO chk_t VALUES (3, 7, 1, 'b'), (4, 2, 3, 'c')",
    "INSERT INTO chk_t VALUES (5, 2, -6, 'c')",
    "INSERT INTO chk_t VALUES (5, 2, 1, '')",
    "INSERT INTO chk_t VALUES (5, NULL, 1, 'x')",
    "INSERT INTO chk_t VALUES (6, 200, 1, 'x')",
    "INSERT INTO chk_t VALUES (7, 9, 1, 'q') RETURNING *",
    "UPDATE chk_t SET y = x WHERE id = 1",
    "UPDATE chk_t SET x = x - 4 WHERE x IS NOT NULL",
    "UPDATE chk_t SET y = 2 WHERE id = 7",
    "INSERT INTO chk_t VALUES (1, 3, 0, 'z') ON CONFLICT (id) DO UPDATE SET x = -1",
    "INSERT INTO chk_t VALUES (1, 3, 0, 'z') ON CONFLICT (id) DO UPDATE SET x = EXCLUDED.x",
    "INSERT INTO chk_t VALUES (8, 3, 0, 'z') ON CONFLICT (id) DO NOTHING",
    "DELETE FROM chk_t WHERE id = 8",
    "SELECT * FROM chk_t ORDER BY id",
    "SELECT conname, contype, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true) "
    "FROM pg_constraint WHERE conrelid = 'chk_t'::regclass AND contype = 'c' ORDER BY 1",
]
BAD = [
    "CREATE TABLE chk_bad (x int CHECK (x + 1))",
    "CREATE TABLE chk_bad (x int CHECK (z > 0))",
    "CREATE TABLE chk_bad (x int CHECK (x > (SELECT 1)))",
    "CREATE TABLE chk_bad (x int CHECK (sum(x) > 0))",
    "CREATE TABLE chk_bad (x int, CONSTRAINT a CHECK (x > 0), CONSTRAINT a CHECK (x < 9))",
]


def _message(conn, sql: str) -> str | None:
    import psycopg

    from changeflow.adapter.connection import DatabaseError

    try:
        conn.execute(sql)
    except psycopg.Error as e:
        return f"{e.sqlstate} {e.diag.message_primary} {e.diag.message_detail}"
    except DatabaseError as e:
        return f"{e.sqlstate} {e.error.message} {e.error.fields.get('detail')}"
    return None


def test_check_constraints_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "chk_t", CREATE) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
        for sql in BAD:
            assert outcome(ours, sql)[1] == outcome(pg, sql)[1], sql


def test_check_violation_message_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "chk_t", CREATE) as (ours, pg):
        for sql in [
            "INSERT INTO chk_t VALUES (3, 0, -1, 'b')",
            "INSERT INTO chk_t VALUES (5, 2, -6, 'c')",
            "INSERT INTO chk_t VALUES (5, 2, 3, NULL)",
        ]:
            assert _message(ours, sql) == _message(pg, sql), sql


ALTER_CREATE = (
    "CREATE TABLE chk_a (id int PRIMARY KEY, x int, y int CHECK (y > 0), CHECK (x < 100))"
)
DEFS = (
    "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = 'chk_a'::regclass ORDER BY 1"
)
ALTER_STATEMENTS = [
    "INSERT INTO chk_a VALUES (1, 5, 1), (2, -3, 2)",
    "ALTER TABLE chk_a ADD CONSTRAINT pos CHECK (x > 0)",
    "ALTER TABLE chk_a ADD CHECK (x > -10)",
    "ALTER TABLE chk_a ADD CHECK (x > -10)",
    "ALTER TABLE chk_a ADD CONSTRAINT chk_a_pkey CHECK (x > -10)",
    "INSERT INTO chk_a VALUES (3, -11, 1)",
    "ALTER TABLE chk_a DROP CONSTRAINT chk_a_x_check1",
    "INSERT INTO chk_a VALUES (3, -11, 1)",
    "ALTER TABLE chk_a DROP CONSTRAINT nope",
    "ALTER TABLE chk_a DROP CONSTRAINT IF EXISTS nope",
    "ALTER TABLE chk_a RENAME COLUMN x TO z",
    DEFS,
    "INSERT INTO chk_a VALUES (4, 200, 1)",
    "ALTER TABLE chk_a DROP COLUMN z",
    "INSERT INTO chk_a VALUES (5, 0)",
    "ALTER TABLE chk_a DROP CONSTRAINT chk_a_pkey",
    "INSERT INTO chk_a VALUES (5, 3)",
    "SELECT * FROM chk_a ORDER BY id",
    DEFS,
]


def test_alter_table_checks_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """ADD CONSTRAINT … CHECK checks the rows (23514), DROP CONSTRAINT, and a column's
    rename or drop carries or drops its checks, as PostgreSQL."""
    with beside_postgres(tmp_path / "home", postgres_url, "chk_a", ALTER_CREATE) as (ours, pg):
        same_outcomes(ours, pg, ALTER_STATEMENTS)
        sql = "ALTER TABLE chk_a ADD CONSTRAINT big CHECK (y > 100)"
        assert _message(ours, sql) == _message(pg, sql)


FUNCTIONS_CREATE = (
    "CREATE TABLE chk_m (id int, s text CHECK (length(s) > 1), k int CHECK (k IN (1, 2, 3)), "
    "d date CHECK (d > '2020-01-01'))"
)
FUNCTIONS = [
    "INSERT INTO chk_m VALUES (1, 'ab', 2, '2021-01-01')",
    "INSERT INTO chk_m VALUES (2, 'a', 2, '2021-01-01')",
    "INSERT INTO chk_m VALUES (3, 'ab', 5, '2021-01-01')",
    "INSERT INTO chk_m VALUES (4, 'ab', 1, '2019-01-01')",
    "INSERT INTO chk_m VALUES (5, NULL, NULL, NULL)",
    "BEGIN",
    "INSERT INTO chk_m VALUES (6, 'abc', 3, '2022-01-01')",
    "INSERT INTO chk_m VALUES (7, 'abc', 9, '2022-01-01')",
    "COMMIT",
    "SELECT * FROM chk_m ORDER BY id",
    "SELECT conname FROM pg_constraint WHERE conrelid = 'chk_m'::regclass ORDER BY 1",
    "CREATE TABLE chk_bad2 (x int CHECK (x > count(*)))",
    "CREATE TABLE chk_bad3 (x int CHECK (row_number() OVER () > 0))",
    "CREATE TABLE chk_bad4 (x int CHECK (x = ANY (SELECT 1)))",
]


def test_checks_of_functions_and_in_transactions_as_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "chk_m", FUNCTIONS_CREATE) as (
        ours,
        pg,
    ):
        same_outcomes(ours, pg, FUNCTIONS)
