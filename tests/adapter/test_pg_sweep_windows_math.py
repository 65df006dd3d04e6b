"""Everyday statements that once failed, run here and on PostgreSQL 15: window functions
ordered by a date or timestamp (the default RANGE frame, and RANGE offsets given as
intervals), the trigonometric functions, gcd/lcm, num_nulls/num_nonnulls, factorial and
width_bucket."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE sw (sid int PRIMARY KEY, emp int, amount numeric(8,2), sold_at timestamp,"
    " day date)",
    "INSERT INTO sw VALUES (1, 1, 250, '2024-01-05 10:30', '2024-01-05'), (2, 2, 99.99,"
    " '2024-01-06 14:00', '2024-01-06'), (3, 2, 10.5, '2024-01-07 09:15', '2024-01-07'),"
    " (4, NULL, 42, '2024-03-01', '2024-03-01'), (5, 1, NULL, NULL, NULL), (6, 3, 7,"
    " '2024-01-06 14:00', '2024-01-06')",
]
WINDOWS = [
    "SELECT sid, sum(amount) OVER (PARTITION BY emp ORDER BY sold_at) FROM sw ORDER BY sid",
    "SELECT sid, count(*) OVER (ORDER BY sold_at), rank() OVER (ORDER BY day DESC) FROM sw"
    " ORDER BY sid",
    "SELECT sid, count(*) OVER (ORDER BY sold_at RANGE BETWEEN INTERVAL '2 days' PRECEDING"
    " AND CURRENT ROW) FROM sw ORDER BY sid",
    "SELECT sid, count(*) OVER (ORDER BY sold_at DESC RANGE BETWEEN INTERVAL '1 day'"
    " PRECEDING AND INTERVAL '1 day 4 hours' FOLLOWING) FROM sw ORDER BY sid",
    "SELECT sid, count(amount) OVER (ORDER BY day RANGE BETWEEN INTERVAL"
    " '1 day' PRECEDING AND INTERVAL '1 month' FOLLOWING) FROM sw ORDER BY sid",
    "SELECT sid, sum(sid) OVER (ORDER BY amount DESC RANGE BETWEEN 100 PRECEDING AND 50"
    " FOLLOWING) FROM sw ORDER BY sid",
    "SELECT sid, max(sid) OVER (ORDER BY sold_at RANGE BETWEEN INTERVAL '-1 day' PRECEDING"
    " AND CURRENT ROW) FROM sw",
    "SELECT sid, max(sid) OVER (ORDER BY sold_at RANGE BETWEEN 1 PRECEDING AND CURRENT ROW)"
    " FROM sw",
    "SELECT sid, max(sid) OVER (ORDER BY sid RANGE BETWEEN INTERVAL '1 day' PRECEDING AND"
    " CURRENT ROW) FROM sw",
]
MATH = [
    "SELECT sin(0), cos(0), tan(0), atan2(1, 1), asin(1), acos(0), atan(1), cot(1)",
    "SELECT sinh(1), cosh(0), tanh(0.5), asinh(1), sin('1'), sin(NULL), cos(2::real)",
    "SELECT asin(2)",
    "SELECT acos(-1.5)",
    "SELECT sin('x')",
    "SELECT gcd(12, 18), lcm(4, 6), gcd(12::bigint, -18), gcd(1.5, 0.5), lcm(0, 3),"
    " pg_typeof(gcd(1::bigint, 2)), gcd(NULL, 1)",
    "SELECT num_nonnulls(1, NULL, 2), num_nulls(1, NULL), num_nulls(NULL, NULL, 'a')",
    "SELECT num_nulls()",
    "SELECT gcd(1.5, 2)",
    "SELECT factorial(5), factorial(0), factorial(20), factorial(3)::text",
    "SELECT factorial(-1)",
    "SELECT width_bucket(5, 0, 10, 5), width_bucket(5.35, 0.024, 10.06, 5),"
    " width_bucket(-1, 0, 10, 5), width_bucket(10, 0, 10, 5), width_bucket(3, 10, 0, 5),"
    " width_bucket(11::float8, 10, 0, 5), width_bucket(0, 10, 0, 5), width_bucket(NULL, 0, 1, 2)",
    "SELECT pg_typeof(width_bucket(5, 0, 10, 5)), width_bucket(2.5::float8, 0, 10, 4)",
    "SELECT width_bucket(1, 0, 10, 0)",
    "SELECT width_bucket(1, 5, 5, 2)",
    "SELECT width_bucket('NaN'::numeric, 0, 10, 2)",
    "SELECT width_bucket(1::float8, 0, 'infinity', 2)",
    "SELECT width_bucket(20, 0, 10, 2147483647)",
    "SELECT sid, width_bucket(amount, 0, 300, 3), factorial(sid) FROM sw ORDER BY sid",
]
CHANGES = [
    "INSERT INTO sw VALUES (7, 2, 5, '2024-01-07 20:00', '2024-01-07')",
    "UPDATE sw SET sold_at = sold_at + INTERVAL '1 day' WHERE sid = 2",
    "DELETE FROM sw WHERE sid = 1",
]


def test_windows_and_math_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "sw", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, WINDOWS + MATH)


def test_windows_over_timestamps_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    queries = [q.removesuffix(" ORDER BY sid") for q in [*WINDOWS[:5], MATH[-1]]]
    with beside_postgres(tmp_path / "home", postgres_url, "sw", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, queries, CHANGES)
