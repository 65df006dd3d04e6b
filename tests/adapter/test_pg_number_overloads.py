"""Numeric functions with several signatures resolved as PostgreSQL 15 resolves them: round,
trunc, ceil, ceiling, floor, sign and abs of integers, numerics, doubles, quoted literals and
NULL, with and without places; div, mod and ``%`` (no double precision); power, sqrt, ln and
exp of a numeric and an unknown. Each call's text and
``pg_typeof``, or its SQLSTATE, compared with PostgreSQL's; then the same in materialized views
of a table's columns, through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

VALUES = ["5", "-5", "5::int2", "5::int8", "2.567", "-2.5", "2.5::float8", "'2.567'", "NULL"]
PLACES = ["2", "-1", "2::int8", "2::int2", "1.0", "2::float8", "'2'", "NULL"]
OPERANDS = ["7", "-7", "7::int2", "7::int8", "7.5", "7.5::float8", "'7'", "NULL"]


def _typed(call: str) -> str:
    return f"SELECT {call}, pg_typeof({call})"


CALLS = (
    [
        _typed(f"{f}({v})")
        for f in ("round", "trunc", "ceil", "ceiling", "floor", "sign", "abs")
        for v in VALUES
    ]
    + [_typed(f"{f}({v}, {p})") for f in ("round", "trunc") for v in VALUES for p in PLACES]
    + [
        _typed(f"{f}({a}, {b})")
        for f in ("div", "mod")
        for a in OPERANDS
        for b in [*OPERANDS[2:], "0"]
    ]
    + [_typed(f"{a} % {b}") for a in OPERANDS for b in ("2", "2::int2", "2.5::float8", "'2'")]
    + [_typed("round(25, -1)"), _typed("trunc(-25.5, -1)"), _typed("round(1e300::float8)")]
    + [
        _typed(f"{f}({a}, {b})")
        for f in ("power", "pow")
        for a in ("2", "2.0", "2::float8", "'2'", "NULL")
        for b in ("3", "3.0", "3::float8", "'3'", "NULL")
    ]
    + [_typed(f"{f}({v})") for f in ("sqrt", "ln", "exp") for v in ("4", "4.0", "'4'", "NULL")]
)

CREATE = "CREATE TABLE nums (id int NOT NULL, i int, b bigint, n numeric(8,3), f float8)"
INSERT = (
    "INSERT INTO nums VALUES (1, 5, -7, 2.567, 2.5), (2, -15, 12, -0.5, -3.5),"
    " (3, NULL, 0, NULL, NULL)"
)
QUERIES = [
    "SELECT id, round(i, 2), round(i), trunc(b, 1), trunc(i), ceil(i), floor(b), sign(i),"
    " abs(i), round(n, -1), trunc(n), ceiling(f), sign(n) FROM nums",
    "SELECT id, round(b, -1), i % 4, mod(b, 5), mod(n, 2), div(i, 2), round(f), floor(f) FROM nums",
]
CHANGES = [
    "INSERT INTO nums VALUES (4, 1234, 99, 99.995, 0.5)",
    "UPDATE nums SET i = i * 3, n = n * 10 WHERE id < 3",
    "DELETE FROM nums WHERE id = 1",
]


def texts(conn, sql: str) -> list:
    return sorted(outcome(conn, sql)[2], key=str)


def test_number_function_overloads_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "nums", CREATE, INSERT) as (ours, pg):
        same_outcomes(ours, pg, CALLS)
        maintained_as_postgres(ours, pg, QUERIES, CHANGES, rows=texts)
