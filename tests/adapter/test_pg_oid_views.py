"""A view's column cast to oid in its select list has the oid type in the catalog, as in
PostgreSQL 15 (information_schema, pg_attribute), held as a bigint, and a query reading it
as it is from the view shows it as an oid: rows and types compared with PostgreSQL's through
changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE tov (id int NOT NULL, o int8)"
INSERT = "INSERT INTO tov VALUES (1, 23), (2, 4294967295), (3, NULL)"
VIEWS = [
    "CREATE MATERIALIZED VIEW tov_m AS SELECT id, o::oid AS x, (o - 1)::oid, o FROM tov",
    "CREATE VIEW tov_v AS SELECT o::oid, id FROM tov WHERE id < 3",
]
CATALOG = [
    "SELECT table_name, column_name, data_type FROM information_schema.columns"
    " WHERE table_name IN ('tov', 'tov_v') ORDER BY 1, 2",
    "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.atttypid"
    " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    " WHERE c.relname LIKE 'tov_%' AND a.attnum > 0 ORDER BY 1, 2",
]
READS = [
    "SELECT * FROM tov_m ORDER BY id",
    "SELECT * FROM tov_v WHERE o = 23",
    "SELECT x, id, tov_m.oid AS y, 1 FROM tov_m ORDER BY id",
    "SELECT m.*, 1 FROM tov_m m ORDER BY id",
    "SELECT x FROM tov_m GROUP BY x ORDER BY x",
    "WITH tov_m AS (SELECT 1 AS x) SELECT * FROM tov_m",
]
TYPE_OIDS = {"integer": 23, "bigint": 20, "oid": 26}


def test_oid_columns_of_views_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "tov", CREATE, INSERT) as (ours, pg):
        try:
            for sql in VIEWS:
                for conn in (ours, pg):
                    conn.execute(sql)
            for change in (None, "INSERT INTO tov VALUES (4, 5)", "DELETE FROM tov WHERE id = 1"):
                if change is not None:
                    for conn in (ours, pg):
                        conn.execute(change)
                    pg.execute("REFRESH MATERIALIZED VIEW tov_m")  # kept here, refreshed there
                same_outcomes(ours, pg, CATALOG + READS)
                for sql in READS:  # the oid columns' type on the way out
                    mine = [TYPE_OIDS[d[1]] for d in ours.execute(sql).description]
                    assert mine == [d.type_code for d in pg.execute(sql).description], sql
        finally:
            pg.execute("DROP TABLE tov CASCADE")
            pg.execute("CREATE TABLE tov (id int)")  # for beside_postgres to drop
