"""What the catalogs list, as PostgreSQL 15 lists it: information_schema's tables, views and
columns leave materialized views and sequences out (pg_class and pg_attribute have them);
pg_proc lists the functions of the function table PostgreSQL has, none of the planner's own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

from changeflow.compute.functions import FUNCTIONS

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE lt (a int NOT NULL, b text)",
    "CREATE VIEW lv AS SELECT a FROM lt",
    "CREATE MATERIALIZED VIEW lmv AS SELECT a, b FROM lt",
    "CREATE SEQUENCE ls",
]
LISTINGS = [
    "SELECT table_name, table_type FROM information_schema.tables"
    " WHERE table_schema = 'public' ORDER BY 1",
    "SELECT table_name, column_name, ordinal_position, is_nullable, data_type"
    " FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 3",
    "SELECT table_name FROM information_schema.views WHERE table_schema = 'public' ORDER BY 1",
    "SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema = 'public'",
    "SELECT relname, relkind FROM pg_class WHERE relname IN ('lt', 'lv', 'lmv', 'ls') ORDER BY 1",
    "SELECT c.relname, count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    " WHERE c.relname IN ('lt', 'lv', 'lmv') AND a.attnum > 0 GROUP BY 1 ORDER BY 1",
    "SELECT matviewname FROM pg_matviews WHERE schemaname = 'public'",
]


def test_information_schema_and_pg_proc_list_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "lt") as (ours, pg):
        pg.execute("DROP SEQUENCE IF EXISTS ls")
        try:
            for sql in SETUP:
                ours.execute(sql)
                pg.execute(sql)
            same_outcomes(ours, pg, LISTINGS)
            sql = "SELECT DISTINCT proname FROM pg_proc"
            theirs = {n for (n,) in pg.execute(sql).fetchall()} & FUNCTIONS.keys()
            mine = {n for (n,) in ours.execute(sql).fetchall()}
            assert mine == theirs
        finally:
            pg.execute("DROP MATERIALIZED VIEW IF EXISTS lmv")
            pg.execute("DROP VIEW IF EXISTS lv")
            pg.execute("DROP SEQUENCE IF EXISTS ls")
