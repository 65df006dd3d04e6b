"""Numeric values at their edges compared with PostgreSQL 15: round and trunc to huge or
very negative scales, gcd and lcm of wide values, to_char of values too wide for the template
and of NaN and infinity, casts of infinity to integers, sign of NaN, and generate_series of
NaN or infinity. Each was an internal error (XX000) before."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = ("CREATE TABLE ne (n numeric)", "INSERT INTO ne VALUES (1e19), (3), (0.5), (-2.25)")


def test_numeric_extremes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ne", *SETUP) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "SELECT length(round(n, 2147483647)::text), round(n, -2147483648),"
                " length(round(n, 900)::text), trunc(n, -30), round(n, -20) FROM ne ORDER BY n",
                "SELECT round(25, -1), round(49, -2), round(50, -2), round(-5.5, -1),"
                " trunc(99.9, -2), round(1.25, 1)",
                "SELECT lcm(1e60::numeric, 7), gcd(1e60::numeric, 35), gcd(n, 0.75),"
                " lcm(n, 1.5), lcm(n, 0) FROM ne ORDER BY n",
                "SELECT to_char(n, '999.99'), to_char(-n, '9999'), to_char(-n, 'FM99'),"
                " to_char(n * 1e80, '9999') FROM ne ORDER BY n",
                "SELECT to_char('NaN'::numeric, '999'), to_char('NaN'::numeric, '99999.99'),"
                " to_char('NaN'::numeric, 'FM999'), to_char('NaN'::numeric, '9'),"
                " to_char('Infinity'::numeric, '999.9'), to_char('-Infinity'::numeric, 'FM999')",
                "SELECT 'Infinity'::numeric::int4",
                "SELECT '-Infinity'::numeric::int8",
                "SELECT (n * 1e80)::int8 FROM ne WHERE n > 1",
                "SELECT sign('NaN'::numeric), sign('Infinity'::numeric), sign(n)"
                " FROM ne ORDER BY n",
                "SELECT generate_series('NaN'::numeric, 3.0)",
                "SELECT * FROM generate_series(1::numeric, 'Infinity'::numeric) LIMIT 2",
                "SELECT * FROM generate_series(1::numeric, 3, '-Infinity'::numeric)",
                "SELECT count(*) FROM generate_series(1e40::numeric, 1e40 + 3)",
            ],
        )


def test_views_of_wide_values_and_repeated_names(tmp_path: Path) -> None:
    """A materialized view of a numeric too wide to store (or infinity) says so (each was
    XX000: the decimal context, Arrow's decimal types); repeated column names are refused
    (42701), and names given that look numbered (``to_char_1``) keep each column."""
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        ours.execute("CREATE TABLE vq (q int8)")
        ours.execute("INSERT INTO vq VALUES (5)")
        with pytest.raises(DatabaseError) as caught:  # as PostgreSQL: a name twice is 42701
            ours.execute(
                "CREATE MATERIALIZED VIEW vn AS SELECT q AS to_char_2, to_char(q, '999'),"
                " to_char(q, '9999') FROM vq"
            )
        assert caught.value.sqlstate == "42701"
        ours.execute(
            "CREATE MATERIALIZED VIEW vn (to_char_2, to_char, to_char_1) AS SELECT q,"
            " to_char(q, '999'), to_char(q, '9999') FROM vq"
        )
        assert ours.execute("SELECT * FROM vn").fetchall() == [(5, "   5", "    5")]
        ours.execute("CREATE MATERIALIZED VIEW vt AS SELECT '1e-1000000'::numeric AS tiny")
        assert len(ours.execute("SELECT * FROM vt").fetchall()) == 1  # scale past 38 decimals
        for i, wide in enumerate(
            ["1e100::numeric * q", "'Infinity'::numeric", "1e131071::numeric", "round(q, 1000)"]
        ):
            ours.execute(f"CREATE MATERIALIZED VIEW vw{i} AS SELECT {wide} AS big FROM vq")
            with pytest.raises(DatabaseError) as caught:
                ours.execute(f"SELECT * FROM vw{i}").fetchall()
            assert caught.value.sqlstate in ("0A000", "22003"), str(caught.value)
    finally:
        ours.close()
