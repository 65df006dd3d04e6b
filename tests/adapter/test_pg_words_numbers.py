"""quote_ident of keywords, to_number, div and the places of extract compared with PostgreSQL
15: the same statements on the same data, ad hoc and installed as materialized views kept
through inserts, updates and deletes (and read again after a restart), and PostgreSQL's
errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import changeflow
from changeflow.compute.functions.keywords import COLUMN_NAME, RESERVED, TYPE_FUNC_NAME

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import (  # noqa: E402
    beside_postgres,
    maintained_as_postgres,
    outcome,
    same_errors,
)

pytestmark = pytest.mark.postgres


def test_keywords_are_postgres_own(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url) as pg:
        rows = pg.execute("SELECT word, catcode FROM pg_get_keywords()").fetchall()
    theirs = {code: {w for w, c in rows if c == code} for code in "CTR"}
    assert theirs == {"C": COLUMN_NAME, "T": TYPE_FUNC_NAME, "R": RESERVED}


def test_quote_ident_of_every_keyword_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url) as pg:
        words = [w for (w,) in pg.execute("SELECT word FROM pg_get_keywords() ORDER BY 1")]
    words += ["plain_1", "Upper", "sp ace", "", 'q"t', "_x", "1a", "é"]
    create = "CREATE TABLE kw (id int NOT NULL, w text)"
    values = ", ".join(f"({i}, '{w}')" for i, w in enumerate(words))
    with beside_postgres(
        tmp_path / "home", postgres_url, "kw", create, f"INSERT INTO kw VALUES {values}"
    ) as (ours, pg):
        queries = ["SELECT id, quote_ident(w), format('%I', w) FROM kw"]
        changes = ["UPDATE kw SET w = upper(w) WHERE id % 3 = 0", "DELETE FROM kw WHERE id < 40"]
        maintained_as_postgres(ours, pg, queries, changes)
        sql = "SELECT quote_ident('select'), quote_ident('abort'), quote_ident('left')"
        assert outcome(ours, sql) == outcome(pg, sql)


def as_text(conn: Any, sql: str) -> tuple:
    """``sql``'s columns and rows as text, sorted (a numeric's places are compared too)."""
    return outcome(conn, sql, sort=True)


def maintained_and_restarted(
    home: Path, postgres_url: str, setup: list[str], queries: list[str], changes: list[str]
) -> None:
    """Each query, ad hoc and as a materialized view, gives PostgreSQL's text through
    ``changes``, and its view gives it again after a restart."""
    table = setup[0].split()[2]
    with beside_postgres(home, postgres_url, table, *setup) as (ours, pg):
        maintained_as_postgres(ours, pg, queries, changes, rows=as_text)
        expected = [as_text(pg, sql)[2] for sql in queries]
        ours.close()
        again = changeflow.connect(home, host_seconds=0)
        try:
            for i, rows in enumerate(expected):
                assert as_text(again, f"SELECT * FROM v{i}")[2] == rows, queries[i]
        finally:
            again.close()


STAMPS = [
    "CREATE TABLE st (id int NOT NULL, ts timestamp, tz timestamptz, d date, i interval)",
    "INSERT INTO st VALUES (1, '2024-03-05 10:11:12.5', '2024-03-05 10:11:12.5+00', '2024-03-05',"
    " '1 day 2.5 seconds'), (2, '1999-12-31 23:59:59.999999', '2000-01-01 00:00:00+00',"
    " '2000-01-01', '-3 mons 1 hour'), (3, NULL, NULL, NULL, NULL),"
    " (4, '2024-01-01 00:00:00', '1970-01-01 00:00:00.000001+00', '1970-01-01', '0 seconds')",
]
STAMP_CHANGES = [
    "INSERT INTO st VALUES (5, '2021-01-03 07:08:09.010203', '2021-01-03 07:08:09+00',"
    " '2021-01-03', '1 year 2 mons 3 days 04:05:06.789')",
    "UPDATE st SET ts = ts + interval '1.25 seconds', d = d + 1 WHERE id = 1",
    "DELETE FROM st WHERE id = 2",
]
FIELDS = [
    "epoch",
    "second",
    "milliseconds",
    "microseconds",
    "minute",
    "hour",
    "day",
    "month",
    "year",
    "quarter",
    "week",
]
FIELDS += ["dow", "doy", "isodow", "isoyear", "decade", "century", "millennium"]
STAMP_QUERIES = [
    f"SELECT id, {', '.join(f'extract({f} FROM {c})' for f in FIELDS)} FROM st"
    for c in ("ts", "tz")
] + [
    "SELECT id, "
    + ", ".join(
        f"extract({f} FROM d)"
        for f in FIELDS
        if f not in ("second", "milliseconds", "microseconds", "minute", "hour")
    )
    + ", extract(julian FROM d) FROM st",
    "SELECT id, "
    + ", ".join(f"date_part('{f}', {c})" for f in FIELDS for c in ("ts", "d"))
    + ", date_part('julian', ts) FROM st",
    "SELECT id, extract(epoch FROM i), extract(second FROM i), extract(milliseconds FROM i),"
    " extract(minute FROM i), extract(timezone FROM tz), extract(secs FROM ts),"
    " extract(usec FROM ts), extract(c FROM d) FROM st",
    "SELECT id, extract(epoch FROM ts) - extract(epoch FROM d), extract(second FROM ts) * 2"
    " FROM st WHERE extract(epoch FROM tz) > 0",
]


def test_extract_places_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    maintained_and_restarted(tmp_path / "home", postgres_url, STAMPS, STAMP_QUERIES, STAMP_CHANGES)
    with beside_postgres(tmp_path / "h2", postgres_url, "st", *STAMPS) as (ours, pg):
        sql = "SELECT extract(julian FROM ts), extract(julian FROM timestamp '2024-03-05') FROM st"
        assert as_text(ours, sql) == as_text(pg, sql)  # (a quotient: a view keeps 10 places)
        same_errors(
            ours,
            pg,
            [
                "SELECT extract(hour FROM d) FROM st",
                "SELECT extract(timezone FROM ts) FROM st",
                "SELECT extract(fortnight FROM ts) FROM st",
                "SELECT date_part('fortnight', d) FROM st",
                "SELECT extract(isodow FROM i) FROM st",
            ],
        )


@pytest.mark.spark
def test_on_the_cluster_tier(tmp_path: Path, spark) -> None:
    """The Spark forms give what the rows give: extract's fields at their places, date_part's
    doubles, div, quote_ident of keywords (format() and to_number run in the process)."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    try:
        for sql in [*STAMPS, *STAMP_CHANGES]:
            conn.execute(sql)
        conn.execute("CREATE TABLE kw (id int NOT NULL, w text)")
        conn.execute("INSERT INTO kw VALUES (1, 'select'), (2, 'abort'), (3, 'left'), (4, 'A')")
        queries = [q for q in STAMP_QUERIES if "FROM i" not in q]
        for sql in [*NUMBERS, *NUMBER_CHANGES]:
            conn.execute(sql)
        queries += [NUMBER_QUERIES[1], "SELECT id, quote_ident(w) FROM kw"]
        for i, sql in enumerate(queries):
            expected = as_text(conn, sql)
            names = expected[1]  # a view names each column once
            listed = ", ".join(f"c{k}" for k in range(len(names)))
            listed = f" ({listed})" if len(set(names)) < len(names) else ""
            conn.execute(f"CREATE MATERIALIZED VIEW c{i}{listed} WITH (CLUSTER = true) AS {sql}")
            assert as_text(conn, f"SELECT * FROM c{i}")[2] == expected[2], sql
        quoted = [("1", '"select"'), ("2", "abort"), ("3", '"left"'), ("4", '"A"')]
        assert as_text(conn, f"SELECT * FROM c{len(queries) - 1}")[2] == quoted
    finally:
        conn.close()


NUMBERS = [
    "CREATE TABLE nu (id int NOT NULL, s text, f text, a numeric(12,3), b int)",
    "INSERT INTO nu VALUES (1, '12,454.8-', '99G999D9S', 7.5, 2), (2, '$1,234.50', 'L9,999.99',"
    " -7.5, 2), (3, '<123>', '9999PR', 7, -3), (4, '  -  3', '9999', 0.001, 7), (5, '1234.5',"
    " '9999999', -100.25, -1), (6, NULL, NULL, NULL, NULL), (7, '123-', '9999MI', 5, 5),"
    " (8, '0.50', '9.99', 123456789.123, 10)",
]
NUMBER_CHANGES = [
    "INSERT INTO nu VALUES (9, '+42', 'S99', 1, 3), (10, '12 34', 'FM9,999', -1, 3)",
    "UPDATE nu SET s = '9,876.54', f = '9G999D99', a = a * 3 WHERE id = 1",
    "DELETE FROM nu WHERE id = 3",
]
NUMBER_QUERIES = [
    "SELECT id, to_number(s, f), to_number(s, '99999D99'), to_number(s, 'S9999') FROM nu",
    "SELECT id, div(a, b), div(b, 2), div(a, 0.3), div(-a, b) FROM nu WHERE b <> 0",
    "SELECT id FROM nu WHERE div(a, 2) > 1 AND to_number(s, f) < 10000",
]


def test_to_number_and_div_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "nu", *NUMBERS) as (ours, pg):
        for sql in NUMBER_QUERIES:  # the places each value shows
            assert as_text(ours, sql) == as_text(pg, sql), sql
        maintained_as_postgres(ours, pg, NUMBER_QUERIES, NUMBER_CHANGES)
        constants = (
            "SELECT to_number('12.50', '99.99'), to_number('-0', '9'), to_number('1,2,3', '9,999'),"
            " to_number('12th', '99th'), to_number('12', ''), div(7, 2), div(-7.9, 2),"
            " div(123456789012345678901234567890, 7), div('NaN', 2)"
        )
        assert as_text(ours, constants) == as_text(pg, constants)
        same_errors(
            ours,
            pg,
            [
                "SELECT to_number('abc', '999')",
                "SELECT to_number('1234.5', '99.9')",
                "SELECT to_number('12', '99S9S')",
                "SELECT to_number('12', 'S99MI')",
                "SELECT to_number('12', '9.9.9')",
                "SELECT to_number('-12', 'PR99')",
                "SELECT to_number('12', '9EEEE')",
                "SELECT div(a, 0) FROM nu",
                "SELECT div(1.5::float8, 1)",
                "SELECT div(b) FROM nu",
            ],
        )
    # a property checked against PostgreSQL on many texts and templates
    import random

    import psycopg

    from changeflow.compute.functions.to_number import to_number
    from changeflow.errors import EvalError

    rnd = random.Random(7)
    words = ["9", "9", "0", ".", "D", ",", "G", "S", "MI", "PL", "SG", "PR", "L", "FM", "x", " "]
    words += ["TH", "fm", "s"]
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        for _ in range(1500):
            template = "".join(rnd.choice(words) for _ in range(rnd.randint(1, 7)))
            text = "".join(rnd.choice("0123456789012.,-+<> $a") for _ in range(rnd.randint(0, 8)))
            try:
                theirs = pg.execute("SELECT to_number(%s, %s)::text", (text, template)).fetchone()
                expected = str(theirs[0]) if theirs[0] is not None else None
            except psycopg.Error as e:
                expected = e.sqlstate
            try:
                got = to_number(text, template)
                mine = None if got is None else str(got)
            except EvalError as e:
                mine = e.sqlstate
            assert mine == expected, (text, template)
