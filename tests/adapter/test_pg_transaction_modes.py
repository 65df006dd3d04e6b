"""Transaction modes as PostgreSQL 15 has them: BEGIN/START TRANSACTION [READ ONLY | READ
WRITE | ISOLATION LEVEL … | [NOT] DEFERRABLE], SET TRANSACTION (a warning outside a block),
SET SESSION CHARACTERISTICS AS TRANSACTION, default_transaction_read_only; a write or DDL in a
read-only transaction is 25006 with PostgreSQL's message; SET NAMES, SET SCHEMA and resetting
the role accepted; compared with a real PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = ["CREATE TABLE tm (a int)", "INSERT INTO tm VALUES (1)"]
REFUSED = [  # each in a READ ONLY block
    "INSERT INTO tm VALUES (2)",
    "UPDATE tm SET a = 3",
    "DELETE FROM tm",
    "TRUNCATE tm",
    "CREATE TABLE tm_other (a int)",
    "CREATE TEMP TABLE tm_temp (a int)",
    "DROP TABLE tm",
    "CREATE MATERIALIZED VIEW tm_v AS SELECT a FROM tm",
    "CREATE UNIQUE INDEX tm_i ON tm (a)",
    "ALTER TABLE tm ADD COLUMN b int",
    "CREATE SEQUENCE tm_s",
]


def test_transaction_modes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "tm", *SETUP) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "CREATE SEQUENCE IF NOT EXISTS tm_seq",
                "SET TRANSACTION READ ONLY",  # outside a block: a warning only
                "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
                "SHOW default_transaction_isolation",
                "BEGIN READ ONLY",
                "SHOW transaction_read_only",
                "SELECT count(*) FROM tm",
                "COMMIT",
                "SHOW transaction_read_only",
                "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ WRITE",
                "INSERT INTO tm VALUES (2)",
                "COMMIT",
                "BEGIN",
                "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE",
                "SHOW transaction_read_only",
                "ROLLBACK",
                "SET default_transaction_read_only = on",
                "SHOW transaction_read_only",
                "INSERT INTO tm VALUES (3)",
                "SELECT nextval('tm_seq')",
                "SELECT setval('tm_seq', 5)",
                "BEGIN READ WRITE",
                "SHOW transaction_read_only",
                "INSERT INTO tm VALUES (4)",
                "COMMIT",
                "BEGIN",
                "DELETE FROM tm",
                "ROLLBACK",
                "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
                "SHOW transaction_read_only",
                "SELECT a FROM tm ORDER BY a",
                "SELECT nextval('tm_seq')",
                "DROP SEQUENCE tm_seq",
                "SET TRANSACTION ISOLATION LEVEL BOGUS",
                "SET SESSION AUTHORIZATION DEFAULT",
                "RESET SESSION AUTHORIZATION",
                "SET ROLE NONE",
                "RESET ROLE",
                "SET NAMES 'UTF8'",
                "SHOW client_encoding",
                "SET SCHEMA 'public'",
                "SELECT current_schema()",
            ],
        )
        for sql in REFUSED:
            caught = []
            for conn, error in ((pg, psycopg.Error), (ours, DatabaseError)):
                conn.execute("BEGIN READ ONLY")
                with pytest.raises(error) as e:
                    conn.execute(sql)
                conn.execute("ROLLBACK")
                caught.append((e.value.sqlstate, str(e.value).splitlines()[0]))
            assert caught[0] == caught[1], sql
