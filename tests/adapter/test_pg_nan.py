"""NaN compared with PostgreSQL 15: a float or numeric NaN equals NaN and is greater than every
other value, in =, <, IN, ORDER BY, GROUP BY, DISTINCT, joins, set operations, min/max and
greatest/least; ad hoc (rows and Arrow kernels) and installed as materialized views kept
through inserts and deletes of NaN rows (a deleted NaN leaves its group and its sum)."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE tf (id int NOT NULL, f float8, g float8)"
INSERT = (
    "INSERT INTO tf VALUES (1, 'NaN', 1), (2, 'NaN', 'NaN'), (3, 150.5, NULL), (4, NULL, 2),"
    " (5, -1, 'NaN'), (6, 1e10, 3), (7, 0, -0.0)"
)
CHANGES = [
    "INSERT INTO tf VALUES (8, 'NaN', 'NaN'), (9, 2, 'NaN')",
    "DELETE FROM tf WHERE id = 1",
    "UPDATE tf SET f = 'NaN' WHERE id = 3",
    "DELETE FROM tf WHERE id IN (2, 8)",
    "DELETE FROM tf WHERE f = 'NaN'",
]
QUERIES = [
    "SELECT id FROM tf WHERE f = 'NaN'::float8",
    "SELECT id FROM tf WHERE f = g",
    "SELECT id FROM tf WHERE f > 1e9",
    "SELECT id FROM tf WHERE f < g",
    "SELECT id FROM tf WHERE f >= 'NaN' OR g <= 0",
    "SELECT id FROM tf WHERE f <> 'NaN'",
    "SELECT id, f = g, f < g, f > g, f IS DISTINCT FROM g, nullif(f, g) FROM tf",
    "SELECT f, count(*), sum(g), avg(g), min(g), max(g) FROM tf GROUP BY f",
    "SELECT sum(f), avg(f), count(DISTINCT f), min(f), max(f) FROM tf",
    "SELECT DISTINCT f FROM tf",
    "SELECT a.id, b.id FROM tf a JOIN tf b ON a.f = b.g",
    "SELECT a.id, b.id FROM tf a LEFT JOIN tf b ON a.f = b.g",
    "SELECT id FROM tf WHERE f IN ('NaN', 1)",
    "SELECT id FROM tf WHERE g NOT IN ('NaN', 1)",
    "SELECT id, greatest(f, g), least(f, g) FROM tf",
    "SELECT f FROM tf EXCEPT SELECT 'NaN'::float8",
    "SELECT f FROM tf INTERSECT SELECT g FROM tf",
    "SELECT id, f FROM tf ORDER BY f DESC, id LIMIT 3",
    "SELECT id, f FROM tf ORDER BY f, id LIMIT 4",
    "SELECT id, rank() OVER (ORDER BY f), sum(g) OVER (ORDER BY id) FROM tf",
    "SELECT id, count(*) OVER (PARTITION BY f), max(g) OVER (PARTITION BY f) FROM tf",
]
ORDERED = [
    "SELECT id, f FROM tf ORDER BY f, id",
    "SELECT id, f FROM tf ORDER BY f DESC, id",
    "SELECT id, f FROM tf ORDER BY f NULLS FIRST, id",
    "SELECT id, g FROM tf ORDER BY g DESC NULLS LAST, id",
]
CONSTANTS = [
    "'NaN'::float8 = 'NaN'::float8",
    "'NaN'::float8 > 'Infinity'::float8",
    "'NaN'::float8 < 1",
    "'NaN'::numeric = 'NaN'::numeric",
    "'NaN'::numeric > 1e100",
    "'NaN'::numeric <= 0",
    "greatest(1, 'NaN'::float8, 2)",
    "least('NaN'::numeric, 2)",
    "'NaN'::float8 IN (1, 'NaN')",
    "'NaN'::float8 / 0",
    "'NaN'::numeric / 0",
    "'NaN'::numeric % 0",
    "'NaN'::float8::numeric",
    "'NaN'::numeric::float8 = 'NaN'::float8",
]
REFUSED = ["SELECT 'NaN'::numeric::int", "SELECT 'NaN'::float8::int", "SELECT 1 / 0::float8"]
NUMERIC_QUERIES = [
    "SELECT x FROM (VALUES (1.0), ('NaN'::numeric), (2.5)) v(x) ORDER BY x",
    "SELECT x FROM (VALUES (1.0), ('NaN'::numeric), (2.5)) v(x) ORDER BY x DESC LIMIT 2",
    "SELECT x, count(*) FROM (VALUES (1.0), ('NaN'::numeric), ('NaN'::numeric)) v(x)"
    " GROUP BY x ORDER BY x",
    "SELECT max(x), min(x), sum(x), avg(x) FROM (VALUES (1.0), ('NaN'::numeric)) v(x)",
    "SELECT DISTINCT x FROM (VALUES ('NaN'::numeric), ('NaN'::numeric)) v(x)",
    "SELECT id, CASE WHEN f = 'NaN' THEN 'NaN'::numeric ELSE id END AS x FROM tf"
    " ORDER BY x DESC, id LIMIT 3",
    "SELECT CASE WHEN f = 'NaN' THEN 'NaN'::numeric ELSE 1 END AS x, count(*) FROM tf"
    " GROUP BY 1 ORDER BY 1",
    "SELECT id FROM (SELECT id, CASE WHEN f = 'NaN' THEN 'NaN'::numeric ELSE id END AS x"
    " FROM tf ORDER BY x DESC, id LIMIT 3) s ORDER BY id",
    "SELECT id FROM (SELECT id, CASE WHEN f = 'NaN' THEN 'NaN'::numeric ELSE id END AS x"
    " FROM tf ORDER BY x NULLS FIRST, id LIMIT 4) s ORDER BY id",
]


def texts(conn: Any, sql: str) -> list:
    """``sql``'s rows as text (a NaN is ``nan``/``NaN`` on both sides), sorted."""
    return sorted(_text(r) for r in conn.execute(sql).fetchall())


def _text(row: tuple) -> tuple:
    return tuple("NULL" if v is None else str(v) for v in row)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "tf", CREATE, INSERT) as pair:
        yield pair


def test_nan_ad_hoc_and_maintained_as_postgres(both) -> None:
    maintained_as_postgres(*both, QUERIES, CHANGES, rows=texts)


def test_nan_sorts_last_as_postgres(both) -> None:
    ours, pg = both
    for sql in ORDERED:
        want = [_text(r) for r in pg.execute(sql).fetchall()]
        assert [_text(r) for r in ours.execute(sql).fetchall()] == want, sql


def test_nan_constants_and_numeric_nan_as_postgres(both) -> None:
    ours, pg = both
    for call in CONSTANTS:
        sql = f"SELECT {call}"
        assert texts(ours, sql) == texts(pg, sql), sql
    for sql in NUMERIC_QUERIES:
        want = [_text(r) for r in pg.execute(sql).fetchall()]
        assert [_text(r) for r in ours.execute(sql).fetchall()] == want, sql
    same_errors(ours, pg, REFUSED)


def test_numeric_nan_is_refused_where_it_would_be_stored(tmp_path: Path) -> None:
    """Arrow's decimals hold no NaN: a table refuses one (0A000, where PostgreSQL stores it),
    and a view computing one reports 0A000 until the row that makes it is gone."""
    with changeflow.connect(tmp_path / "home", host_seconds=0) as ours:
        ours.execute("CREATE TABLE tn (id int NOT NULL, n numeric, m numeric(10,2))")
        ours.execute("INSERT INTO tn VALUES (1, 1, 1), (2, 2, 2)")
        ours.execute(
            "CREATE MATERIALIZED VIEW vn AS"
            " SELECT id, CASE WHEN m > 1 THEN 'NaN'::numeric ELSE n END AS x FROM tn"
        )
        for sql in [
            "INSERT INTO tn VALUES (3, 'NaN', 1)",
            "INSERT INTO tn VALUES (3, 1, 'NaN')",
            "INSERT INTO tn SELECT 3, 'NaN'::numeric, 1",
            "SELECT * FROM vn",
        ]:
            with pytest.raises(DatabaseError) as caught:
                ours.execute(sql).fetchall()
            assert caught.value.sqlstate == "0A000", sql
        ours.execute("DELETE FROM tn WHERE id = 2")
        assert ours.execute("SELECT * FROM vn").fetchall() == [(1, Decimal(1))]


MANY = (
    "INSERT INTO tf SELECT i, CASE i % 3 WHEN 0 THEN 'NaN'::float8 WHEN 1 THEN 1.5 ELSE 0 END,"
    " CASE WHEN i % 2 = 0 THEN 'NaN'::float8 ELSE i END FROM generate_series(10, 30009) AS s(i)"
)
MANY_QUERIES = [
    "SELECT f, count(*), max(g) FROM tf GROUP BY f",
    "SELECT count(DISTINCT f), count(DISTINCT g) FROM tf",
    "SELECT DISTINCT f FROM tf",
    "SELECT count(*) FROM tf WHERE f = 'NaN' AND g > 1e9",
    "SELECT count(*) FROM tf a JOIN (SELECT DISTINCT f FROM tf) b ON a.f = b.f",
    "SELECT id, g FROM tf ORDER BY g DESC, id LIMIT 3",
    "SELECT count(*) FROM (SELECT f FROM tf EXCEPT ALL SELECT 'NaN'::float8) x",
]


def test_nan_over_many_rows_as_postgres(both) -> None:
    """Enough rows that ad hoc queries run on Arrow columns (hash joins and aggregations)."""
    ours, pg = both
    for conn in both:
        conn.execute(MANY)
    for sql in MANY_QUERIES:
        assert texts(ours, sql) == texts(pg, sql), sql


@pytest.mark.spark
def test_nan_in_views_on_the_cluster_tier_as_postgres(spark, both) -> None:
    """Sums and averages of doubles keep their NaNs apart (a deleted NaN gives the sum back),
    groups, distinct values and joins find NaN, on the cluster tier too."""
    ours, pg = both
    totals = ["SELECT count(*), sum(g), avg(f) FROM tf", "SELECT id % 2, sum(f) FROM tf GROUP BY 1"]
    queries = [*totals, *QUERIES[7:11]]
    maintained_as_postgres(ours, pg, queries, CHANGES, texts, "CLUSTER = true")
    for i in range(len(queries)):
        plan = ours.execute(f"EXPLAIN MATERIALIZED VIEW v{i}").fetchall()
        assert plan[0][0].startswith("Tier: cluster"), plan
