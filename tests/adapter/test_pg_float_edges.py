"""Double precision at its edges as PostgreSQL 15 answers: ``power`` with NaN and infinite
operands (C's pow: ``power(-1, inf)`` is 1) and its overflow and underflow of finite ones;
the hyperbolic functions of infinities, ``acosh`` and ``atanh`` with their domains; sums
and averages over infinities; ad hoc and in views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE fe (id int PRIMARY KEY, x float8, y float8)",
    "INSERT INTO fe VALUES (1, -1, 'inf'), (2, 0.5, '-inf'), (3, 'nan', 0), (4, 1, 'nan'),"
    " (5, '-inf', 3), (6, 2, 0.5), (7, 'inf', -2), (8, -2.5, '-inf')",
]
AD_HOC = [
    "SELECT id, power(x, y) FROM fe ORDER BY id",
    "SELECT power(float8 '-1', float8 '-inf'), power(float8 '-0.5', float8 'inf'),"
    " power(float8 'nan', float8 '1'), power(float8 '-inf', float8 '-3'),"
    " power(float8 'inf', float8 'inf')",
    "SELECT power(float8 '10', float8 '400')",
    "SELECT power(float8 '10', float8 '-400')",
    "SELECT power(float8 '-8', float8 '-inf'), power(float8 '0', float8 'inf')",
    "SELECT power(float8 '0', float8 '-inf')",
    "SELECT power(float8 '-inf', float8 '0.5')",
    "SELECT sinh(float8 '-inf'), cosh(float8 'inf'), tanh(float8 '-inf'), asinh(float8 'inf'),"
    " sinh(float8 '1000'), cosh(float8 '-1000')",
    "SELECT acosh(float8 '1'), acosh(float8 'inf'), acosh(float8 'nan'), atanh(float8 '1'),"
    " atanh(float8 '-1'), atanh(float8 '0'), atanh(float8 'nan')",
    "SELECT acosh(float8 '0.5')",
    "SELECT atanh(float8 '1.5')",
    "SELECT atanh(float8 '-inf')",
    "SELECT sin(float8 'inf')",
    "SELECT id, tanh(y), asinh(x), acosh(abs(x) + 1) FROM fe ORDER BY id",
]
QUERIES = [
    "SELECT id, power(x, y) AS p, tanh(y) AS t, acosh(abs(x) + 1) AS a FROM fe",
    # infinities summed apart: taking one away leaves the finite sum, not NaN
    "SELECT id > 4 AS late, sum(y) AS s, avg(y) AS a, count(y) AS n FROM fe GROUP BY id > 4",
]
CHANGES = [
    "INSERT INTO fe VALUES (9, -0.25, 'inf'), (10, 'nan', 'nan')",
    "UPDATE fe SET y = '-inf' WHERE id = 1",
    "DELETE FROM fe WHERE id IN (3, 5)",
    "DELETE FROM fe WHERE id IN (2, 4)",
    "UPDATE fe SET y = 1 WHERE id = 1",
]


def texts(conn: Any, sql: str) -> list[tuple[str, ...]]:
    """``sql``'s rows as text, sorted (a NaN is equal to no float, its text to its own)."""
    return sorted(tuple(str(v) for v in r) for r in conn.execute(sql).fetchall())


def test_float_edges_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fe", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)


def test_float_edges_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fe", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES, rows=texts)
