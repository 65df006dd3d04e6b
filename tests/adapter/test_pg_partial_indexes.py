"""Partial indexes (``CREATE [UNIQUE] INDEX … WHERE predicate``): a partial unique index
constrains the rows its predicate holds for alone, on single-row and bulk writes, on UPDATE
and in its build; it arbitrates an ON CONFLICT of its columns that gives its predicate, and
no other (42P10); a partial index that is not unique finds what a full one would. Here and on
PostgreSQL 15, and after a restart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors, same_outcomes  # noqa: E402

import changeflow  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE accounts (id int PRIMARY KEY, email text, deleted_at date, n int)",
    "CREATE UNIQUE INDEX accounts_live_email ON accounts (email) WHERE deleted_at IS NULL",
    "CREATE INDEX accounts_big ON accounts USING btree (n) WHERE n > 10",
]
STATEMENTS = [
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'accounts' ORDER BY 1",
    "SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indrelid = 'accounts'::regclass"
    " ORDER BY 1",
    "INSERT INTO accounts VALUES (1, 'a', NULL, 1), (2, 'a', '2020-01-01', 20), (3, 'b', NULL, 30)",
    "INSERT INTO accounts VALUES (4, 'a', NULL, 4)",
    "INSERT INTO accounts VALUES (5, 'a', '2021-01-01', 5)",
    "UPDATE accounts SET deleted_at = '2022-01-01' WHERE id = 1",
    "INSERT INTO accounts VALUES (6, 'a', NULL, 6)",
    "UPDATE accounts SET deleted_at = NULL WHERE id = 2",
    "UPDATE accounts SET email = 'b' WHERE id = 6",
    "INSERT INTO accounts VALUES (7, 'c', NULL, 7) ON CONFLICT (id) DO NOTHING",
    "INSERT INTO accounts VALUES (7, 'c', NULL, 8) ON CONFLICT (id) DO UPDATE SET n = 9",
    "INSERT INTO accounts VALUES (8, 'b', NULL, 1) ON CONFLICT (email) WHERE deleted_at IS NULL"
    " DO NOTHING",
    "INSERT INTO accounts VALUES (8, 'b', NULL, 1) ON CONFLICT (email)"
    " WHERE deleted_at IS NULL AND n > 0 DO UPDATE SET n = excluded.n + 40",
    # many rows at once (the bulk path): a live duplicate among them, then none
    "INSERT INTO accounts SELECT g, 'm' || (g % 50), NULL, g FROM generate_series(100, 199) g",
    "INSERT INTO accounts SELECT g, 'm' || g, CASE WHEN g % 2 = 0 THEN DATE '2020-01-01' END, g"
    " FROM generate_series(100, 199) g",
    "INSERT INTO accounts SELECT g, 'm101', DATE '2020-01-01', g FROM generate_series(200, 299) g",
    "SELECT id, email, deleted_at FROM accounts ORDER BY id",
    "SELECT id FROM accounts WHERE n = 30",
    "SELECT id FROM accounts WHERE n = 5",
    "CREATE UNIQUE INDEX accounts_dead_email ON accounts (email) WHERE deleted_at IS NOT NULL",
    "CREATE UNIQUE INDEX accounts_odd ON accounts (email) WHERE n % 2 = 1 AND n < 100",
    "INSERT INTO accounts VALUES (300, 'odd', NULL, 1), (301, 'odd', '2020-01-01', 3)",
    "DROP INDEX accounts_live_email",
    "INSERT INTO accounts VALUES (302, 'b', NULL, 2)",
]
ERRORS = [
    "INSERT INTO accounts VALUES (9, 'z', NULL, 1) ON CONFLICT (email) DO NOTHING",
    "INSERT INTO accounts VALUES (9, 'z', NULL, 1) ON CONFLICT (email) WHERE n > 0 DO NOTHING",
    "CREATE INDEX accounts_bad ON accounts (email) WHERE nosuch > 1",
    "CREATE INDEX accounts_bad ON accounts (email) WHERE email",
    "CREATE INDEX accounts_bad ON accounts (email) WHERE n IN (SELECT 1)",
]


def test_partial_indexes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "accounts", *SETUP) as (ours, pg):
        same_errors(ours, pg, ERRORS)
        same_outcomes(ours, pg, STATEMENTS)


def test_a_partial_unique_index_holds_after_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE t (id int, k text, live boolean)")
    conn.execute("CREATE UNIQUE INDEX t_k ON t (k) WHERE live")
    conn.execute("INSERT INTO t VALUES (1, 'x', true), (2, 'x', false)")
    conn.close()
    again = changeflow.connect(home, host_seconds=0)
    again.autocommit = True
    assert outcome(again, "INSERT INTO t VALUES (3, 'x', true)") == ("error", "23505")
    again.execute("INSERT INTO t VALUES (3, 'x', NULL), (4, 'y', true)")
    assert again.execute("SELECT count(*) FROM t").fetchall() == [(4,)]
    again.close()


def test_a_partial_index_follows_its_columns(tmp_path: Path, postgres_url: str) -> None:
    setup = [
        "CREATE TABLE accounts (id int, email text, gone date)",
        "CREATE UNIQUE INDEX accounts_live ON accounts (email) WHERE gone IS NULL",
        "INSERT INTO accounts VALUES (1, 'a', NULL), (2, 'a', '2020-01-01')",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "accounts", *setup) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "ALTER TABLE accounts RENAME COLUMN gone TO removed_on",
                "INSERT INTO accounts VALUES (3, 'a', NULL)",
                "INSERT INTO accounts VALUES (3, 'a', '2020-02-02')",
                "ALTER TABLE accounts DROP COLUMN removed_on",
                "SELECT indexname FROM pg_indexes WHERE tablename = 'accounts'",
                "INSERT INTO accounts VALUES (4, 'a')",
                "SELECT count(*) FROM accounts",
            ],
        )
