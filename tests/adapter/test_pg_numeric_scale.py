"""A numeric's scale as PostgreSQL 15 shows it, embedded: ``scale``, ``min_scale`` and
``trim_scale``, no negative zero (``ceil(-0.5)``, ``-0.50 * 0``), ad hoc and in views of
declared ``numeric(p, s)`` columns; ``sqrt``, ``exp``, ``ln`` and ``power`` of numerics (numeric,
at PostgreSQL's scales) and the text of small numerics (no exponent), compared as text with the
same statements on PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE ns (id int NOT NULL, y numeric(10,2), z numeric(8,3))"
INSERT = "INSERT INTO ns VALUES (1, 3.1, 2.5), (2, -0.5, 0.125), (3, NULL, -1), (4, 0, -0.25)"
AD_HOC = [
    "SELECT scale(1.50), scale(-0.00), scale(7), min_scale(1.500), min_scale(0.00),"
    " trim_scale(1.500), trim_scale(-0.00), trim_scale(12), scale(NULL::numeric)",
    "SELECT scale('NaN'::numeric), min_scale('NaN'::numeric), trim_scale('NaN'::numeric)",
    "SELECT ceil(-0.5), floor(-0.0), round(-0.4), round(-0.004, 2), trunc(-0.9), -0.50 * 0",
]
QUERIES = [
    "SELECT id, scale(y), scale(y * z), min_scale(z), trim_scale(z), y * 0 FROM ns",
    "SELECT id, ceil(y), floor(z), round(z, 1), trunc(y), y * z FROM ns",
]
CHANGES = [
    "INSERT INTO ns VALUES (5, -0.01, -0.001)",
    "UPDATE ns SET z = z * 10 WHERE id < 3",
    "DELETE FROM ns WHERE id = 1",
]


VALUES = ["2.5", "0.125", "1.000", "0", "12345.6789", "0.00001234", "99999999", "3.10", "-0.50"]
VALUES += ["1e-20", "123456789012345678.5", "0.9", "1.05", "7.5e10", "'NaN'"]
EXPONENTS = ["2", "0", "-1", "3", "0.5", "-2.5", "10", "1.5", "-3", "2.0", "'NaN'"]
MATH = (
    [
        f"SELECT sqrt(abs({v}::numeric))::text, ln(abs({v}::numeric) + 1)::text,"
        f" exp({v}::numeric / 1000000000000)::text"
        for v in VALUES
    ]
    + [
        "SELECT " + ", ".join(f"power({v}::numeric, {e}::numeric)::text" for e in EXPONENTS)
        for v in VALUES
        if not v.startswith("-") and v != "0"
    ]
    + [
        "SELECT sqrt(2)::text, exp(1)::text, power(2, 0.5)::text, power(2.0::float8, 3)::text,"
        " pg_typeof(sqrt(2.0)), pg_typeof(power(2, 3)), pg_typeof(power(2.0, 3)),"
        " pg_typeof(ln(2.0::float8)), pg_typeof(exp(2::numeric))",
        "SELECT power(0.9::numeric, 536104)::text, exp(-5999.5::numeric)::text,"
        " power(99999999::numeric, 0.5)::text, (1::numeric / 10000000)::text, 0.00000001234::text",
    ]
)
MATH_ERRORS = [
    "SELECT sqrt(-1::numeric)",
    "SELECT ln(0::numeric)",
    "SELECT ln(-2.5)",
    "SELECT exp(6000::numeric)",
    "SELECT power(0::numeric, -1)",
    "SELECT power(-2::numeric, 0.5)",
    "SELECT power(10::numeric, 200000)",
]


def texts(conn, sql: str) -> list:
    return sorted(outcome(conn, sql)[2], key=str)


def test_numeric_scale_functions_and_zero_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ns", CREATE, INSERT) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        maintained_as_postgres(ours, pg, QUERIES, CHANGES, rows=texts)
        same_errors(ours, pg, ["SELECT scale(1.5::float8)", "SELECT trim_scale('a'::text)"])


def test_numeric_math_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ns", CREATE, INSERT) as (ours, pg):
        same_outcomes(ours, pg, MATH)
        same_errors(ours, pg, MATH_ERRORS)
        sql = "SELECT id, sqrt(abs(y))::text, power(z, 2)::text, exp(y)::text FROM ns"
        assert texts(ours, sql) == texts(pg, sql)


def test_numeric_overflow_on_insert(tmp_path: Path, postgres_url: str) -> None:
    """A value past a numeric(p, s) column's range is 22003 as in PostgreSQL, however many
    digits it has (30 digits was an internal error); past what an unconstrained column stores
    here (28 digits before the point), a clear 0A000 where PostgreSQL stores it."""
    from changeflow.adapter.connection import DatabaseError

    with beside_postgres(tmp_path / "home", postgres_url, "ns", CREATE, INSERT) as (ours, pg):
        same_errors(
            ours,
            pg,
            [
                "INSERT INTO ns VALUES (9, 123456789012345678901234567890.5, 1)",
                "INSERT INTO ns VALUES (9, 1, 123456.5)",
            ],
        )
        ours.execute("CREATE TABLE nu (x numeric)")
        with pytest.raises(DatabaseError) as caught:
            ours.execute("INSERT INTO nu VALUES (12345678901234567890123456789.5)")
        assert caught.value.sqlstate == "0A000" and "unconstrained numeric" in str(caught.value)


WIDE_CREATE = "CREATE TABLE wn (id int NOT NULL, x numeric)"
WIDE_INSERT = (
    "INSERT INTO wn VALUES (1, 1e19), (2, 0.123456789), (3, 12345678901234567.25), (4, -3.5)"
)
WIDE_QUERIES = [
    "SELECT id, x + 1000000000000000000, x - 0.000000001, x * 3 FROM wn",
    "SELECT sum(x), count(x), max(x) FROM wn",
    "SELECT id > 2 AS late, sum(x) FROM wn GROUP BY id > 2",
]
WIDE_CHANGES = [
    "INSERT INTO wn VALUES (5, 999999999999999999.9999999999)",
    "UPDATE wn SET x = x + 0.0000000001 WHERE id <= 2",
    "DELETE FROM wn WHERE id = 3",
]


def test_wide_numerics_add_and_sum_exactly_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """Sums, differences and products of numerics past 28 digits are exact (Decimal's default
    context rounded them to 28 significant digits), ad hoc and in views, whose output past
    that many digits was an internal error."""
    with beside_postgres(tmp_path / "home", postgres_url, "wn", WIDE_CREATE, WIDE_INSERT) as (
        ours,
        pg,
    ):
        same_outcomes(ours, pg, WIDE_QUERIES)
        maintained_as_postgres(ours, pg, WIDE_QUERIES, WIDE_CHANGES)


UNCONSTRAINED = ["CREATE TABLE nu (id int NOT NULL, x numeric)"]
UNCONSTRAINED += [
    "INSERT INTO nu VALUES (1, 1e-11), (2, 1.123456789012345), (3, 9223372036854775807),"
    " (4, -0.000000000000000001), (5, 12345678901234567890.123456789012345678), (6, 3)"
]


def test_unconstrained_numerics_keep_their_digits_as_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    """An unconstrained numeric column keeps 18 places and 20 digits before the point (it kept
    10 places: 1e-11 read back as 0), in tables and views."""
    with beside_postgres(tmp_path / "home", postgres_url, "nu", *UNCONSTRAINED) as (ours, pg):
        queries = ["SELECT id, x, x * 2, x - 1 FROM nu", "SELECT sum(x), count(x), min(x) FROM nu"]
        same_outcomes(ours, pg, queries)
        changes = [
            "INSERT INTO nu VALUES (7, 0.000000000000000005), (8, 1.5)",
            "UPDATE nu SET x = x / 4 WHERE id IN (2, 8)",
            "DELETE FROM nu WHERE id = 1",
        ]
        maintained_as_postgres(ours, pg, queries, changes)


def test_a_value_an_unconstrained_column_would_round_is_refused(tmp_path: Path) -> None:
    """PostgreSQL keeps every digit of an unconstrained numeric; a table here keeps 18 places,
    so a value it would round is refused (0A000, with a hint), by INSERT, INSERT … SELECT and
    UPDATE alike, and nothing is written."""
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        ours.execute("CREATE TABLE nr (id int, x numeric)")
        ours.execute("INSERT INTO nr VALUES (1, 1), (2, 0.5)")
        for sql in (
            "INSERT INTO nr VALUES (3, 0.1234567890123456789)",
            "INSERT INTO nr VALUES (3, 123456789012345678901)",
            "INSERT INTO nr SELECT 3, x / 3 FROM nr",
            "UPDATE nr SET x = x / 3",
        ):
            with pytest.raises(DatabaseError) as failed:
                ours.execute(sql)
            assert failed.value.sqlstate == "0A000", sql
            assert 'column "x" of "nr"' in str(failed.value)
            assert "round(x, 18)" in failed.value.error.hint
        ours.execute("INSERT INTO nr VALUES (3, round(1 / 3.0, 18))")
        rows = ours.execute("SELECT id, x FROM nr ORDER BY id").fetchall()
        assert [(i, str(x)) for i, x in rows] == [(1, "1"), (2, "0.5"), (3, "0.333333333333333333")]
    finally:
        ours.close()
