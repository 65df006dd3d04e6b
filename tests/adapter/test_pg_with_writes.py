"""Data-modifying statements in WITH, as PostgreSQL 15 runs them: rows moved between tables
(``WITH moved AS (DELETE … RETURNING *) INSERT … SELECT … FROM moved``), parts reading the
rows earlier parts returned, a main SELECT, UPDATE or MERGE, every part reading the tables as
the statement found them; an error in any part writes nothing. Rows and SQLSTATEs compared
with PostgreSQL's, statement by statement, and a view kept through them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = (
    "DROP TABLE IF EXISTS wb",
    "DROP TABLE IF EXISTS wc",
    "CREATE TABLE wa (id int PRIMARY KEY, v text)",
    "CREATE TABLE wc (id int, c char(5))",
    "CREATE TABLE wb (id int, v text, at int)",
    "INSERT INTO wa VALUES (1, 'a'), (2, 'b'), (3, 'c')",
)
STATEMENTS = [
    "WITH moved AS (DELETE FROM wa WHERE id >= 2 RETURNING *) "
    "INSERT INTO wb SELECT id, v, 0 FROM moved",
    "SELECT * FROM wa ORDER BY id",
    "SELECT * FROM wb ORDER BY id",
    "WITH d AS (DELETE FROM wa WHERE id = 1 RETURNING id) "
    "SELECT (SELECT count(*) FROM wa) AS seen, (SELECT count(*) FROM d) AS gone",
    "WITH i AS (INSERT INTO wa VALUES (10, 'x'), (11, 'y') RETURNING id, v), "
    "u AS (UPDATE wb SET at = at + 1 WHERE id IN (SELECT id - 8 FROM i) RETURNING *) "
    "SELECT * FROM i, u ORDER BY 1, 3",
    "WITH i AS (INSERT INTO wa VALUES (10, 'dup') RETURNING id) SELECT * FROM i",
    "WITH i AS (INSERT INTO wa VALUES (20, 'q') RETURNING id) UPDATE wb SET v = v || '!' "
    "WHERE id = (SELECT id - 17 FROM i) RETURNING *",
    "WITH x AS (DELETE FROM wb WHERE id = 2 RETURNING id), y AS (SELECT 1 AS one) "
    "SELECT one, (SELECT count(*) FROM x) FROM y",
    "WITH d AS (DELETE FROM wb WHERE false) SELECT 1",
    "WITH d AS (UPDATE wa SET v = 'z' WHERE id = 10 RETURNING *) MERGE INTO wb t USING d "
    "ON t.id = d.id WHEN NOT MATCHED THEN INSERT VALUES (d.id, d.v, 5)",
    "WITH RECURSIVE d AS (DELETE FROM wa WHERE id = 11 RETURNING *), "
    "r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r, d",
    "WITH d AS (DELETE FROM wa WHERE id = 20 RETURNING *) INSERT INTO wb VALUES (1 / 0, 'x', 0)",
    "WITH d AS (DELETE FROM wa RETURNING *) SELECT * FROM nope",
    "WITH a AS (INSERT INTO wa VALUES (30, 'x') RETURNING id) INSERT INTO wa VALUES (30, 'y')",
    "WITH a AS (UPDATE wa SET id = 31 WHERE id = 10 RETURNING id) INSERT INTO wa VALUES (10, 'b')",
    "WITH a AS (DELETE FROM wa WHERE id = 10 RETURNING id) INSERT INTO wa VALUES (10, 'c')",
    "WITH a AS (UPDATE wa SET v = 'closed' WHERE id = 10 RETURNING id) "
    "INSERT INTO wa SELECT id + 40, 'open' FROM a",
    "SELECT * FROM wa ORDER BY id",
    "SELECT * FROM wb ORDER BY id",
    # a char(n) value a part returns is held as the table holds it (its blanks shown only)
    "WITH i AS (INSERT INTO wc VALUES (1, 'ab') RETURNING *) "
    "SELECT c || '|', length(c), octet_length(c), c, c = 'ab   ' FROM i",
    "WITH u AS (UPDATE wc SET c = 'q' RETURNING c) SELECT c, c = 'q' FROM u",
]


def test_with_writes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "wa", *SETUP) as (ours, pg):
        ours.execute("CREATE MATERIALIZED VIEW wb_at AS SELECT count(*) AS n, sum(at) AS s FROM wb")
        try:
            for sql in STATEMENTS:
                same_outcomes(ours, pg, [sql])
                mine = outcome(ours, "SELECT n, s FROM wb_at")
                assert mine == outcome(pg, "SELECT count(*) AS n, sum(at) AS s FROM wb"), sql
        finally:
            pg.execute("DROP TABLE wb")
            pg.execute("DROP TABLE wc")


def test_parts_commit_together_in_a_transaction(tmp_path: Path) -> None:
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    for sql in SETUP[1:]:
        conn.execute(sql)
    conn.execute("BEGIN")
    moved = conn.execute(
        "WITH m AS (DELETE FROM wa WHERE id = 1 RETURNING *) "
        "INSERT INTO wb SELECT id, v, 9 FROM m RETURNING id, at"
    )
    assert moved.fetchall() == [(1, 9)]
    assert conn.execute("SELECT count(*) FROM wa").fetchall() == [(2,)]
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM wa").fetchall() == [(3,)]
    assert conn.execute("SELECT count(*) FROM wb").fetchall() == [(0,)]
    with pytest.raises(DatabaseError) as e:  # both parts would delete the row: refused
        conn.execute("WITH d AS (DELETE FROM wa WHERE id = 2 RETURNING *) DELETE FROM wa")
    assert e.value.sqlstate == "0A000"
    assert conn.execute("SELECT count(*) FROM wa").fetchall() == [(3,)]
    conn.close()
