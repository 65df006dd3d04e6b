"""Dates and timestamps read from PostgreSQL's text forms (compute/datetime_input.py), each
value as PostgreSQL 15 reads it (DateStyle ISO, MDY; TimeZone UTC), and every date written
in several of those forms read back as itself."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changeflow.compute.datetime_input import read_datetime
from changeflow.errors import EvalError

JAN_8 = date(1999, 1, 8)
DATES = [
    "January 8, 1999",
    "Jan-08-1999",
    "08-Jan-1999",
    "1999-Jan-08",
    "jan 8 1999",
    "Fri Jan 8 1999",
    "1/8/1999",
    "1999.008",
    "19990108",
    "990108",
    "J2451187",
    "08-Jan-99",
    "Jan-08-99",
    "January 8, 99",
    "1999-01-08 04:05:06",
]
STAMPS = {
    "1999-01-08 04:05 PM": datetime(1999, 1, 8, 16, 5),
    "1999-01-08 12:00 AM": datetime(1999, 1, 8),
    "January 8 04:05:06 1999 PST": datetime(1999, 1, 8, 4, 5, 6),  # (a zone is ignored)
    "19990108 040506": datetime(1999, 1, 8, 4, 5, 6),
    "1999-01-08 24:00": datetime(1999, 1, 9),
    "2020-07-04 12:00:00.1234565": datetime(2020, 7, 4, 12, 0, 0, 123456),  # half to even
}
ZONED = {
    "1999-01-08 04:05:06 -8:00": datetime(1999, 1, 8, 12, 5, 6, tzinfo=UTC),
    "January 8 04:05:06 1999 PST": datetime(1999, 1, 8, 12, 5, 6, tzinfo=UTC),
    "2003-04-12 04:05:06 America/New_York": datetime(2003, 4, 12, 8, 5, 6, tzinfo=UTC),
    "1999-01-08 04:05:06+0530": datetime(1999, 1, 7, 22, 35, 6, tzinfo=UTC),
    "1999-01-08 04:05:06.789-8": datetime(1999, 1, 8, 12, 5, 6, 789000, tzinfo=UTC),
    "Jul 4 2020 12:00 EDT": datetime(2020, 7, 4, 16, 0, tzinfo=UTC),
    "1999-01-08 04:05:06 pst8pdt": datetime(1999, 1, 8, 12, 5, 6, tzinfo=UTC),
}
ERRORS = {
    "99-Jan-08": "22008",
    "13/13/1999": "22008",
    "1999-02-30": "22008",
    "xyz": "22007",
    "1999-01-08 Foo": "22007",
    "0099-01-08 BC": "22008",
    "1999-01-08 13:00 PM": "22008",
    "1999-01-08 25:00": "22008",
}


@pytest.mark.parametrize("text", DATES)
def test_date_forms(text: str) -> None:
    assert read_datetime(text, "date") == JAN_8


@pytest.mark.parametrize(("text", "value"), STAMPS.items())
def test_timestamp_forms(text: str, value: datetime) -> None:
    assert read_datetime(text, "timestamp") == value


@pytest.mark.parametrize(("text", "value"), ZONED.items())
def test_zoned_timestamp_forms(text: str, value: datetime) -> None:
    assert read_datetime(text, "timestamp with time zone") == value


@pytest.mark.parametrize(("text", "code"), ERRORS.items())
def test_errors(text: str, code: str) -> None:
    with pytest.raises(EvalError) as caught:
        read_datetime(text, "date" if ":" not in text else "timestamp")
    assert caught.value.sqlstate == code
    assert f'"{text}"' in caught.value.message


def test_a_month_out_of_range_hints_at_datestyle() -> None:
    with pytest.raises(EvalError) as caught:
        read_datetime("13/1/1999", "date")
    assert caught.value.fields["hint"] == 'Perhaps you need a different "datestyle" setting.'


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August"]
_MONTHS += ["September", "October", "November", "December"]


@given(st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)))
def test_every_date_reads_back_from_each_form(day: date) -> None:
    name = _MONTHS[day.month - 1]
    forms = [
        f"{name} {day.day}, {day.year:04d}",
        f"{day.day:02d}-{name[:3]}-{day.year:04d}",
        f"{day.year:04d}-{name[:3]}-{day.day:02d}",
        f"{day.month}/{day.day}/{day.year:04d}",
        f"{day.year:04d}.{day.timetuple().tm_yday:03d}",
        f"J{day.toordinal() + 1721425}",
    ]
    if day.year >= 1000:
        forms.append(f"{day.year:04d}{day.month:02d}{day.day:02d}")
    for form in forms:
        assert read_datetime(form, "date") == day, form
