"""Dates and timestamps written in PostgreSQL's other input forms (month names, MDY with
slashes, two-digit years, yyyymmdd, a day of the year, Julian days, AM/PM, time zones by
offset, abbreviation and IANA name), compared with PostgreSQL 15: casts ad hoc, INSERTs into
date and timestamp columns, their errors (22007, 22008, 22023), and a materialized view
kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE dti (id int NOT NULL, s text, d date, t timestamp, z timestamptz)"
INSERT = (
    "INSERT INTO dti VALUES (1, 'January 8, 1999', 'Jan-08-1999', '1999-01-08 04:05 PM',"
    " '1999-01-08 04:05:06 -8:00'), (2, '1/8/1999', '19990108', 'January 8 04:05:06 1999 PST',"
    " 'Jul 4 2020 12:00 EDT'), (3, '1999.008', 'J2451187', '1999-01-08T04:05:06',"
    " '2003-04-12 04:05:06 America/New_York')"
)
AD_HOC = [
    "SELECT 'January 8, 1999'::date, 'Jan-08-1999'::date, '08-Jan-1999'::date,"
    " '1999-Jan-08'::date, 'jan 8 1999'::date, 'Fri Jan 8 1999'::date",
    "SELECT '1/8/1999'::date, '01/02/03'::date, '1999.008'::date, '19990108'::date,"
    " '990108'::date, 'J2451187'::date, '08-Jan-99'::date, 'Jan-08-99'::date",
    "SELECT '1999-01-08 04:05:06'::date, 'January 8, 99'::date, DATE 'February 29, 2000'",
    "SELECT '1999-01-08 04:05 PM'::timestamp, '1999-01-08 04:05:06.789'::timestamp,"
    " 'January 8 04:05:06 1999 PST'::timestamp, '1999-01-08 04:05:06 -8:00'::timestamp,"
    " '1999-01-08 24:00'::timestamp, '2020-07-04 12:00:00.1234565'::timestamp",
    "SELECT '1999-01-08 04:05:06 -8:00'::timestamptz, 'January 8 04:05:06 1999 PST'::timestamptz,"
    " '2003-04-12 04:05:06 America/New_York'::timestamptz, '1999-01-08 04:05:06+0530'::timestamptz,"
    " '1999-01-08 04:05:06 Z'::timestamptz, '1999-01-08 04:05:06.789-8'::timestamptz",
    "SELECT id, d, t, z, s::date FROM dti ORDER BY id",
]
ERRORS = [
    "SELECT '99-Jan-08'::date",
    "SELECT '13/13/1999'::date",
    "SELECT '1999-02-30'::date",
    "SELECT 'xyz'::date",
    "SELECT '1999-01-08 Foo'::date",
    "SELECT '1999-01-08 13:00 PM'::timestamp",
    "SELECT '1999-01-08 25:00'::timestamp",
    "SELECT '1999-01-08 04:05:06 Mars/Base'::timestamptz",
    "INSERT INTO dti (id, d) VALUES (9, 'January 32, 1999')",
]
QUERIES = ["SELECT id, s::date AS sd, d + 1 AS next, z FROM dti"]
CHANGES = [
    "INSERT INTO dti VALUES (4, 'Dec 31, 1999', 'December 31, 1999', NULL, '2000-01-01 EST')",
    "UPDATE dti SET s = '2/29/2000' WHERE id = 1",
    "DELETE FROM dti WHERE id = 2",
]


def test_datetime_input_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "dti", CREATE) as (ours, pg):
        pg.execute("SET TimeZone = 'UTC'")
        for conn in (ours, pg):
            conn.execute(INSERT)
        same_outcomes(ours, pg, AD_HOC)
        same_errors(ours, pg, ERRORS)
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
