"""Date and timestamp text in PostgreSQL 15's input forms, compared with PostgreSQL itself:
casts, typed literals, INSERT into date/time columns and comparisons with a column, a
materialized view reading text as dates kept through changes, and the errors (22007, 22008,
22009, 22023) for text it refuses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

DATES = [
    "January 8, 1999", "Jan-08-1999", "08-Jan-1999", "1999-Jan-08", "jan 8 1999",
    "Fri Jan 8 1999", "1/8/1999", "01/02/03", "1999.008", "19990108", "990108",
    "J2451187", "1999-01-08 04:05:06 PST", "12/31/69", "01/01/70",
]  # fmt: skip
STAMPS = [
    "1999-01-08 04:05 PM", "1999-01-08T04:05:06.789", "19990108T040506", "1999-01-08 24:00",
    "1999-01-08 12:05 AM", "1999-01-08 allballs", "1999-01-08 04:05:06 PST",
]  # fmt: skip
ZONED = [
    "1999-01-08 04:05:06+02", "1999-01-08 04:05:06-08:00", "1999-01-08 04:05:06 +0530",
    "1999-01-08 04:05:06Z", "1999-01-08 04:05:06 UTC", "1999-01-08 04:05:06 PST",
    "1999-07-08 04:05:06 America/New_York", "January 8, 1999 04:05 pm EST",
]  # fmt: skip
REFUSED = [
    "SELECT 'foo'::date", "SELECT '1999-W01-1'::date", "SELECT '1999-02-30'::date",
    "SELECT '13/13/1999'::date", "SELECT '1999-01-08 25:00'::timestamp",
    "SELECT '1999-01-08 04:05:06 XYZ'::timestamptz",
    "SELECT '1999-01-08 04:05:06+16'::timestamptz",
    "SELECT '1999-01-08 04:05:06 Mars/Base'::timestamptz", "SELECT '99-Jan-08'::date",
    "SELECT '1999-01-08 13:00 PM'::timestamp",
    "INSERT INTO dates VALUES (9, '1999-13-01', NULL, NULL)",
]  # fmt: skip


def test_date_input_forms_as_postgres(tmp_path, postgres_url: str) -> None:
    setup = ("CREATE TABLE dates (id int, d date, ts timestamp, tz timestamptz)",)
    statements = ["SET TimeZone = 'UTC'"]
    statements += [f"SELECT '{t}'::date, date '{t}'" for t in DATES]
    statements += [f"SELECT '{t}'::timestamp, timestamp '{t}'" for t in STAMPS]
    statements += [f"SELECT '{t}'::timestamptz::text, '{t}'::timestamp" for t in ZONED]
    statements += [
        "INSERT INTO dates VALUES (1, 'Jan 8 1999', '1/8/1999 4:05 pm', "
        "'1999-01-08 04:05 America/New_York')",
        "INSERT INTO dates VALUES (2, '08-Jan-99', '19990108T040506', 'Jan 8 1999 EST')",
        "SELECT id, d, ts, tz::text FROM dates ORDER BY id",
        "SELECT id FROM dates WHERE d = 'January 8, 1999' ORDER BY id",
        "SELECT id FROM dates WHERE ts > '1/8/1999 04:05' ORDER BY id",
        "SELECT '1999-01-08 04:05:06.5'::timestamp::text, "
        "'Jan 8 1999 4:05:06.25 pm'::timestamp::text",
        "SELECT 'January 8 1999 4:05:06.5 AM PST'::timestamptz::text",
        "SELECT '2024-11-03 01:30:00 America/New_York'::timestamptz::text",
        "SELECT t::date FROM (VALUES ('Jan 8 1999'), ('1999.008'), ('1/8/99')) v(t)",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "dates", *setup) as (ours, pg):
        same_outcomes(ours, pg, statements)
        same_errors(ours, pg, REFUSED)


def test_text_read_as_dates_in_a_view_as_postgres(tmp_path, postgres_url: str) -> None:
    setup = (
        "CREATE TABLE dtv (id int NOT NULL, s text, d date, z timestamptz)",
        "INSERT INTO dtv VALUES (1, 'January 8, 1999', 'Jan-08-1999', '1999-01-08 04:05 -8:00'),"
        " (2, '1/8/1999', '19990108', 'Jul 4 2020 12:00 EDT'), (3, '1999.008', 'J2451187', NULL)",
    )
    changes = [
        "INSERT INTO dtv VALUES (4, 'Dec 31, 1999', 'December 31, 1999', '2000-01-01 EST')",
        "UPDATE dtv SET s = '2/29/2000' WHERE id = 1",
        "DELETE FROM dtv WHERE id = 2",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "dtv", *setup) as (ours, pg):
        pg.execute("SET TimeZone = 'UTC'")
        query = "SELECT id, s::date AS sd, d + 1 AS next, z FROM dtv"
        maintained_as_postgres(ours, pg, [query], changes)
