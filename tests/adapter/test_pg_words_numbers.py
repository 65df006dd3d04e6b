"""quote_ident of keywords and the places of extract compared with PostgreSQL
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
    doubles, quote_ident of keywords (format() runs in the process)."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    try:
        for sql in [*STAMPS, *STAMP_CHANGES]:
            conn.execute(sql)
        conn.execute("CREATE TABLE kw (id int NOT NULL, w text)")
        conn.execute("INSERT INTO kw VALUES (1, 'select'), (2, 'abort'), (3, 'left'), (4, 'A')")
        queries = [q for q in STAMP_QUERIES if "FROM i" not in q]
        queries += ["SELECT id, quote_ident(w) FROM kw"]
        for i, sql in enumerate(queries):
            expected = as_text(conn, sql)
            conn.execute(f"CREATE MATERIALIZED VIEW c{i} WITH (CLUSTER = true) AS {sql}")
            assert as_text(conn, f"SELECT * FROM c{i}")[2] == expected[2], sql
        quoted = [("1", '"select"'), ("2", "abort"), ("3", '"left"'), ("4", '"A"')]
        assert as_text(conn, f"SELECT * FROM c{len(queries) - 1}")[2] == quoted
    finally:
        conn.close()
