"""Casts of constants to reg* types in a view's or materialized view's select list, compared
with PostgreSQL 15: the column has the reg* type in the catalog, holds the object's OID (so it
names a renamed table by its new name), compares with reg* constants and is its type to
pg_typeof, and keeps the table from being dropped; a cast of it to text gives the object's
current name, as PostgreSQL's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors  # noqa: E402

from changeflow.adapter.connection import DatabaseError

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE rgv (id int NOT NULL, k int)"
INSERT = "INSERT INTO rgv VALUES (1, 10), (2, 20)"
VIEWS = [
    "CREATE VIEW rgv_v AS SELECT 'rgv'::regclass, 'int4'::regtype AS ty, id FROM rgv",
    "CREATE MATERIALIZED VIEW rgv_m AS SELECT id, 'rgv'::regclass AS c, 'integer'::regtype AS t,"
    " 'public'::regnamespace AS n, 'rgv'::regclass::oid > 0 AS o FROM rgv WHERE k > 10",
    "CREATE VIEW rgv_n AS SELECT 'rgv'::regclass AS r, 1 AS one",
]
QUERIES = [
    "SELECT * FROM rgv_v",
    "SELECT * FROM rgv_m",
    "SELECT id, regclass FROM rgv_v WHERE ty = 'integer'::regtype AND regclass = 'rgv'::regclass",
    "SELECT c, t, n FROM rgv_m WHERE c = 'rgv'::regclass",
    "SELECT pg_typeof(c), pg_typeof(t), id FROM rgv_m WHERE pg_typeof(n) = 'regnamespace'::regtype",
    "SELECT c::oid > 0, t::oid FROM rgv_m",
    "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.atttypid"
    " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    " WHERE c.relname LIKE 'rgv_%' AND a.attnum > 0 ORDER BY 1, 2",
    "SELECT table_name, column_name, data_type FROM information_schema.columns"
    " WHERE table_name LIKE 'rgv_%' ORDER BY 1, 2",
]
TO_TEXT = [
    "SELECT c::text, t::text, n::text, id FROM rgv_m",
    "SELECT regclass::text AS x, ty::varchar, upper(regclass::text), length(ty::text) FROM rgv_v",
    "SELECT c::text || '!' FROM rgv_m WHERE c::text LIKE 'rgv%' ORDER BY 1",
    "SELECT CAST(r AS text), one FROM rgv_n",
]


def test_reg_casts_in_views_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rgv", CREATE, INSERT) as (ours, pg):
        try:
            for conn in (ours, pg):
                for sql in VIEWS:
                    conn.execute(sql)
            for sql in QUERIES + TO_TEXT:
                assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql
            for conn in (ours, pg):  # the views hold the table's OID: they show its new name
                conn.execute("ALTER TABLE rgv RENAME TO rgv_renamed")
            for sql in QUERIES[:2]:
                assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql
                assert "rgv_renamed" in str(outcome(ours, sql)), sql
            for sql in TO_TEXT:  # a cast to text names the object by its current name
                assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql
            same_errors(ours, pg, ["SELECT c::date FROM rgv_m", "SELECT t::bool FROM rgv_m"])
            with pytest.raises(DatabaseError) as caught:  # to its own type: not yet
                ours.execute("SELECT c::regclass FROM rgv_m")
            assert caught.value.sqlstate == "0A000"
            for conn in (ours, pg):  # the view that names the table alone still depends on it
                conn.execute("DROP VIEW rgv_v")
                conn.execute("DROP MATERIALIZED VIEW rgv_m")
            assert outcome(ours, "SELECT * FROM rgv_n") == outcome(pg, "SELECT * FROM rgv_n")
            same_errors(ours, pg, ["DROP TABLE rgv_renamed"])
        finally:
            pg.execute("DROP VIEW IF EXISTS rgv_n")
            pg.execute("DROP VIEW IF EXISTS rgv_v")
            pg.execute("DROP MATERIALIZED VIEW IF EXISTS rgv_m")
            pg.execute("ALTER TABLE IF EXISTS rgv_renamed RENAME TO rgv")
