"""MERGE as PostgreSQL 15 runs it: WHEN [NOT] MATCHED clauses with conditions, UPDATE SET,
DELETE, INSERT (column lists, DEFAULT VALUES), DO NOTHING; a source table, subquery, VALUES
or WITH query; its errors. Every statement's rows, command tag and SQLSTATE compared with
PostgreSQL's, a view over the target kept through them, and a transaction's MERGE rolled
back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE mt (id int PRIMARY KEY, v text, n int DEFAULT 7)"
SETUP = [
    CREATE,
    "INSERT INTO mt VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)",
    "CREATE TABLE ms (id int, v text)",
    "INSERT INTO ms VALUES (1, 'x'), (4, 'y'), (5, NULL)",
]
STATEMENTS = [
    "MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
    "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 0)",
    "MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED AND s.v = 'x' THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET n = t.n + 10 WHEN NOT MATCHED AND s.id > 4 THEN "
    "INSERT (id) VALUES (s.id + 100) WHEN NOT MATCHED THEN DO NOTHING",
    "MERGE INTO mt USING (SELECT 2 AS id, 'q' AS v) s ON s.id = mt.id WHEN MATCHED THEN "
    "UPDATE SET v = s.v || mt.v, n = (SELECT count(*) FROM ms) WHEN NOT MATCHED THEN "
    "INSERT VALUES (s.id, s.v)",
    "MERGE INTO mt t USING (VALUES (3, 'w'), (7, 'k')) s(a, b) ON s.a = t.id WHEN MATCHED "
    "THEN UPDATE SET n = n * 2 WHEN NOT MATCHED THEN INSERT (v, id) VALUES (b, a)",
    "WITH src AS (SELECT 1 AS id, 'new' AS v) MERGE INTO mt t USING src ON src.id = t.id "
    "WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT VALUES (src.id, src.v)",
    "MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED THEN DO NOTHING",
    "MERGE INTO mt t USING (SELECT 50 AS id) s ON s.id = t.id WHEN NOT MATCHED THEN "
    "INSERT (id, n) VALUES (s.id, DEFAULT)",
    "MERGE INTO mt t USING ms s ON false WHEN NOT MATCHED AND s.v IS NULL THEN "
    "INSERT VALUES (s.id + 1000, 'none')",
    "SELECT * FROM mt ORDER BY id",
]
REFUSED = [
    "MERGE INTO mt t USING ms s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (t.id)",
    "MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED AND 1 THEN DELETE",
    "MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 9, id = 8",
    "MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.v = 'q'",
    "MERGE INTO mt t USING ms t ON true WHEN MATCHED THEN DELETE",
    "MERGE INTO mt t USING ms s ON s.id = t.id WHEN NOT MATCHED THEN INSERT (id, nope) "
    "VALUES (1, 2)",
    "MERGE INTO mt t USING ms s ON s.id = t.id WHEN MATCHED THEN DELETE WHEN MATCHED THEN DELETE",
    "MERGE INTO mt t USING (SELECT 10 AS id) s ON s.id = t.id WHEN NOT MATCHED THEN "
    "INSERT DEFAULT VALUES",
    "MERGE INTO mt t USING ms s ON false WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, s.id / 0)",
    "MERGE INTO mt t USING (SELECT 300 AS id) s ON s.id = t.id WHEN NOT MATCHED THEN "
    "INSERT VALUES (2)",
    "MERGE INTO mt_view t USING ms s ON true WHEN MATCHED THEN DELETE",
]


def _tagged(conn: Any, sql: str) -> tuple:
    """:func:`outcome` with the command tag."""
    cursor = conn.cursor()
    got = outcome(cursor, sql)
    return got if got[0] == "error" else (*got, cursor.statusmessage)


def test_merge_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    views = "CREATE VIEW mt_view AS SELECT * FROM mt"
    made = ("DROP TABLE IF EXISTS mt CASCADE", *SETUP, views)
    with beside_postgres(tmp_path / "home", postgres_url, "ms", *made) as (ours, pg):
        ours.execute("CREATE MATERIALIZED VIEW mt_sum AS SELECT count(*) AS c, sum(n) AS s FROM mt")
        try:
            for sql in STATEMENTS:
                assert _tagged(ours, sql) == _tagged(pg, sql), sql
                kept = outcome(ours, "SELECT c, s FROM mt_sum")
                assert kept == outcome(pg, "SELECT count(*) AS c, sum(n) AS s FROM mt"), sql
            same_errors(ours, pg, REFUSED)
            assert outcome(ours, "SELECT * FROM mt ORDER BY id") == outcome(
                pg, "SELECT * FROM mt ORDER BY id"
            )
        finally:
            pg.execute("DROP TABLE mt CASCADE")


def test_a_target_row_matched_twice_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    for sql in SETUP:
        conn.execute(sql)
    conn.execute("INSERT INTO ms VALUES (1, 'again')")
    before = conn.execute("SELECT * FROM mt ORDER BY id").fetchall()
    with pytest.raises(DatabaseError) as e:
        conn.execute(
            "MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)"
        )
    assert e.value.sqlstate == "21000"
    assert conn.execute("SELECT * FROM mt ORDER BY id").fetchall() == before
    # DO NOTHING changes no row: several matches are fine
    done = conn.execute("MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED THEN DO NOTHING")
    assert done.statusmessage == "MERGE 0"
    conn.close()


def test_merge_in_a_transaction_is_seen_by_it_and_rolled_back(tmp_path: Path) -> None:
    import changeflow

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    for sql in SETUP:
        conn.execute(sql)
    conn.execute("BEGIN")
    conn.execute("INSERT INTO ms VALUES (9, 'nine')")
    done = conn.execute(
        "MERGE INTO mt t USING ms s ON t.id = s.id WHEN MATCHED THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    assert done.statusmessage == "MERGE 4"
    inside = conn.execute("SELECT id, v, n FROM mt ORDER BY id").fetchall()
    assert inside == [(2, "b", 2), (3, "c", 3), (4, "y", 7), (5, None, 7), (9, "nine", 7)]
    conn.execute("ROLLBACK")
    assert [r[0] for r in conn.execute("SELECT id FROM mt ORDER BY id").fetchall()] == [1, 2, 3]
    conn.close()
