"""PostgreSQL 15's date/time input forms (datestyle ``ISO, MDY``, TimeZone UTC): each value
and error below is what PostgreSQL 15 gives for the same text."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changeflow.compute.datetime_input import HINT, parse_datetime_input, plain_iso
from changeflow.compute.scalars import from_text, to_text
from changeflow.compute.types import DATE, TIME, TIMESTAMP, TIMESTAMPTZ
from changeflow.errors import EvalError

JAN8 = date(1999, 1, 8)
DATES = {
    "January 8, 1999": JAN8,
    "Jan-08-1999": JAN8,
    "08-Jan-1999": JAN8,
    "1999-Jan-08": JAN8,
    "jan 8 1999": JAN8,
    "Fri Jan 8 1999": JAN8,
    "Friday, January 8, 1999": JAN8,
    "08 January 1999 Fri": JAN8,
    "8 jan 1999": JAN8,
    "1999 jan 8": JAN8,
    "08-Jan-99": JAN8,
    "Jan 8 99": JAN8,
    "1/8/1999": JAN8,
    "1/8/99": JAN8,
    "01/02/03": date(2003, 1, 2),
    "1/13/1999": date(1999, 1, 13),
    "1999.008": JAN8,
    "1999.366": date(2000, 1, 1),
    "1999-008": JAN8,
    "19990108": JAN8,
    "990108": JAN8,
    "1999/01/08": JAN8,
    "1999.01.08": JAN8,
    "01.08.1999": JAN8,
    "1999-1-8": JAN8,
    "J2451187": JAN8,
    "1999-01-08 AD": JAN8,
    "1999-01-08 EST": JAN8,
    "1999-01-08 04:05:06 PST": JAN8,
}
STAMPS = {
    "1999-01-08T04:05:06.789": datetime(1999, 1, 8, 4, 5, 6, 789000),
    "1999-01-08 04:05 PM": datetime(1999, 1, 8, 16, 5),
    "1999-01-08 12:05 AM": datetime(1999, 1, 8, 0, 5),
    "2023-01-08 04:05 am": datetime(2023, 1, 8, 4, 5),
    "19990108T040506": datetime(1999, 1, 8, 4, 5, 6),
    "990108 040506": datetime(1999, 1, 8, 4, 5, 6),
    "1999-01-08 4:5": datetime(1999, 1, 8, 4, 5),
    "1999-01-08 24:00": datetime(1999, 1, 9),
    "1999-01-08 allballs": datetime(1999, 1, 8),
    "1999-01-08 04:05:06 PST": datetime(1999, 1, 8, 4, 5, 6),  # a zone is ignored
    "1999-01-08 04:05:06.1234565": datetime(1999, 1, 8, 4, 5, 6, 123456),
    "1999-01-08 04:05:06.1234575": datetime(1999, 1, 8, 4, 5, 6, 123458),
    "1999-01-08 04:05:60.5": datetime(1999, 1, 8, 4, 6, 0, 500000),
    "1999-01-08 23:59:59.9999999": datetime(1999, 1, 9),
}
ZONED = {
    "1999-01-08 04:05:06+02": datetime(1999, 1, 8, 2, 5, 6),
    "1999-01-08 04:05:06-08:00": datetime(1999, 1, 8, 12, 5, 6),
    "1999-01-08 04:05:06 +0530": datetime(1999, 1, 7, 22, 35, 6),
    "1999-01-08 04:05:06 -3:30": datetime(1999, 1, 8, 7, 35, 6),
    "1999-01-08 04:05:06.5 +5": datetime(1999, 1, 7, 23, 5, 6, 500000),
    "1999-01-08 04:05:06Z": datetime(1999, 1, 8, 4, 5, 6),
    "1999-01-08 04:05:06 UTC": datetime(1999, 1, 8, 4, 5, 6),
    "1999-01-08 04:05:06 PST": datetime(1999, 1, 8, 12, 5, 6),
    "19990108 04:05:06 EST": datetime(1999, 1, 8, 9, 5, 6),
    "1999-07-08 04:05:06 America/New_York": datetime(1999, 7, 8, 8, 5, 6),
    "1999-01-08 04:05:06 america/new_york": datetime(1999, 1, 8, 9, 5, 6),
    "January 8, 1999 04:05 pm EST": datetime(1999, 1, 8, 21, 5),
    "Mon Jan 08 04:05:06 1999 PST": datetime(1999, 1, 8, 12, 5, 6),
    "1999-01-08 04:05:06 Japan": datetime(1999, 1, 7, 19, 5, 6),
    "2024-11-03 01:30:00 America/New_York": datetime(2024, 11, 3, 6, 30),  # repeated
    "2024-03-10 02:30:00 America/New_York": datetime(2024, 3, 10, 7, 30),  # skipped
    "2024-10-27 02:30:00 Europe/Paris": datetime(2024, 10, 27, 1, 30),
    "2024-03-31 02:30:00 Europe/Paris": datetime(2024, 3, 31, 1, 30),
}
ERRORS = [  # text, type, sqlstate, with PostgreSQL's datestyle hint
    ("foo", DATE, "22007", False),
    ("1999-W01-1", DATE, "22007", False),
    ("2024-13", DATE, "22007", False),
    ("1999.367", DATE, "22007", False),
    ("1999-01-08T04", TIMESTAMP, "22007", False),
    ("1999-01-08 04:05:06 XYZ", TIMESTAMPTZ, "22007", False),
    ("04:05:06 1999-01-08", TIMESTAMP, "22007", False),
    ("1999-02-30", DATE, "22008", False),
    ("0000-01-01", DATE, "22008", False),
    ("1999-01-08 25:00", TIMESTAMP, "22008", False),
    ("1999-01-08 13:00 PM", TIMESTAMP, "22008", False),
    ("1999-01-08 24:00:01", TIMESTAMP, "22008", False),
    ("1999-01-08 04:05:61", TIMESTAMP, "22008", False),
    ("13/13/1999", DATE, "22008", True),
    ("13/1/1999", DATE, "22008", True),
    ("1999-13-01", DATE, "22008", True),
    ("99-01-08", DATE, "22008", True),
    ("1999-01-08 04:05:06+16", TIMESTAMPTZ, "22009", False),
]


@pytest.mark.parametrize(("text", "want"), DATES.items())
def test_dates_as_postgres_reads_them(text: str, want: date) -> None:
    assert from_text(text, DATE) == want


@pytest.mark.parametrize(("text", "want"), STAMPS.items())
def test_timestamps_as_postgres_reads_them(text: str, want: datetime) -> None:
    assert from_text(text, TIMESTAMP) == want


@pytest.mark.parametrize(("text", "want"), ZONED.items())
def test_zoned_timestamps_are_converted_to_utc(text: str, want: datetime) -> None:
    assert from_text(text, TIMESTAMPTZ) == want.replace(tzinfo=UTC)


@pytest.mark.parametrize(("text", "kind", "sqlstate", "hinted"), ERRORS)
def test_errors_as_postgres_words_them(text: str, kind, sqlstate: str, hinted: bool) -> None:
    with pytest.raises(EvalError) as caught:
        from_text(text, kind)
    assert caught.value.sqlstate == sqlstate
    assert getattr(caught.value, "hint", "") == (HINT if hinted else "")
    if sqlstate == "22007":
        assert caught.value.message == f'invalid input syntax for type {kind}: "{text}"'
    elif sqlstate == "22008":
        assert caught.value.message == f'date/time field value out of range: "{text}"'


@pytest.mark.parametrize("text", ["0099-01-08 BC", "10000-01-01", "Jan 8 10000", "J0"])
def test_years_postgres_holds_and_python_cannot_are_out_of_the_supported_range(text) -> None:
    """PostgreSQL holds 0099-01-08 BC and 10000-01-01; a Python date cannot: 22008 saying so,
    not a syntax error."""
    with pytest.raises(EvalError, match="out of the supported range") as caught:
        from_text(text, DATE)
    assert caught.value.sqlstate == "22008"


def test_today_tomorrow_and_yesterday_with_a_time() -> None:
    from changeflow.compute.scalars import STATEMENT_TIME

    token = STATEMENT_TIME.set(datetime(2024, 2, 28, 13, 0, tzinfo=UTC))
    try:
        assert from_text("tomorrow 04:05 pm", TIMESTAMP) == datetime(2024, 2, 29, 16, 5)
        assert from_text("yesterday EST", TIMESTAMPTZ) == datetime(2024, 2, 27, 5, tzinfo=UTC)
    finally:
        STATEMENT_TIME.reset(token)


def test_timestamp_text_trims_its_fraction_as_postgres() -> None:
    stamp = from_text("January 8 1999 4:05:06.5 AM PST", TIMESTAMPTZ)
    assert to_text(stamp, TIMESTAMPTZ) == "1999-01-08 12:05:06.5+00"
    assert to_text(datetime(1999, 1, 8, 4, 5), TIMESTAMP) == "1999-01-08 04:05:00"


def test_allballs_is_midnight() -> None:
    assert from_text("allballs", TIME) == time(0)


def test_the_iso_fast_path_and_the_parser_agree() -> None:
    for text, kind in [
        ("1999-01-08", DATE),
        ("1999-01-08 04:05:06", TIMESTAMP),
        ("1999-01-08T04:05:06.123456-08:00", TIMESTAMPTZ),
        ("2000-02-29 23:59:59.999999Z", TIMESTAMPTZ),
    ]:
        assert plain_iso(text)
        assert parse_datetime_input(text, str(kind)) == from_text(text, kind)
    assert not plain_iso("1999-W01-1") and not plain_iso("1999-01-08 04:05:06+16")


MONTHS = "January February March April May June July August September October November December"
FORMS = [
    lambda d: f"{MONTHS.split()[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{MONTHS.split()[d.month - 1][:3].upper()}-{d.day:02}-{d.year}",
    lambda d: f"{d.day:02}-{MONTHS.split()[d.month - 1][:3].lower()}-{d.year}",
    lambda d: f"{d.year}-{MONTHS.split()[d.month - 1][:3]}-{d.day:02}",
    lambda d: f"{d:%a} {MONTHS.split()[d.month - 1][:3]} {d.day} {d.year}",
    lambda d: f"{d.month}/{d.day}/{d.year}",
    lambda d: f"{d.month:02}/{d.day:02}/{d.year % 100:02}",
    lambda d: f"{d.year}.{d.timetuple().tm_yday:03}",
    lambda d: f"{d.year}{d.month:02}{d.day:02}",
    lambda d: f"{d.year % 100:02}{d.month:02}{d.day:02}",
    lambda d: f"J{d.toordinal() + 1721425}",
]


@given(st.dates(date(1970, 1, 1), date(2069, 12, 31)), st.sampled_from(range(len(FORMS))))
def test_any_date_in_any_form_reads_back(day: date, form: int) -> None:
    text = FORMS[form](day)
    assert from_text(text, DATE) == day, text
    assert from_text(text + " 04:05:06 pm", TIMESTAMP) == datetime(
        day.year, day.month, day.day, 16, 5, 6
    ), text
