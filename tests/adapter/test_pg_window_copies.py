"""A call's window copying a named one, ``OVER (w ORDER BY … frame)``: the named window's
partitioning and ordering with the call's own ordering and frame (EXCLUDE too), and
PostgreSQL's refusals (42P20) of what it may not override; ``nth_value(v, n)`` with ``n`` of
each row; ``json_agg``, ``jsonb_agg`` and ``jsonb_object_agg`` as window functions; sliding
sums over NaN and the infinities. Here and on PostgreSQL 15, ad hoc and in views kept through
changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE wc (id int PRIMARY KEY, g int, v int, n int)",
    "INSERT INTO wc VALUES (1, 1, 10, 1), (2, 1, 20, 2), (3, 1, 30, 3), (4, 2, 5, 2),"
    " (5, 2, NULL, 1), (6, 2, 7, NULL), (7, 3, 1, 4)",
]
AD_HOC = [
    "SELECT id, sum(v) OVER (w RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"
    " FROM wc WINDOW w AS (ORDER BY g) ORDER BY id",
    "SELECT id, sum(v) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    " EXCLUDE CURRENT ROW) FROM wc WINDOW w AS (PARTITION BY g ORDER BY id) ORDER BY id",
    "SELECT id, count(*) OVER (w ORDER BY v DESC NULLS LAST), first_value(id) OVER"
    " (w ORDER BY id GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE GROUP)"
    " FROM wc WINDOW w AS (PARTITION BY g) ORDER BY id",
    "SELECT id, sum(v) OVER (w2 ROWS 1 PRECEDING), sum(v) OVER w2 FROM wc"
    " WINDOW w1 AS (PARTITION BY g), w2 AS (w1 ORDER BY id) ORDER BY id",
    "SELECT id, sum(v) OVER (w RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING EXCLUDE TIES)"
    " FROM wc WINDOW w AS (ORDER BY v) ORDER BY id",
    "SELECT id, nth_value(v, n) OVER (PARTITION BY g ORDER BY id), nth_value(id, n) OVER"
    " (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM wc ORDER BY id",
    "SELECT id, nth_value(v, g) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING"
    " EXCLUDE CURRENT ROW) FROM wc ORDER BY id",
    "SELECT id, json_agg(v) OVER (PARTITION BY g ORDER BY id)::text, jsonb_agg(v) OVER w::text,"
    " jsonb_object_agg(id, v) OVER w::text FROM wc WINDOW w AS (ORDER BY id ROWS 1 PRECEDING)"
    " ORDER BY id",
    # a sliding numeric sum past a NaN or an infinity (they do not subtract from prefix sums)
    "SELECT a, sum(b) OVER w, avg(b) OVER w FROM (VALUES (1, 1::numeric), (2, 'Infinity'),"
    " (3, '-Infinity'), (4, 3), (5, 4), (6, 'NaN'), (7, 'Infinity'), (8, 2.5)) t(a, b)"
    " WINDOW w AS (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) ORDER BY a",
]
ERRORS = [
    "SELECT sum(v) OVER (w PARTITION BY id) FROM wc WINDOW w AS (PARTITION BY g)",
    "SELECT sum(v) OVER (w ORDER BY id) FROM wc WINDOW w AS (ORDER BY g)",
    "SELECT sum(v) OVER (w ROWS 1 PRECEDING) FROM wc WINDOW w AS (ORDER BY g ROWS 2 PRECEDING)",
    "SELECT sum(v) OVER (nope ORDER BY id) FROM wc",
    "SELECT nth_value(v, n - 1) OVER (ORDER BY id) FROM wc",
    "SELECT string_agg(v::text, ',' ORDER BY v) OVER () FROM wc",
    "SELECT array_agg(v ORDER BY v) OVER (PARTITION BY g) FROM wc",
    "SELECT jsonb_agg(v ORDER BY v) OVER () FROM wc",  # (was 42809: to_jsonb …)
]
QUERIES = [
    "SELECT id, sum(v) OVER (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW)"
    " AS s FROM wc WINDOW w AS (PARTITION BY g ORDER BY id)",
    "SELECT id, nth_value(v, n) OVER (PARTITION BY g ORDER BY id) AS nv FROM wc",
    "SELECT id, json_agg(v) OVER (PARTITION BY g ORDER BY id)::text AS j FROM wc",
]
CHANGES = [
    "INSERT INTO wc VALUES (8, 1, 40, 2), (9, 3, 2, 1)",
    "UPDATE wc SET n = 1, v = 11 WHERE id = 2",
    "DELETE FROM wc WHERE id IN (1, 6)",
]


def test_window_copies_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "wc", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        same_errors(ours, pg, ERRORS)


def test_window_copies_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "wc", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
