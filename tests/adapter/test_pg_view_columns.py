"""A view's column names as PostgreSQL 15 gives them: names listed after the view's name
rename its first columns (the rest keep theirs), more names than columns are refused (42601,
each statement's own message), and a name a view, materialized view or CREATE TABLE AS would
have twice is 42701; REFRESH MATERIALIZED VIEW accepted where PostgreSQL accepts it (a view
here is always fresh); compared with a real PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres


def test_view_column_names_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    setup = ["CREATE TABLE vc (id int, name text)", "INSERT INTO vc VALUES (1, 'a'), (2, 'b')"]
    with beside_postgres(tmp_path / "home", postgres_url, "vc", *setup) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "CREATE VIEW vc_1 (x) AS SELECT id, name FROM vc",
                "SELECT * FROM vc_1 ORDER BY x",
                "CREATE VIEW vc_2 (x) AS SELECT 1 AS a, 2 AS a",
                "SELECT * FROM vc_2",
                "CREATE VIEW vc_3 AS SELECT id, id FROM vc",
                "CREATE VIEW vc_4 AS SELECT 1, 2",
                "CREATE VIEW vc_5 (x, x) AS SELECT id, name FROM vc",
                "CREATE VIEW vc_6 (name) AS SELECT id, name FROM vc",
                "CREATE VIEW vc_7 (a, b, c) AS SELECT id, name FROM vc",
                "CREATE VIEW vc_8 AS SELECT * FROM vc a JOIN vc b ON a.id = b.id",
                "CREATE VIEW vc_9 AS SELECT a.*, b.name AS other FROM vc a JOIN vc b USING (id)",
                "SELECT * FROM vc_9 ORDER BY id",
                "CREATE MATERIALIZED VIEW vc_m1 AS SELECT count(*), count(*) FROM vc",
                "CREATE MATERIALIZED VIEW vc_m2 (a, b, c) AS SELECT id, name FROM vc",
                "CREATE MATERIALIZED VIEW vc_m3 (n) AS SELECT count(*), max(id) FROM vc",
                "INSERT INTO vc VALUES (3, 'c')",
                "REFRESH MATERIALIZED VIEW vc_m3",  # always fresh here: nothing to do
                "SELECT * FROM vc_m3",
                "REFRESH MATERIALIZED VIEW vc",
                "REFRESH MATERIALIZED VIEW vc_1",
                "REFRESH MATERIALIZED VIEW vc_none",
                "BEGIN",
                "REFRESH MATERIALIZED VIEW public.vc_m3 WITH DATA",
                "COMMIT",
                "CREATE TABLE vc_t AS SELECT id, id FROM vc",
                "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'vc%' "
                "ORDER BY 1",
            ],
        )
        for name in ("vc_1", "vc_2", "vc_9"):
            pg.execute(f"DROP VIEW {name}")
        pg.execute("DROP MATERIALIZED VIEW vc_m3")


def test_a_taken_name_is_refused_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """42P07 with PostgreSQL's message: ``relation "t" already exists``, whatever the new
    item's kind, without the schema (also for a temporary table)."""
    statements = [
        "CREATE VIEW vc AS SELECT 1",
        "CREATE MATERIALIZED VIEW vc AS SELECT 1",
        "CREATE INDEX vc ON vc (id)",
        "CREATE TABLE vc (a int)",
        "CREATE TABLE public.vc (a int)",
        "CREATE SEQUENCE vc",
        "CREATE TEMP TABLE vc_temp (a int)",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "vc", "CREATE TABLE vc (id int)") as (
        ours,
        pg,
    ):
        for conn in (ours, pg):
            conn.execute("CREATE TEMP TABLE vc_temp (a int)")
        for sql in statements:
            with pytest.raises(psycopg.Error) as theirs:
                pg.execute(sql)
            with pytest.raises(DatabaseError) as mine:
                ours.execute(sql)
            assert (mine.value.sqlstate, str(mine.value)) == (
                theirs.value.sqlstate,
                str(theirs.value).splitlines()[0],
            ), sql
