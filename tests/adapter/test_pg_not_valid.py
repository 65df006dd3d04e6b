"""``ALTER TABLE … ADD CONSTRAINT … NOT VALID`` and ``VALIDATE CONSTRAINT`` (the way
migrations add a constraint to a large table): a CHECK or FOREIGN KEY added NOT VALID holds
for the writes from then on but leaves the rows there unchecked, pg_constraint shows it not
validated (``convalidated``, ``NOT VALID`` in its definition) until VALIDATE CONSTRAINT checks
the rows (23514, 23503 as PostgreSQL's); renamed, it stays NOT VALID; added in a transaction,
a ROLLBACK takes it out. Here and on PostgreSQL 15."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "DROP TABLE IF EXISTS nv_child",
    "DROP TABLE IF EXISTS nv_parent",
    "CREATE TABLE nv_parent (id int PRIMARY KEY)",
    "CREATE TABLE nv_child (id int, pid int, x int)",
    "INSERT INTO nv_parent VALUES (1)",
    "INSERT INTO nv_child VALUES (1, 1, 5), (2, 9, -1)",
]
SHOWN = (
    "SELECT conname, convalidated, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE conrelid = 'nv_child'::regclass ORDER BY 1"
)
STATEMENTS = [
    "ALTER TABLE nv_child ADD CONSTRAINT nv_x CHECK (x > 0) NOT VALID",
    "ALTER TABLE nv_child ADD CONSTRAINT nv_fk FOREIGN KEY (pid) REFERENCES nv_parent (id)"
    " NOT VALID",
    SHOWN,
    "INSERT INTO nv_child VALUES (3, 1, -5)",
    "INSERT INTO nv_child VALUES (3, 7, 5)",
    "INSERT INTO nv_child VALUES (3, 1, 5)",
    "ALTER TABLE nv_child VALIDATE CONSTRAINT nv_x",
    "ALTER TABLE nv_child VALIDATE CONSTRAINT nv_fk",
    "BEGIN",
    "ALTER TABLE nv_child ADD CONSTRAINT nv_big CHECK (x > 1000) NOT VALID",
    SHOWN,
    "ROLLBACK",
    SHOWN,
    "ALTER TABLE nv_child RENAME CONSTRAINT nv_x TO nv_positive",
    SHOWN,
    "DELETE FROM nv_child WHERE id = 2",
    "ALTER TABLE nv_child VALIDATE CONSTRAINT nv_positive",
    "ALTER TABLE nv_child VALIDATE CONSTRAINT nv_fk",
    "ALTER TABLE nv_child VALIDATE CONSTRAINT nv_fk",
    SHOWN,
    "ALTER TABLE nv_child ADD CONSTRAINT nv_small CHECK (x < 100) NOT VALID",
    "ALTER TABLE nv_child DROP CONSTRAINT nv_small",
    SHOWN,
]
ERRORS = [
    "ALTER TABLE nv_child VALIDATE CONSTRAINT nosuch",
    "ALTER TABLE nv_parent VALIDATE CONSTRAINT nv_parent_pkey",
    "ALTER TABLE nv_child ADD CONSTRAINT nv_u UNIQUE (id) NOT VALID",
]


def test_not_valid_constraints_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    try:
        with beside_postgres(tmp_path / "home", postgres_url, "nv_child", *SETUP) as (ours, pg):
            same_outcomes(ours, pg, STATEMENTS)
            same_errors(ours, pg, ERRORS)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as pg:  # (the shared server's)
            pg.execute("DROP TABLE IF EXISTS nv_parent")
