"""Everyday syntax that once failed, run here and on PostgreSQL 15: ``BETWEEN SYMMETRIC``,
``ROW(…)`` constructors compared, dollar-quoted strings, statements that open with a
parenthesis, quoted literals as set operation columns, as the operands of AND/OR/NOT and as
``generate_series`` bounds, ``isfinite``, dates out of range (22008), ``UPDATE … SET (a, b) =
(x, y)`` and ``= (SELECT …)`` (correlated too; no row: NULLs, several: 21000), and booleans
written by ``concat`` and ``format`` as their output (``t``/``f``); ad hoc and, for the
queries over a table, as materialized views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE sx (id int PRIMARY KEY, lo int, hi int, flag boolean, name text)",
    "INSERT INTO sx VALUES (1, 1, 5, true, 'a'), (2, 9, 3, false, NULL), (3, NULL, 4, NULL,"
    " 'c'), (4, 4, 4, true, 'd')",
]
AD_HOC = [
    "SELECT 5 BETWEEN SYMMETRIC 10 AND 1, 5 BETWEEN 10 AND 1, 5 NOT BETWEEN SYMMETRIC 10 AND 1,"
    " NULL BETWEEN SYMMETRIC 1 AND 2, 2 BETWEEN SYMMETRIC NULL AND 3, 0 BETWEEN SYMMETRIC NULL"
    " AND 3",
    "SELECT ROW(1, 'a') = ROW(1, 'a'), ROW(1, NULL) IS NULL, ROW(NULL, NULL) IS NULL,"
    " ROW(1, 2) < ROW(1, 3), ROW(1, 2) <> (1, 3)",
    "(SELECT 1 AS x UNION SELECT 2) UNION SELECT 3 ORDER BY x DESC",
    "(SELECT 1 AS x) UNION (SELECT 2) ORDER BY 1",
    "(SELECT 1 AS x ORDER BY 1 LIMIT 1) UNION ALL (SELECT 2) ORDER BY 1",
    "((SELECT 5))",
    "(VALUES (1), (2)) ORDER BY 1 DESC",
    "(SELECT id FROM sx ORDER BY id LIMIT 2) EXCEPT (SELECT 1)",
    "(SELECT",
    "SELECT 1 UNION SELECT '2' ORDER BY 1",
    "SELECT 'a' UNION SELECT 1",
    "SELECT 1 AS a UNION SELECT 'x'",
    "SELECT 1.5 UNION ALL SELECT '2.25' ORDER BY 1",
    "SELECT date '2024-01-01' UNION SELECT '2024-02-01' ORDER BY 1",
    "SELECT 1, 'q' UNION SELECT '3', 'r' ORDER BY 1",
    "SELECT 1 EXCEPT SELECT '1'",
    "SELECT id FROM sx INTERSECT SELECT '2' ORDER BY 1",
    "SELECT date '2024-02-30'",
    "SELECT '2024-13-01'::date",
    "SELECT '2024-01-01 25:00'::timestamp",
    "SELECT '2024-02-29 10:00:00+02'::timestamptz, '2023-02-29'::timestamptz",
    "SELECT 'abc'::date",
    "UPDATE sx SET (name, flag) = ('n', false) WHERE id = 1",
    "UPDATE sx SET (name, hi) = ROW(upper(name), DEFAULT), flag = NOT flag WHERE id = 4",
    "SELECT * FROM sx ORDER BY id",
    "UPDATE sx SET (name, flag) = ('n')",
    "UPDATE sx SET (name, flag) = ('n', true, 1)",
    "UPDATE sx SET (name, name) = ('n', 'm')",
    "UPDATE sx SET (lo, hi) = (SELECT hi, lo FROM sx WHERE id = 4) WHERE id = 2 RETURNING *",
    "UPDATE sx o SET (name, hi) = (SELECT upper(o.name), i.hi + 1 FROM sx i WHERE i.id = o.id)",
    "UPDATE sx SET (name) = (SELECT 'u' UNION SELECT 'u') WHERE id = 3 RETURNING name",
    "UPDATE sx SET (lo, hi) = (SELECT 1, 2 WHERE false) WHERE id = 1 RETURNING lo, hi",
    "UPDATE sx SET (lo, hi) = (SELECT DISTINCT lo, hi FROM sx) WHERE id = 1",
    "UPDATE sx SET (lo, hi) = (SELECT lo FROM sx) WHERE id = 1",
    "SELECT * FROM sx ORDER BY id",
    "SELECT $$dollar$$",
    "SELECT $$it's$$ AS d, $t$x$t$, $$1$$::int + 1",
    "SELECT 'true'::boolean AND 't', true AND 'yes', 'f' OR false, NOT 'true', NOT ('off')",
    "SELECT true AND 'maybe'",
    "SELECT 1 AND true",
    "SELECT * FROM generate_series('2024-01-01'::timestamp, '2024-01-03', '1 day')",
    "SELECT * FROM generate_series('2024-01-30', '2024-02-02'::timestamp, '1 day')",
    "SELECT * FROM generate_series('1', 3)",
    "SELECT * FROM generate_series(1, 'x')",
    "SELECT isfinite(date '2024-01-01'), isfinite(interval '1 day'), isfinite(NULL::date),"
    " isfinite(timestamp '2024-01-01'), isfinite(now())",
    "SELECT isfinite('2024-01-01')",
    "SELECT concat('a', NULL, 1, true), concat_ws(',', true, false), format('%s %L', true,"
    " false), 'x' || true, true || 'x'",
]
QUERIES = [
    "SELECT id FROM sx WHERE 3 BETWEEN SYMMETRIC lo AND hi",
    "SELECT id, id NOT BETWEEN SYMMETRIC hi AND lo FROM sx",
    "SELECT id, concat(name, flag), format('%s/%s', id, flag) FROM sx",
    "SELECT id FROM sx WHERE ROW(lo, hi) = ROW(4, 4) OR ROW(lo, hi) < (2, 0)",
    "SELECT id, flag AND 'on', NOT 'off' OR flag FROM sx",
    "(SELECT id, name FROM sx WHERE flag) UNION (SELECT lo, 'x' FROM sx WHERE lo > 2)",
]
CHANGES = [
    "INSERT INTO sx VALUES (5, 7, 2, false, 'e')",
    "UPDATE sx SET lo = 3, flag = NOT flag WHERE id = 1",
    "DELETE FROM sx WHERE id = 4",
]


def test_syntax_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "sx", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)


def test_syntax_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "sx", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
