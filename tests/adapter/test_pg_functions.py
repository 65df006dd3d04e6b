"""to_char, the regular-expression operators and functions, the character functions and the
session's functions compared with PostgreSQL 15: the same statements on the same data, ad hoc
and installed as materialized views kept through inserts, updates and deletes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, unordered  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE tf (id int NOT NULL, name text, x numeric(12,2), f float8, ts timestamptz)"
INSERT = (
    "INSERT INTO tf VALUES (1, 'abcb', -3.25, 2.5, '2024-03-05 13:04:05.123456+00'),"
    " (2, 'Ba 1', 1234.567, 0.5, '2023-12-31 00:59:59+00'), (3, NULL, 0, -12.75, NULL),"
    " (4, 'x,y,,z', 99999, 1e6, '2000-02-29 12:00:00+00')"
)
CHANGES = [
    "INSERT INTO tf VALUES (5, 'bbb', 0.5, 0, '1999-07-04 23:30:00+00')",
    "UPDATE tf SET name = 'B', x = -0.04 WHERE id = 1",
    "DELETE FROM tf WHERE id = 4",
]
TEMPLATE = (
    "'YYYY-MM-DD HH24:MI:SS.MS US HH12 AM pm Mon MON Month| Day| Dy D DDD Q FMMonth| FMDD "
    'FMHH12 "at" YY\''
)
QUERIES = [
    f"SELECT id, to_char(ts, {TEMPLATE}), to_char(ts, 'YYYY-MM-DD') FROM tf",
    "SELECT id, to_char(x, '9,999.99'), to_char(x, 'FM990.0'), to_char(x, '000') FROM tf",
    "SELECT id, to_char(f, '999.9'), to_char(f, 'FM9999999.99'), to_char(id, '9') FROM tf",
    "SELECT id, name ~ 'b', name ~* 'B', name !~ '^B', name !~* 'a' FROM tf",
    "SELECT id FROM tf WHERE name ~ '[0-9]' OR name ~* '^b+$'",
    "SELECT id, regexp_match(name, '(b)(c)?'), regexp_match(name, 'b+') FROM tf",
    "SELECT id, regexp_split_to_array(name, ','), regexp_like(name, 'A', 'i') FROM tf",
    "SELECT id, ascii(name), octet_length(name), translate(name, 'ab,', 'B'), to_hex(id - 3),"
    " to_hex((id - 3)::bigint), pi() FROM tf",
    "SELECT id, string_to_array(name, ','), string_to_array(name, NULL), string_to_array(name, '',"
    " 'x'), string_to_array(name, 'b', ''), array_to_string(ARRAY[id, NULL, 7], '+'),"
    " array_to_string(string_to_array(name, ','), '|', '?') FROM tf",
    "SELECT id, concat_ws(', ', name, id, NULL, x, ts), concat_ws(NULL, name),"
    " concat_ws(name, id, id) FROM tf",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "tf", CREATE, INSERT) as pair:
        yield pair


def test_functions_ad_hoc_and_maintained_as_postgres(both) -> None:
    maintained_as_postgres(*both, QUERIES, CHANGES)


def test_constants_as_postgres(both) -> None:
    ours, pg = both
    sql = (
        "SELECT to_char(5, '999'), to_char(-5, '999'), to_char(0.5, '9.99'),"
        " to_char(0.5, '0.99'), to_char(12345, '999'), to_char(-0.5, 'FM9.99'),"
        " to_char(3, 'FM000'), to_char(1.5, 'FM999.00'), to_char(2.5::float8, '999'),"
        " to_char(12, 'FM99.9'), to_char(0, '999'), to_char(date '2024-01-07', 'Dy DD/MM'),"
        " regexp_split_to_array('a1b22c', '[0-9]+'), regexp_match('abc', 'x')"
    )
    assert unordered(ours, sql) == unordered(pg, sql)
    same_errors(
        ours,
        pg,
        [
            "SELECT 'a' ~ '('",
            "SELECT regexp_like('a', 'a', 'z')",
            "SELECT to_char(name) FROM tf",
            "SELECT name ~ 1 FROM tf",
            "SELECT concat_ws(',')",
        ],
    )


def test_session_functions(both) -> None:
    ours, _ = both
    row = ours.execute(
        "SELECT current_database(), current_user, session_user, user, current_schema(),"
        " current_schema, version(), pg_backend_pid() > 0"
    ).fetchone()
    assert row[4:] == ("public", "public", "PostgreSQL 15.0 on changeflow", True)
    assert row[0] and row[1] == row[2] == row[3]


SPANS = "'YYYY YYY YY MM DD DDD HH24 HH12 HH MI SS MS US AM p.m. Q FMHH24:FMMI:FMSS FMDDD \"h\"'"


def test_to_char_of_intervals_and_times_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """to_char of an interval field by field, each with its own sign, and of a time (as its
    interval), ad hoc and maintained; the words of a date's calendar are 22007 for them."""
    create = "CREATE TABLE tci (id int NOT NULL, t time, i interval)"
    insert = (
        "INSERT INTO tci VALUES (1, '13:04:05.5', '1 year 14 months 40 days 30:04:05.123456'),"
        " (2, '00:00', '-1 year -2 months -3 days -04:05:06.7'), (3, NULL, NULL),"
        " (4, '23:59:59.999999', '8 months -12 hours'), (5, '11:00', '-13 hours -30 minutes')"
    )
    changes = [
        "INSERT INTO tci VALUES (6, '12:00', '-1234 years -27 months')",
        "UPDATE tci SET i = '0' WHERE id = 1",
        "DELETE FROM tci WHERE id = 2",
    ]
    queries = [
        f"SELECT id, to_char(i, {SPANS}), to_char(t, {SPANS}) FROM tci",
        "SELECT id, to_char(t, 'HH24:MI:SS.US FMHH12 am') FROM tci WHERE to_char(i, 'MM') < '03'",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "tci", create, insert) as (ours, pg):
        maintained_as_postgres(ours, pg, queries, changes)
        sql = f"SELECT to_char(time '24:00', {SPANS}), to_char(interval '-30 minutes', 'HH24:MI')"
        assert unordered(ours, sql) == unordered(pg, sql)
        same_errors(
            ours,
            pg,
            [
                "SELECT to_char(i, 'Mon') FROM tci",
                "SELECT to_char(t, 'Day') FROM tci",
                "SELECT to_char(interval '3 days', 'D')",
                "SELECT to_char(i) FROM tci",
            ],
        )
