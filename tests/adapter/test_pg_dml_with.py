"""WITH before INSERT, UPDATE and DELETE, as PostgreSQL 15 runs them: WITH queries read by the
statement's FROM, USING, WHERE subqueries and INSERT's SELECT (column lists, aliases, one
query reading another, WITH RECURSIVE before an INSERT), with RETURNING; the rows and errors
compared with PostgreSQL's, statement by statement, and a view over the table kept through
them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE jq (id int PRIMARY KEY, state text, tries int DEFAULT 0)"
INSERT = "INSERT INTO jq VALUES (1, 'new', 0), (2, 'new', 0), (3, 'done', 1), (4, 'new', 2)"
STATEMENTS = [
    "WITH next AS (SELECT id FROM jq WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE "
    "SKIP LOCKED) UPDATE jq SET state = 'running', tries = tries + 1 FROM next "
    "WHERE jq.id = next.id RETURNING jq.*",
    "WITH old AS (SELECT id FROM jq WHERE state = 'done') DELETE FROM jq "
    "WHERE id IN (SELECT id FROM old) RETURNING id",
    "WITH src(id, st) AS (VALUES (7, 'x'), (8, 'y')) INSERT INTO jq (id, state) "
    "SELECT id, st FROM src RETURNING *",
    "WITH a AS (SELECT id FROM jq WHERE tries > 1), b AS (SELECT id + 1 AS id FROM a) "
    "UPDATE jq SET tries = 0 FROM b AS moved WHERE jq.id = moved.id RETURNING jq.id, tries",
    "WITH r(n) AS (SELECT 10 UNION ALL SELECT n + 1 FROM r WHERE n < 12) "
    "INSERT INTO jq (id, state) SELECT n, 'r' FROM r",
    "WITH c AS (SELECT 20 AS id) INSERT INTO jq (id, state) WITH d AS (SELECT id + 1 AS id "
    "FROM c) SELECT id, 'nested' FROM d RETURNING id",
    "WITH gone AS (SELECT id FROM jq WHERE state = 'r') DELETE FROM jq USING gone g "
    "WHERE jq.id = g.id AND g.id > 10 RETURNING jq.id",
    "WITH v AS (SELECT 2 AS id) UPDATE jq SET state = (SELECT 'set' FROM v) "
    "WHERE id IN (SELECT id FROM v) RETURNING id, state",
    "WITH RECURSIVE r(n) AS (SELECT 10 UNION ALL SELECT n + 1 FROM r WHERE n < 11) "
    "UPDATE jq SET tries = tries + n FROM r WHERE jq.id = r.n RETURNING jq.id, tries",
    "WITH RECURSIVE r(n) AS (SELECT 20 UNION ALL SELECT n + 1 FROM r WHERE n < 21) "
    "DELETE FROM jq USING r WHERE jq.id = r.n RETURNING jq.id",
    "SELECT * FROM jq ORDER BY id",
]
REFUSED = [
    "WITH x AS (SELECT 1 AS id) UPDATE x SET id = 2",
    "WITH x AS (SELECT 1 AS id) DELETE FROM jq WHERE id IN (SELECT nope FROM x)",
    "WITH x AS (SELECT 1 AS id) INSERT INTO jq (id) SELECT id FROM y",
    "WITH RECURSIVE r(n) AS (SELECT 1) MERGE INTO jq USING r ON jq.id = r.n "
    "WHEN MATCHED THEN DELETE",
]


def test_with_before_dml_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "jq", CREATE, INSERT) as (ours, pg):
        ours.execute("CREATE MATERIALIZED VIEW jq_states AS SELECT state, count(*) AS n FROM jq "
                     "GROUP BY state")  # fmt: skip
        same_outcomes(ours, pg, STATEMENTS)
        same_errors(ours, pg, REFUSED)
        states = "SELECT state, count(*) AS n FROM jq GROUP BY state ORDER BY state"
        assert outcome(ours, "SELECT * FROM jq_states ORDER BY state") == outcome(pg, states)


def test_a_data_modifying_statement_in_with_runs(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "jq", CREATE, INSERT) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "WITH d AS (DELETE FROM jq WHERE id = 1 RETURNING id) SELECT * FROM d",
                "WITH u AS (UPDATE jq SET tries = 9 RETURNING id) INSERT INTO jq (id) "
                "SELECT id + 100 FROM u",
                "SELECT * FROM jq ORDER BY id",
            ],
        )
