"""interval compared with PostgreSQL 15: input forms, IntervalStyle postgres output, arithmetic
with timestamps and dates (month ends clamped), interval arithmetic, comparison by the 30-day
total, extract, justify_*, age; as a column, ad hoc and in views kept through inserts,
updates, deletes and a restart; PostgreSQL's errors."""

from __future__ import annotations

import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import changeflow
from changeflow.compute.intervals import Interval, fields

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, materialize, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

LITERALS = [
    "'1 month'",
    "'1 day 02:03:04'",
    "'-1 year 2 mons'",
    "'1 year 2 mons 3 days 04:05:06'",
    "'P1Y2M3DT4H5M6S'",
    "'P1W'",
    "'PT1.5S'",
    "'@ 1 day 3 hours ago'",
    "'1.5 months'",
    "'1.5 days'",
    "'2 weeks 1.25 hours'",
    "'-02:03:04.5'",
    "'1 day -02:00:00'",
    "'-1 days +02:00:00'",
    "'0'",
    "'100 years'",
    "'1 decade 1 century'",
    "'3 mons -1 day'",
    "'12345 milliseconds'",
    "'7 microseconds'",
    "'25:00'",
    "'1 y 2 mon 3 d 4 h 5 m 6 s'",
    "'1 day 2'",
]
EXPRESSIONS = [
    "interval '1 month' + timestamp '2024-01-31'",
    "timestamp '2024-03-31 10:00' - interval '1 month'",
    "date '2024-01-31' + interval '1 month 1 day'",
    "date '2023-02-28' - interval '1 year'",
    "timestamptz '2024-01-31 12:00+00' + interval '1 mon 36 hours'",
    "timestamp '2024-03-01' - timestamp '2024-01-01 10:00:00.25'",
    "timestamp '2024-01-01' - timestamp '2024-03-01 10:00'",
    "interval '1 year 2 mons' + interval '3 days -04:00'",
    "interval '1 mon' - interval '1 day 00:00:01'",
    "interval '1 mon 1 day' * 1.5",
    "interval '1 mon 1 day' * 2",
    "3 * interval '1:30'",
    "interval '1 mon' / 7",
    "interval '1 day' / 3",
    "interval '-1 year 3 days' / 2.5",
    "-interval '1 year -2 days 03:00'",
    "interval '1 mon' = interval '30 days'",
    "interval '1 day' < interval '25 hours'",
    "interval '1 year' > interval '360 days'",
    "justify_days(interval '65 days')",
    "justify_days(interval '-1 mon 35 days')",
    "justify_hours(interval '50 hours')",
    "justify_hours(interval '1 day -50 hours')",
    "age(timestamp '2024-03-01', timestamp '2023-01-31 12:00')",
    "age(timestamp '2023-01-31 12:00', timestamp '2024-03-01')",
    "age(timestamp '2024-03-31', timestamp '2024-02-29 23:59:59.5')",
    "extract(epoch from interval '1 year 2 days 00:00:01.5')",
    "extract(second from interval '1 day 00:01:02.5')",
    "extract(milliseconds from interval '00:01:02.5')",
    "extract(microseconds from interval '00:00:02.000005')",
    "extract(day from interval '1 mon 40 days')",
    "extract(hour from interval '-26 hours')",
    "extract(month from interval '14 mons')",
    "extract(quarter from interval '8 mons')",
    "extract(year from interval '-14 mons')",
    "extract(century from interval '250 years')",
    "date_part('minute', interval '01:02:03')",
    "date_part('epoch', interval '1 mon')",
]


def plain(v: Any) -> Any:
    """A value as psycopg gives PostgreSQL's (an interval as a timedelta of 365-day years and
    30-day months; numbers as floats)."""
    if isinstance(v, Interval):
        year, month, *_ = fields(v)
        return timedelta(days=year * 365 + month * 30 + v.days, microseconds=v.micros)
    if isinstance(v, Decimal | float) and not isinstance(v, bool):
        return float(v)
    return v


def rows(cursor: Any) -> list[tuple]:
    return sorted((tuple(plain(v) for v in r) for r in cursor.fetchall()), key=repr)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    create = "CREATE TABLE iv (id int NOT NULL, g int, ts timestamp, d date, i interval)"
    insert = (
        "INSERT INTO iv VALUES (1, 1, '2024-01-31 10:00', '2024-01-31', '1 month'), "
        "(2, 1, '2024-02-29', '2024-02-29', '1 day 02:00'), (3, 2, NULL, NULL, NULL), "
        "(4, 2, '2023-12-31 23:59:59', '2023-12-31', '-1 year 2 mons -00:00:01'), "
        "(5, NULL, '2024-05-31', '2024-05-31', '30 days')"
    )
    with beside_postgres(tmp_path / "home", postgres_url, "iv", create, insert) as pair:
        yield pair


def test_interval_literals_and_expressions_as_postgres(both) -> None:
    ours, pg = both
    for text in LITERALS:
        sql = f"SELECT {text}::interval, ({text}::interval)::text, interval {text}"
        assert rows(ours.execute(sql)) == rows(pg.execute(sql)), sql
    for e in EXPRESSIONS:
        sql = f"SELECT {e}, ({e})::text"
        assert rows(ours.execute(sql)) == rows(pg.execute(sql)), sql


QUERIES = [
    "SELECT id, i, i::text, ts + i, d + i, ts - i, i * 2, i / 4, -i FROM iv",
    "SELECT id FROM iv WHERE i > interval '29 days' AND i <= '1 mon'",
    "SELECT i, count(*) FROM iv GROUP BY i",
    "SELECT g, min(i), max(i), count(DISTINCT i) FROM iv GROUP BY g",
    "SELECT a.id, b.id FROM iv a JOIN iv b ON a.i = b.i",
    "SELECT id, ts - timestamp '2024-01-01', age(ts, timestamp '2020-02-29') FROM iv",
    "SELECT id, extract(day from i), justify_hours(i * 30) FROM iv",
    "SELECT g, sum(i), avg(i), sum(i) FILTER (WHERE id > 1), count(i) FROM iv GROUP BY g",
    "SELECT sum(i)::text, avg(i * 3)::text, avg(-i)::text FROM iv",
    "SELECT g, sum(DISTINCT i), avg(DISTINCT i), count(DISTINCT i) FROM iv GROUP BY g",
    "SELECT sum(DISTINCT i * 0 + interval '1 day')::text, avg(DISTINCT -i)::text FROM iv",
]
CHANGES = [
    "INSERT INTO iv VALUES (6, 1, '2024-08-31', '2024-08-31', 'P1Y2M')",
    "UPDATE iv SET i = i + interval '1 day' WHERE id IN (2, 3, 4)",
    "DELETE FROM iv WHERE id = 1",
    "UPDATE iv SET g = 2, i = '720 hours' WHERE id = 5",
]


def test_interval_columns_ad_hoc_and_maintained_as_postgres(tmp_path: Path, both) -> None:
    ours, pg = both
    for i, sql in enumerate(QUERIES):
        materialize(ours, pg, f"ivv{i}", sql)
    ordered = "SELECT id, i FROM iv ORDER BY i, id"
    for n, change in enumerate([None, *CHANGES]):
        if change is not None:
            for c in (ours, pg):
                c.execute(change)
        if n == 2:  # the views' plans and stored columns are read back after a restart
            ours.close()
            ours = changeflow.connect(tmp_path / "home", host_seconds=0)
            ours.autocommit = True
        for i, sql in enumerate(QUERIES):
            want = rows(pg.execute(sql))
            assert rows(ours.execute(sql)) == want, (sql, change)
            assert rows(ours.execute(f"SELECT * FROM ivv{i}")) == want, (sql, change)
        theirs = [tuple(map(plain, r)) for r in pg.execute(ordered).fetchall()]
        assert [tuple(map(plain, r)) for r in ours.execute(ordered).fetchall()] == theirs
    ours.close()


REFUSED = [
    "SELECT 'abc'::interval",
    "SELECT '1 fortnight'::interval",
    "SELECT 'P1X'::interval",
    "SELECT interval '1 day' / 0",
    "SELECT interval '1 day' + 1",
    "SELECT interval '1 day' * interval '1 day'",
    "SELECT date '2024-01-01' * interval '1 day'",
    "SELECT extract(dow from interval '1 day')",
    "SELECT extract(fortnight from interval '1 day')",
    "SELECT i + ts FROM iv WHERE i < 1",
    "SELECT '2147483647 months'::interval + '1 month'",
    "SELECT sum(i) FROM (VALUES ('2147483647 months'::interval), ('1 mon'::interval)) v(i)",
    "SELECT sum(ts) FROM iv",
]


VALUES_QUERIES = [
    "VALUES (INTERVAL '1 day'), ('2 hours'), (NULL)",
    "SELECT x, x::text FROM (VALUES ('1 mon'), (INTERVAL '1 day'), ('-2 hours')) v(x)",
    "SELECT * FROM (VALUES (1, 'a'), ('2', 'b')) v(n, s) WHERE n > 1",
    "SELECT v.x FROM (VALUES (INTERVAL '1 month'), ('30 days')) v(x) JOIN iv ON iv.i = v.x",
]


def test_values_take_a_quoted_literal_as_the_column_type(both) -> None:
    """A quoted literal in VALUES takes its column's type from the other rows, as in
    PostgreSQL; one that does not read as that type is refused as there."""
    ours, pg = both
    for sql in VALUES_QUERIES:
        assert rows(ours.execute(sql)) == rows(pg.execute(sql)), sql
    same_errors(ours, pg, ["VALUES (INTERVAL '1 day'), ('nope')", "VALUES (1), ('x')"])


def test_interval_errors_as_postgres_gives_them(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)


def test_a_temporal_filter_with_an_interval_is_maintained(tmp_path: Path) -> None:
    """``mz_now() <= ts + INTERVAL '1 day'`` (and an interval column) in a view and ad hoc:
    rows whose time plus the interval has passed are left out, and changes are followed."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE ev (id int, ts timestamptz, keep interval)")
    conn.execute(
        "INSERT INTO ev VALUES (1, '2001-01-01 00:00+00', '1 hour'), "
        "(2, '2999-01-01 00:00+00', '1 hour'), (3, '2001-01-01 00:00+00', '2000 years')"
    )
    fixed = "SELECT id FROM ev WHERE mz_now() <= ts + INTERVAL '1 day'"
    by_column = "SELECT id FROM ev WHERE mz_now() <= ts + keep"
    conn.execute(f"CREATE MATERIALIZED VIEW fixed AS {fixed}")
    conn.execute(f"CREATE MATERIALIZED VIEW by_column AS {by_column}")

    def ids(sql: str) -> list[int]:
        return sorted(r[0] for r in conn.execute(sql).fetchall())

    assert ids(fixed) == ids("SELECT * FROM fixed") == [2]
    assert ids(by_column) == ids("SELECT * FROM by_column") == [2, 3]
    conn.execute("UPDATE ev SET ts = '2998-06-01 00:00+00' WHERE id = 1")
    conn.execute("UPDATE ev SET keep = '1 day' WHERE id = 3")
    assert ids(fixed) == ids("SELECT * FROM fixed") == [1, 2]
    assert ids(by_column) == ids("SELECT * FROM by_column") == [1, 2]
    conn.close()
