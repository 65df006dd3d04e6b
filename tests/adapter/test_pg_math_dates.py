"""chr, cbrt, degrees, radians, log, make_timestamp, to_date, to_timestamp by a template,
justify_interval and age of one timestamp compared with PostgreSQL 15: the same statements on
the same data, ad hoc and installed as materialized views kept through inserts, updates and
deletes, and PostgreSQL's errors. Numbers are compared to 12 places, except log's ad hoc,
exactly (numeric for a numeric, with the digits PostgreSQL's log_var gives; double otherwise);
a view keeps an unconstrained numeric to 10 places."""

from __future__ import annotations

import sys
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = (
    "CREATE TABLE tm (id int NOT NULL, n int, x numeric(12,2), f float8, s text, ts timestamp,"
    " i interval)"
)
INSERT = (
    "INSERT INTO tm VALUES (1, 65, 27, 2.5, '2024-03-05 10:11:12.5', '2024-01-31 10:00',"
    " '-1 mon 35 days'), (2, 233, 0.01, 100, '5/3/2024 01:02:03 PM', '2024-02-29', '50 hours'),"
    " (3, NULL, NULL, NULL, NULL, NULL, NULL),"
    " (4, 128512, -8, 1e-3, '2023-12-31 23:59:59.999', '1999-12-31 23:59:59', '1 mon -1 hour')"
)
CHANGES = [
    "INSERT INTO tm VALUES (5, 960, 1000, 8, '2000-02-29 00:00:00', '2000-02-29 12:00',"
    " '-40 days 3 hours')",
    "UPDATE tm SET n = 8364, x = 0.5, i = '29 days 25:00' WHERE id = 1",
    "DELETE FROM tm WHERE id = 4",
]
QUERIES = [
    "SELECT id, chr(n), chr(n + 1) || chr(66) FROM tm",
    "SELECT id, cbrt(x), cbrt(f), degrees(f), radians(x), log(f), log(abs(x) + 1)::float8,"
    " log(2, abs(x) + 2)::float8 FROM tm",
    "SELECT id, make_timestamp(2024, 2, 29, 23, 59, f / 10), make_date(2020, 1, id) FROM tm",
    "SELECT id, to_timestamp(s, 'YYYY-MM-DD HH24:MI:SS.MS'), to_date(s, 'YYYY-MM-DD') FROM tm"
    " WHERE s LIKE '2%'",
    "SELECT id, to_timestamp(s, 'DD/MM/YYYY HH12:MI:SS AM') FROM tm WHERE s LIKE '%/%'",
    "SELECT id, justify_interval(i)::text, justify_interval(i * 7)::text,"
    " justify_interval(-i)::text FROM tm",
    "SELECT id FROM tm WHERE degrees(radians(n)) > 100 AND log(10, n) < 4",
]
CONSTANTS = [
    "chr(65)",
    "chr(233)",
    "chr(128512)",
    "cbrt(27)",
    "cbrt(-8.0)",
    "degrees(pi())",
    "radians(180)",
    "log(100)",
    "log(100.0)",
    "log(2, 8)",
    "log(2.5, 10)",
    "make_timestamp(2024, 1, 2, 3, 4, 5.5)",
    "make_timestamp(2024, 2, 29, 23, 59, 59.999999)",
    "make_timestamp(2024, 1, 1, 24, 0, 0)",
    "make_timestamp(2024, 1, 1, 0, 0, 60)",
    "to_date('2024-03-05', 'YYYY-MM-DD')",
    "to_date('5 Mar 2024', 'DD Mon YYYY')",
    "to_date('20240305', 'YYYYMMDD')",
    "to_date('2024-3-5', 'YYYY-MM-DD')",
    "to_date('99 july 1', 'YY Month DD')",
    "to_date('2024 060', 'YYYY DDD')",
    "to_timestamp('2024-03-05 10:11', 'YYYY-MM-DD HH24:MI')",
    "to_timestamp('05/03/2024 12:02:03 AM', 'DD/MM/YYYY HH12:MI:SS AM')",
    "to_timestamp('2024-03-05 10:11:12.345', 'YYYY-MM-DD HH24:MI:SS.MS')",
    "to_timestamp('2024-03-05 10:11:12.5', 'YYYY-MM-DD HH24:MI:SS.US')",
    "to_timestamp('Tue 2024-03-05', 'Dy YYYY-MM-DD')",
    "to_timestamp(1700000000)",
    "justify_interval(interval '-1 mon 35 days')::text",
    "justify_interval(interval '1 mon -1 hour')::text",
    "justify_interval(interval '50 hours 40 days')::text",
    "justify_interval(interval '-1 year 400 days -30 hours')::text",
    "age(timestamp '2020-01-01') = age(current_date, timestamp '2020-01-01')",
    "age(timestamptz '2020-01-01 00:00+00') > interval '1 year'",
    "age(date '2020-01-01') > interval '1 year'",
]
REFUSED = [
    "SELECT chr(0)",
    "SELECT chr(-1)",
    "SELECT chr(1114112)",
    "SELECT chr(1.5)",
    "SELECT log(0)",
    "SELECT log(-1.0)",
    "SELECT log(1, 8)",
    "SELECT log(0, 8)",
    "SELECT log(2, 0)",
    "SELECT log(2, 8::float8)",
    "SELECT log(2.5::float8, 8)",
    "SELECT cbrt(true)",
    "SELECT make_timestamp(2024, 2, 30, 0, 0, 0)",
    "SELECT make_timestamp(2024, 1, 1, 25, 0, 0)",
    "SELECT make_timestamp(2024, 1, 1, 24, 0, 1)",
    "SELECT make_timestamp(2024, 1, 1, 0, 60, 0)",
    "SELECT to_date('2024-13-05', 'YYYY-MM-DD')",
    "SELECT to_date('abc', 'YYYY-MM-DD')",
    "SELECT to_date('2024-02-30', 'YYYY-MM-DD')",
    "SELECT to_timestamp('2024-01-01 25:00', 'YYYY-MM-DD HH24:MI')",
    "SELECT justify_interval(1)",
    "SELECT age(1)",
]


def plain(v: Any) -> Any:
    """A value both sides give alike: numbers as floats to 12 places, times as text."""
    if isinstance(v, Decimal | float) and not isinstance(v, bool):
        return round(float(v), 12)
    if isinstance(v, datetime | date | timedelta):
        return str(v.replace(tzinfo=None) if isinstance(v, datetime) else v)
    return v


def rows(conn: Any, sql: str) -> list:
    return sorted((tuple(map(plain, r)) for r in conn.execute(sql).fetchall()), key=str)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "tm", CREATE, INSERT) as pair:
        yield pair


def test_constants_as_postgres(both) -> None:
    ours, pg = both
    for call in CONSTANTS:
        sql = f"SELECT {call}"
        assert rows(ours, sql) == rows(pg, sql), sql


def test_columns_ad_hoc_and_maintained_as_postgres(both) -> None:
    maintained_as_postgres(*both, QUERIES, CHANGES, rows=rows)


def test_errors_as_postgres_gives_them(both) -> None:
    same_errors(*both, REFUSED)


LOGS = [
    "log(100::numeric)",
    "log(2.5)",
    "log(100)",
    "log(100::float8)",
    "log(2.0, 8.0)",
    "log(2, 1024.0)",
    "log(0.5, 0.25)",
    "log(1.05)",
    "log(0.95)",
    "log(1.0)",
    "log(1e10::numeric)",
    "log(0.001)",
    "log(123456789.123456789)",
    "log(1.5::numeric(5,3))",
    "log(10, 2.000000000000000000001)",
    "log(x) FROM tm WHERE x > 0",
    "log(2, x) FROM tm WHERE x > 0",
    "log(f) FROM tm WHERE f > 0",
    "log(2, 8)",
    "log(n, 2) FROM tm WHERE n > 1",
]


def test_log_of_numeric_is_numeric_as_postgres(both) -> None:
    """Each log's value and type as PostgreSQL gives them: numeric with its digits for a
    numeric argument, double precision for the others."""
    ours, pg = both
    for call in LOGS:
        sql = f"SELECT {call}"
        theirs = sorted(pg.execute(sql).fetchall())
        assert sorted(ours.execute(sql).fetchall()) == theirs, sql
        assert [type(v) for (v,) in theirs] == [
            type(v) for (v,) in sorted(ours.execute(sql).fetchall())
        ], sql
        assert [str(v) for (v,) in theirs] == [
            str(v) for (v,) in sorted(ours.execute(sql).fetchall())
        ], sql
    ours.execute(
        "CREATE MATERIALIZED VIEW logs AS SELECT id, log(x), log(2, x) AS log2 FROM tm WHERE x > 0"
    )
    for change in (None, "INSERT INTO tm (id, x) VALUES (7, 1000), (8, 1.05)"):
        if change is not None:
            for conn in (ours, pg):
                conn.execute(change)
        want = pg.execute("SELECT id, log(x), log(2, x) FROM tm WHERE x > 0 ORDER BY id")
        got = ours.execute("SELECT * FROM logs ORDER BY id").fetchall()
        for mine, theirs in zip(got, want.fetchall(), strict=True):
            assert mine[0] == theirs[0]
            assert all(isinstance(v, Decimal) for v in mine[1:])
            assert all(
                abs(a - b) <= Decimal("5e-11") for a, b in zip(mine[1:], theirs[1:], strict=True)
            )


# quoted literals where a function takes no text: read as the one category it takes there
UNKNOWN_LITERALS = [
    "trim_scale('1.50')",
    "scale('1.50')",
    "min_scale('1.50')",
    "sqrt('4')",
    "abs('-1')",
    "round('1.5')",
    "round('1.234', 2)",
    "trunc('1.239', 2)",
    "power('2', '3')",
    "exp('1')",
    "jsonb_typeof('{}')",
    "length('abc')",
    "greatest('1', '2')",
]


def test_unknown_literals_take_the_functions_type_as_postgres(both) -> None:
    """A quoted literal is read as the type the function takes (its value and type as
    PostgreSQL gives them); where that reading fails, or several categories fit, the same
    SQLSTATE."""
    ours, pg = both
    for call in UNKNOWN_LITERALS:
        sql = f"SELECT {call}"
        theirs, mine = pg.execute(sql).fetchall(), ours.execute(sql).fetchall()
        assert [(type(v), str(v)) for (v,) in mine] == [(type(v), str(v)) for (v,) in theirs], sql
    same_errors(
        ours,
        pg,
        [
            "SELECT trim_scale('a')",
            "SELECT scale('a')",
            "SELECT min_scale('a')",
            "SELECT sqrt('x')",
            "SELECT round(1.5::float8, 2)",
            "SELECT to_char('2024-01-01', 'YYYY')",
            "SELECT date_part('year', '2024-01-01')",
            "SELECT upper('a', 'b')",
        ],
    )
