"""Everyday forms here and on PostgreSQL 15: ``make_time``, ``make_interval`` (named fields
too), ``make_timestamptz``, OVERLAPS, ``U&''`` strings, the special date and timestamp inputs,
``pg_typeof('a')``, a SELECT of no columns, ``(a, b) [NOT] IN (SELECT …)`` and ``FETCH FIRST n
ROWS WITH TIES``: the same outcomes ad hoc, and the same rows in views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE fm (id int PRIMARY KEY, g int, x int, y float8, s text, d date)",
    "INSERT INTO fm VALUES (1, 1, 3, 1.5, 'a,b', '2024-01-02'), (2, 1, 5, 2.5, 'c', '2024-02-03'),"
    " (3, 2, NULL, NULL, NULL, NULL), (4, 2, 6, 4.0, 'x y', '2023-12-31'),"
    " (5, 2, 6, 4.0, 'q', '2023-12-31')",
]
MAKERS = [
    "SELECT make_time(8, 15, 23.5), make_time(0, 0, 0), make_time(23, 59, 59.999999)",
    "SELECT make_time(1, 60, 0)",
    "SELECT make_interval(days => 3)::text, make_interval(hours => 2, mins => 30)::text,"
    " make_interval()::text, make_interval(secs => 1.25, weeks => 2, years => 1)::text",
    "SELECT make_interval(1, 2, 3, 4, 5, 6, 7.5)::text, make_interval(-1, 0, 0, -2)::text",
    "SELECT make_timestamptz(2024, 1, 2, 3, 4, 5.5), make_timestamptz(2024, 7, 2, 3, 4, 5,"
    " 'Europe/Paris'), make_timestamptz(2024, 1, 2, 3, 4, 5, 'America/New_York')",
    "SELECT make_timestamptz(2024, 2, 30, 0, 0, 0)",
    "SELECT make_timestamptz(2024, 1, 2, 3, 4, 5, 'Nowhere/Else')",
    "SELECT id, make_interval(days => x, secs => y)::text, make_time(x, g, y) FROM fm ORDER BY id",
]
OVERLAPS = [
    "SELECT (DATE '2001-02-16', DATE '2001-12-21') OVERLAPS (DATE '2001-10-30', DATE '2002-10-30')",
    "SELECT (TIMESTAMP '2001-02-16', INTERVAL '100 days') OVERLAPS (TIMESTAMP '2001-10-30',"
    " TIMESTAMP '2002-10-30')",
    "SELECT (DATE '2001-12-21', DATE '2001-02-16') OVERLAPS (DATE '2001-10-30', DATE"
    " '2002-10-30'), (DATE '2001-01-01', DATE '2001-01-02') OVERLAPS (DATE '2001-01-02', DATE"
    " '2001-01-03'), (DATE '2001-01-01', DATE '2001-01-01') OVERLAPS (DATE '2001-01-01', DATE"
    " '2001-01-01')",
    "SELECT (DATE '2001-01-01', NULL::date) OVERLAPS (DATE '2001-01-01', DATE '2001-02-01'),"
    " (DATE '2001-01-01', NULL::date) OVERLAPS (DATE '2000-01-01', DATE '2000-02-01')",
    "SELECT id, (d, d + 3) OVERLAPS (DATE '2024-01-01', DATE '2024-01-04') FROM fm ORDER BY id",
    "SELECT (NULL::date, DATE '2001-01-05') OVERLAPS (DATE '2001-01-01', DATE '2001-02-01'),"
    " (NULL::date, NULL::date) OVERLAPS (DATE '2001-01-01', DATE '2001-02-01')",
    "SELECT id, (d::timestamp, make_interval(days => x)) OVERLAPS (TIMESTAMPTZ"
    " '2024-01-03 00:00+00', INTERVAL '1 day') FROM fm ORDER BY id",
    "SELECT (1, 2) OVERLAPS (3, 4)",
]
LITERALS = [
    "SELECT U&'\\0041bc', U&'d\\0061t\\+000061', U&'a\\\\b'",
    "SELECT U&'d!0061t!+000061' UESCAPE '!'",
    "SELECT 'epoch'::date::text, 'epoch'::timestamp::text, 'EPOCH'::timestamptz::text",
    "SELECT date 'epoch' + 1, timestamp 'epoch' + interval '1 hour'",
    "SELECT 'today'::date = current_date, 'tomorrow'::date - 'yesterday'::date,"
    " 'today'::timestamp = current_date::timestamp, ' Yesterday '::date = current_date - 1",
    "SELECT 'now'::timestamptz = now(), 'now'::timestamp = now()::timestamp",
    "SELECT pg_typeof('a'), pg_typeof(NULL), pg_typeof('a'::text), pg_typeof(1)",
    "SELECT",
    "SELECT FROM fm",
    "SELECT FROM fm WHERE id > 3",
]
ROW_IN = [
    "SELECT id FROM fm WHERE (g, x) IN (SELECT g, x FROM fm WHERE id > 3) ORDER BY id",
    "SELECT id FROM fm WHERE (g, x) NOT IN (SELECT g, x FROM fm WHERE id > 3) ORDER BY id",
    "SELECT id FROM fm WHERE (g, x) NOT IN (SELECT 1, NULL::int) ORDER BY id",
    "SELECT id FROM fm WHERE (g, x) NOT IN (SELECT 3, 1) ORDER BY id",
    "SELECT id FROM fm WHERE (g, x) NOT IN (SELECT 1, 1 WHERE false) ORDER BY id",
    "SELECT id, (g, x) IN (SELECT g, x + 1 FROM fm WHERE id <> 1) FROM fm ORDER BY id",
    "SELECT id, (g, x) NOT IN (SELECT 1, NULL::int UNION ALL SELECT 2, 6) FROM fm ORDER BY id",
    "SELECT id, (g, s) IN (VALUES (1, 'c'), (2, NULL)) FROM fm ORDER BY id",
    "SELECT id, (g, s) IN ((1, 'c'), (2, NULL)), (g, x) NOT IN ((1, 3), (2, 6)) FROM fm"
    " ORDER BY id",
    "SELECT id FROM fm WHERE (fm.g, fm.s) IN (SELECT q.g, q.s FROM fm q WHERE q.id = fm.id)"
    " ORDER BY id",
    "SELECT id, (fm.g, fm.x) IN (SELECT q.g, q.x FROM fm q WHERE q.id > fm.id) FROM fm ORDER BY id",
    "SELECT id FROM fm WHERE (fm.g, fm.x) IN (SELECT q.g, max(q.x) FROM fm q GROUP BY q.g)"
    " ORDER BY id",
    "SELECT id FROM fm WHERE (g, x) IN (SELECT g FROM fm)",
    "SELECT id FROM fm WHERE (g) IN (SELECT g, x FROM fm)",
    "SELECT id FROM fm WHERE (g, x, s) IN (SELECT g, x FROM fm)",
]
TIES = [
    "SELECT id FROM fm ORDER BY g, id DESC FETCH FIRST 1 ROWS WITH TIES",
    "SELECT id, x FROM fm ORDER BY x DESC NULLS LAST FETCH FIRST 2 ROWS WITH TIES",
    "SELECT id, x FROM fm ORDER BY x DESC FETCH FIRST 2 ROWS WITH TIES",
    "SELECT id FROM fm ORDER BY y OFFSET 1 ROWS FETCH FIRST 2 ROWS WITH TIES",
    "SELECT id FROM fm ORDER BY g FETCH FIRST 0 ROWS WITH TIES",
    "SELECT g, count(*) FROM fm GROUP BY g ORDER BY count(*) DESC FETCH FIRST 1 ROW WITH TIES",
    "SELECT * FROM (SELECT id, g FROM fm ORDER BY g DESC FETCH FIRST 1 ROWS WITH TIES) s"
    " ORDER BY id",
    "SELECT id FROM fm FETCH FIRST 1 ROWS WITH TIES",
    "SELECT id FROM fm ORDER BY g FETCH FIRST NULL ROWS WITH TIES",
]
WRITES = [  # row IN in the writes' WHERE
    "DELETE FROM fm WHERE (g, x) IN (SELECT 2, 6)",
    "UPDATE fm SET s = 'u' WHERE (g, x) NOT IN (SELECT g, x FROM fm WHERE id = 1)",
    "SELECT id, s FROM fm ORDER BY id",
]
QUERIES = [
    "SELECT id, make_interval(days => x, secs => y)::text AS i, make_time(x, g, y) AS t FROM fm",
    "SELECT id, (d, d + 3) OVERLAPS (DATE '2024-01-01', DATE '2024-01-04') AS o FROM fm",
    "SELECT id, U&'\\0041' || s AS u, d > 'epoch'::date AS e FROM fm",
    "SELECT id FROM fm WHERE (g, x) NOT IN (SELECT g, x + 1 FROM fm WHERE id > 3)",
    "SELECT id, (g, x) IN (SELECT g, x FROM fm WHERE s <> 'q') AS i FROM fm",
    "SELECT id FROM fm WHERE (fm.g, fm.x) NOT IN (SELECT q.g, q.x + 1 FROM fm q"
    " WHERE q.id <> fm.id)",
    "SELECT id, x FROM fm ORDER BY x DESC NULLS LAST FETCH FIRST 2 ROWS WITH TIES",
    "SELECT g, x FROM fm ORDER BY g OFFSET 1 FETCH FIRST 1 ROWS WITH TIES",
]
CHANGES = [
    "INSERT INTO fm VALUES (6, 1, 6, 0.5, 'z', '2024-01-03'), (7, NULL, 9, 1, 'q', NULL)",
    "UPDATE fm SET x = 12, s = 'a' WHERE id = 4",
    "DELETE FROM fm WHERE id IN (1, 5)",
    "UPDATE fm SET g = 2, x = NULL WHERE id = 6",
]


def test_makers_and_overlaps_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fm", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, MAKERS + OVERLAPS)


def test_literals_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """U&'' strings, 'epoch' and the inputs read at the statement's time, pg_typeof of an
    unknown literal and SELECTs of no columns (one row each, no columns)."""
    with beside_postgres(tmp_path / "home", postgres_url, "fm", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, LITERALS)
        assert outcome(ours, "SELECT FROM fm") == ("ok", [], [()] * 5)


def test_errors_name_the_forms_as_written(tmp_path: Path, postgres_url: str) -> None:
    """A form read as the planner's own call is refused naming what was written."""
    from changeflow.adapter.connection import DatabaseError

    with beside_postgres(tmp_path / "home", postgres_url, "fm", *SETUP) as (ours, _pg):
        for sql, named in (
            ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) FROM fm", "percentile_cont"),
            ("SELECT bit_and(s) FROM fm", "bit_and"),
            ("SELECT (1, 2) OVERLAPS (3, 4)", "overlaps"),
            ("SELECT regexp_matches(1, 2)", "regexp_matches"),
        ):
            try:
                ours.execute(sql)
            except DatabaseError as e:
                assert e.sqlstate == "42883", sql
                assert f"function {named}(" in str(e) and "_of" not in str(e), str(e)
            else:
                raise AssertionError(f"accepted: {sql}")


def test_infinite_dates_are_refused_clearly(tmp_path: Path, postgres_url: str) -> None:
    """PostgreSQL's infinite dates are no value here: a feature not supported (0A000)."""
    with beside_postgres(tmp_path / "home", postgres_url, "fm", *SETUP) as (ours, _pg):
        for sql in ("SELECT 'infinity'::date", "SELECT '-infinity'::timestamptz"):
            assert outcome(ours, sql) == ("error", "0A000")
        ours.execute("CREATE MATERIALIZED VIEW none_shown AS SELECT 1 AS one")
        assert outcome(ours, "CREATE MATERIALIZED VIEW empty AS SELECT FROM fm") == (
            "error",
            "0A000",
        )


def test_row_in_and_with_ties_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fm", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, ROW_IN + TIES + WRITES)


def test_forms_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fm", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
