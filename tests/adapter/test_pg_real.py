"""real (float4) compared with PostgreSQL 15: float32 values, their shortest text (0.1, 1.1,
3.4028235e+38), the types of real's operators (real with real is real, with any other number
double precision), casts, range errors (22003), NaN and infinities, sum (real) and avg (double
precision), the catalog's name for it; ad hoc and as materialized views kept through inserts,
updates and deletes. PostgreSQL's float4 text is read as the float32 it names, as changeflow's
connection gives a real."""

from __future__ import annotations

import random
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from psycopg.adapt import Loader

from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE rt (id int PRIMARY KEY, g int, r real, s real, d double precision)",
    "INSERT INTO rt VALUES (1, 1, 0.1, 0.2, 0.1), (2, 1, 1.1, 3, 2.5), (3, 2, 3.4028235e+38, 1,"
    " 1e300), (4, 2, -2.5, NULL, NULL), (5, 3, NULL, 1e-45, 7), (6, 3, 'NaN', 'Infinity', 1),"
    " (7, 4, 123456.7, 1234567, -0.5), (8, 4, 16777217, 0.0001, 1e-5)",
]
TEXTS = [
    "SELECT id, r, r::text, s::text, pg_typeof(r) FROM rt ORDER BY id",
    "SELECT id, r::numeric, s::numeric FROM rt WHERE r <> 'NaN' AND s <> 'Infinity' ORDER BY id",
    "SELECT x::text FROM (VALUES (1, 0.1::real), (2, 1.1::real), (3, 3.4028235e+38::real),"
    " (4, 1e-45::real), (5, 100000::real), (6, 999999::real), (7, 1e6::real), (8, 1234560::real),"
    " (9, 0.00012345::real), (10, 1e-5::real), (11, '-Infinity'::real), (12, 'nan'::real),"
    " (13, '-0'::real), (14, ' 1.5 '::real)) v(i, x) ORDER BY i",
]
TYPES = [
    "SELECT pg_typeof(1::real + 1), pg_typeof(1::real + 1.5), pg_typeof(1::real * 2),"
    " pg_typeof(1::real + 1::float8), pg_typeof(1::real + 1::bigint), pg_typeof(1::real / 2::real),"
    " pg_typeof(-(1::real)), pg_typeof(abs(1::real)), pg_typeof(round(1::real)),"
    " pg_typeof(sqrt(2::real))",
    "SELECT pg_typeof(coalesce(1::real, 1)), pg_typeof(greatest(1::real, 2::float8)),"
    " pg_typeof(CASE WHEN true THEN 1::real ELSE 2 END)",
    "SELECT pg_typeof(x) FROM (SELECT 1 UNION SELECT 1::real) s(x)",
    "SELECT 0.1::real * 2, 0.1::real + 0.2::real, (0.1::real + 0.2::real)::text, 1::real / 3,"
    " (1::real / 3::real)::text, 0.1::real = 0.1, 0.1::real = 0.1::real, 0.1::real::float8",
    "SELECT id, r + s, (r * s)::text, r - d, abs(r)::text, -s FROM rt WHERE id <> 3 ORDER BY id",
    "SELECT 1.5::real::int, 2.5::real::int, 1e10::real::bigint, 33.5::numeric::real,"
    " 1.23456789::real::numeric, 123456789::real::numeric, 1.1::real::float8::real",
    "SELECT 'Infinity'::real + 1, 'nan'::real = 'nan'::real, 'nan'::real > 'Infinity'::real",
    "SELECT sum(r), pg_typeof(sum(r)), avg(r), pg_typeof(avg(r)), min(r), pg_typeof(max(r)),"
    " stddev(s), pg_typeof(stddev(s)) FROM rt WHERE id IN (1, 2, 4)",
    "SELECT data_type FROM information_schema.columns WHERE table_name = 'rt' ORDER BY"
    " ordinal_position",
    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'rt'::regclass"
    " AND attnum > 0 ORDER BY attnum",
]
REFUSED = [
    "SELECT '1e39'::real",
    "SELECT '-1e39'::real",
    "SELECT '1e-50'::real",
    "SELECT 'x'::real",
    "SELECT 1e39::real",
    "SELECT 1e39::float8::real",
    "SELECT 1e-50::float8::real",
    "SELECT 3e38::real + 3e38::real",
    "SELECT 2e38::real * 2::real",
    "SELECT 1e-30::real * 1e-30::real",
    "SELECT 1::real / 0::real",
    "SELECT 1e10::real::int",
    "SELECT 'inf'::real::int",
    "SELECT r * 10::real FROM rt",
    "INSERT INTO rt VALUES (9, 5, 1e39, 0, 0)",
]
CHANGES = [
    "INSERT INTO rt VALUES (9, 1, 0.3, 0.7, 1), (10, 2, 1e-3, 2, 2)",
    "UPDATE rt SET r = 2.2 WHERE id = 1",
    "UPDATE rt SET s = r WHERE id = 7",
    "DELETE FROM rt WHERE id IN (3, 6)",
    "DELETE FROM rt WHERE g = 1",
]
VIEWS = [
    "SELECT id, r, s, r + s AS t, r::text AS rt, r * 2 AS twice FROM rt WHERE id NOT IN (3, 6)",
    "SELECT g, sum(r), avg(r), min(r), max(s), count(r) FROM rt WHERE id NOT IN (3, 6) GROUP BY g",
    "SELECT id, r FROM rt WHERE r > 1 AND r < 1e30",
    "SELECT a.id, b.id FROM rt a JOIN rt b ON a.r = b.s",
    "SELECT DISTINCT r FROM rt",
    "SELECT id, sum(r) OVER (PARTITION BY g) FROM rt WHERE id NOT IN (3, 6)",
]


class Float4Loader(Loader):
    """PostgreSQL's float4 text as the float32 it names (what changeflow's connection gives)."""

    def load(self, data: Any) -> float:
        value = float(bytes(data).decode())
        return struct.unpack("f", struct.pack("f", value))[0]


def texts(conn: Any, sql: str) -> list:
    """``sql``'s rows as text (a NaN is ``nan`` on both sides), sorted."""
    rows = conn.execute(sql).fetchall()
    return sorted(tuple("NULL" if v is None else str(v) for v in row) for row in rows)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "rt", *SETUP) as (ours, pg):
        pg.adapters.register_loader("float4", Float4Loader)
        yield ours, pg


def test_real_values_text_and_types_as_postgres(both) -> None:
    ours, pg = both
    same_outcomes(ours, pg, TEXTS + TYPES)


def test_real_range_errors_as_postgres(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)


def test_real_maintained_as_postgres(both) -> None:
    maintained_as_postgres(*both, VIEWS, CHANGES, rows=texts)


def test_real_in_explicit_casts_of_columns(both) -> None:
    """A real column takes a double, an integer and text, each rounded to a float32."""
    ours, pg = both
    for conn in both:
        conn.execute("INSERT INTO rt VALUES (11, 5, 0.1::float8, 16777217, '1.1')")
        conn.execute("UPDATE rt SET s = d WHERE id = 2")
    same_outcomes(
        ours, pg, ["SELECT id, r, s, r::text, s::text FROM rt WHERE g = 5 OR id = 2 ORDER BY id"]
    )


CLUSTER_VIEWS = [
    "SELECT id, r, s, r::float8 AS d FROM rt",
    "SELECT g, min(r), max(s), count(r) FROM rt GROUP BY g",
    "SELECT id FROM rt WHERE r > s",
    "SELECT a.id, b.id FROM rt a JOIN rt b ON a.r = b.s",
    "SELECT DISTINCT r FROM rt",
]


@pytest.mark.spark
def test_real_on_the_cluster_tier_as_postgres(spark, both) -> None:
    """Spark holds reals as FloatType: read, compared and widened there, kept through changes;
    a view that computes with reals runs in this process (CLUSTER = true refused, 0A000)."""
    ours, pg = both
    maintained_as_postgres(ours, pg, CLUSTER_VIEWS, CHANGES, texts, "CLUSTER = true")
    for i in range(len(CLUSTER_VIEWS)):
        plan = ours.execute(f"EXPLAIN MATERIALIZED VIEW v{i}").fetchall()
        assert plan[0][0].startswith("Tier: cluster"), plan
    for sql in ["SELECT sum(r) FROM rt", "SELECT id, r + s FROM rt", "SELECT r::text FROM rt"]:
        with pytest.raises(DatabaseError) as caught:
            ours.execute(f"CREATE MATERIALIZED VIEW w WITH (CLUSTER = true) AS {sql}")
        assert caught.value.sqlstate == "0A000", sql


MANY = (
    "INSERT INTO rt SELECT i, i % 7, (i % 13) / 10.0, i * 1.5, i / 3.0"
    " FROM generate_series(100, 20099) AS s(i)"
)
MANY_QUERIES = [
    "SELECT g, count(*), avg(r), min(s), max(s) FROM rt WHERE id >= 100 GROUP BY g",
    "SELECT r, count(*) FROM rt GROUP BY r",
    "SELECT count(*) FROM rt a JOIN (SELECT DISTINCT r FROM rt) b ON a.r = b.r",
    "SELECT id, r, s FROM rt WHERE r > 0.5 ORDER BY s DESC, id LIMIT 3",
    "SELECT count(*) FROM rt WHERE r = 0.3::real AND s > 100",
    "SELECT count(*), sum(r + r), max(r::text), pg_typeof(sum(r)) FROM rt WHERE r < 1",
]


def test_real_over_many_rows_as_postgres(both) -> None:
    """Enough rows that ad hoc queries run on Arrow columns (float32 ones) where they can. (A
    sum of many reals is left out: PostgreSQL rounds each partial sum to a float32, in the order
    it reads the rows; changeflow adds them as doubles and rounds the total.)"""
    ours, pg = both
    for conn in both:
        conn.execute(MANY)
    for sql in MANY_QUERIES:
        assert texts(ours, sql) == texts(pg, sql), sql


def test_real_text_of_many_float32s_as_postgres(both) -> None:
    """The shortest text of 2,000 float32s of every magnitude (random bit patterns, denormals
    too) is PostgreSQL's, and reads back to the same value."""
    ours, pg = both
    rng = random.Random(15)
    values = []
    while len(values) < 2000:
        f = struct.unpack("f", struct.pack("I", rng.getrandbits(32)))[0]
        if f == f and abs(f) != float("inf"):
            values.append(f)
    rows = ", ".join(f"({i}, '{v!r}'::real)" for i, v in enumerate(values))
    sql = f"SELECT x::text, x::text::real = x FROM (VALUES {rows}) v(i, x) ORDER BY i"
    assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall()
