"""AT TIME ZONE (``timezone(zone, value)``) and LOCALTIMESTAMP compared with PostgreSQL 15: a
timestamp read as wall time in a named zone (any case) is an instant, an instant is the wall
time there (daylight saving included), ad hoc and in maintained views; an unknown zone is
22023."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE tz (id int NOT NULL, ts timestamp, tt timestamptz, z text)"
INSERT = (
    "INSERT INTO tz VALUES (1, '2024-01-01 12:00', '2024-01-01 12:00+00', 'America/New_York'),"
    " (2, '2024-07-01 12:00', '2024-03-31 01:30+00', 'europe/paris'), (3, NULL, NULL, 'UTC'),"
    " (4, '2024-11-03 01:30', '2024-11-03 05:30+00', 'Asia/Kolkata')"
)
CHANGES = [
    "INSERT INTO tz VALUES (5, '2023-03-26 02:30', '2023-03-26 00:30+00', 'Europe/Berlin')",
    "UPDATE tz SET z = 'Australia/Sydney' WHERE id = 1",
    "DELETE FROM tz WHERE id = 2",
]
QUERIES = [
    "SELECT id, ts AT TIME ZONE 'UTC', tt AT TIME ZONE 'America/New_York', ts AT TIME ZONE z,"
    " tt AT TIME ZONE z, timezone(z, tt) FROM tz",
    "SELECT id, (tt AT TIME ZONE 'Asia/Tokyo')::date FROM tz WHERE ts AT TIME ZONE z > tt",
]
CONSTANTS = [
    "SELECT pg_typeof(LOCALTIMESTAMP), LOCALTIMESTAMP <= now() AT TIME ZONE 'UTC'",
    "SELECT TIMESTAMP '2024-01-01 12:00' AT TIME ZONE 'UTC',"
    " timezone('utc', TIMESTAMP '2024-01-01')",
]
REFUSED = [
    "SELECT TIMESTAMP '2024-01-01' AT TIME ZONE 'Nowhere/Land'",
    "SELECT timezone('UTC', 1)",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "tz", CREATE, INSERT) as pair:
        yield pair


def test_time_zones_ad_hoc_and_maintained_as_postgres(both) -> None:
    maintained_as_postgres(*both, QUERIES, CHANGES)


def test_time_zone_constants_and_errors_as_postgres(both) -> None:
    ours, pg = both
    for sql in CONSTANTS:
        assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall(), sql
    same_errors(ours, pg, REFUSED)
