"""``date_trunc``, ``date_bin`` and ``extract`` as PostgreSQL 15 resolves and computes them: a
quoted literal or NULL that could be a timestamp or an interval is ambiguous (42725);
``date_trunc`` of an interval; ``date_trunc(unit, x, zone)`` truncates in that zone; ``date_bin``
of timestamps, timestamptz, dates and mixes, before and after its origin, and its errors. Ad hoc
and in materialized views through changes, compared with PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SPAN = "interval '3 years 5 months 10 days 27:45:12.345678'"
NEGATIVE = "interval '-3 years -5 months -10 days -27:45:12.345678'"
UNITS = ["microseconds", "milliseconds", "second", "minute", "hour", "day", "month", "quarter"]
UNITS += ["year", "decade", "century", "millennium", "week", "fortnight"]
AD_HOC = (
    [
        "SELECT date_trunc('day', '2024-01-01')",
        "SELECT extract(year from '2024-01-01')",
        "SELECT date_part('year', '2024-01-01')",
        "SELECT date_trunc('day', NULL)",
        "SELECT extract(year from NULL)",
        "SELECT date_part('year', NULL)",
        "SELECT date_trunc('day', 5)",
        "SELECT date_trunc('day', '2024-01-01'::date),"
        " date_trunc('day', '2024-01-01 10:00'::timestamp)",
        "SELECT pg_typeof(date_trunc('day', '1 day'::interval))",
        "SELECT date_trunc('day', '2024-01-01 03:00+00'::timestamptz, 'Asia/Tokyo')",
        "SELECT date_trunc('day', '2024-01-01 03:00+00', 'Asia/Tokyo')",
        "SELECT date_trunc('month', '2024-01-01 03:00'::timestamp, 'Asia/Tokyo')",
        "SELECT date_trunc('hour', '2024-01-01 03:30+00'::timestamptz, 'Asia/Kolkata')",
        "SELECT date_trunc('day', '2024-01-01'::date, 'America/New_York')",
        "SELECT date_trunc('day', NULL, 'UTC')",
        "SELECT date_trunc('day', 5, 'UTC')",
        "SELECT date_trunc('day', '1 day'::interval, 'UTC')",
    ]
    + [
        f"SELECT date_trunc('{u}', {SPAN})::text, date_trunc('{u}', {NEGATIVE})::text"
        for u in UNITS
    ]
    + ["SELECT date_trunc('year', interval '-15 months')::text"]
    + [  # the units of timestamps too, a century and a millennium counted from their year 1
        f"SELECT date_trunc('{u}', TIMESTAMP '{t}'), date_trunc(upper('{u}'), DATE '{t[:10]}')"
        for u in UNITS[:-2]
        for t in ("1970-03-20 04:30:17.123456", "2000-12-31 23:59:59.9999", "2001-01-01")
    ]
    + [
        f"SELECT date_bin({stride}, {source}, {origin})"
        for stride, source, origin in [
            ("'5 min'", "TIMESTAMP '2024-01-01 00:05'", "TIMESTAMP '2024-01-01 00:10'"),
            ("'5 min'", "TIMESTAMP '2024-01-01 00:04'", "TIMESTAMP '2024-01-01 00:10'"),
            ("'1 day 2 hours'", "TIMESTAMPTZ '2024-01-05 10:00+02'", "'2001-01-01'"),
            ("'15 minutes'", "TIMESTAMP '2024-01-01 10:37'", "TIMESTAMPTZ '2000-01-01'"),
            ("'15 minutes'", "'2024-01-01 10:37:00'", "'2000-01-01'"),
            ("'1.5 seconds'", "TIMESTAMP '2024-01-01 10:37:00.7'", "'2024-01-01 10:37:00.1'"),
            ("'1 day'", "DATE '2024-01-01'", "TIMESTAMP '2000-01-01'"),
            ("'1 day'", "DATE '2024-01-01'", "DATE '2000-01-01'"),
            ("NULL", "TIMESTAMP '2024-01-01'", "'2000-01-01'"),
            ("'1 month'", "TIMESTAMP '2024-01-01'", "TIMESTAMP '2024-01-01'"),
            ("'0 min'", "TIMESTAMP '2024-01-01'", "TIMESTAMP '2024-01-01'"),
            ("'-5 min'", "TIMESTAMP '2024-01-01'", "TIMESTAMP '2024-01-01'"),
        ]
    ]
    + ["SELECT date_bin('15 minutes', TIMESTAMP '2024-01-01 10:37:00')"]
)
CREATE = "CREATE TABLE dt (id int NOT NULL, s interval, t timestamptz)"
INSERT = (
    "INSERT INTO dt VALUES (1, '1 year 13 days 25:30:00', '2024-03-01 01:30+00'),"
    " (2, '-2 months -40:00:00.5', '2024-02-29 23:59:59.5+00'), (3, NULL, NULL)"
)
QUERIES = [
    "SELECT id, date_trunc('century', t), date_trunc('decade', t::timestamp) FROM dt",
    "SELECT id, date_trunc('hour', s)::text, date_trunc('month', s)::text,"
    " date_trunc('day', t, 'Asia/Tokyo'), date_trunc('month', t, 'America/New_York') FROM dt",
    "SELECT id, date_bin('90 minutes', t, '2024-01-01 00:15+00'), date_bin('1 day 6 hours',"
    " t::timestamp, TIMESTAMP '2030-01-01') FROM dt",
]
CHANGES = [
    "INSERT INTO dt VALUES (4, '7 days 3 microseconds', '2023-12-31 20:00+00')",
    "UPDATE dt SET s = s * 3, t = t + interval '5 hours' WHERE id < 3",
    "DELETE FROM dt WHERE id = 1",
]


def test_date_trunc_and_extract_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "dt", CREATE, INSERT) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
