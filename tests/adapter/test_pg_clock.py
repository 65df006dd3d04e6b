"""``statement_timestamp()`` and ``clock_timestamp()`` as PostgreSQL 15's: the statement's
start and the time of each evaluation, timestamptz, ad hoc; refused in views as ``now()``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = ["CREATE TABLE ck (id int)", "INSERT INTO ck VALUES (1), (2), (3)"]
AD_HOC = [
    "SELECT statement_timestamp() = now(), pg_typeof(statement_timestamp()),"
    " pg_typeof(clock_timestamp()), clock_timestamp() >= statement_timestamp()",
    "SELECT id, clock_timestamp() >= now(), clock_timestamp() < now() + interval '1 hour',"
    " statement_timestamp() = transaction_timestamp() FROM ck ORDER BY id",
    "SELECT count(*) FROM ck WHERE clock_timestamp() > statement_timestamp() - interval '1 day'",
]
IN_TRANSACTION = [
    "SELECT 1",
    "SELECT statement_timestamp() > now(), clock_timestamp() > now(),"
    " statement_timestamp() > transaction_timestamp(), clock_timestamp() >= statement_timestamp()",
    "SELECT statement_timestamp() <= clock_timestamp()",
]
ERRORS = ["SELECT statement_timestamp(1)", "SELECT clock_timestamp('x')"]


def test_statement_and_clock_timestamps_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ck", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        for conn in (ours, pg):
            conn.execute("BEGIN")
        try:
            same_outcomes(ours, pg, IN_TRANSACTION)
        finally:
            for conn in (ours, pg):
                conn.execute("COMMIT")
        same_errors(ours, pg, ERRORS)


def test_clock_functions_refused_in_views(tmp_path: Path, postgres_url: str) -> None:
    """As ``now()``: a view's rows would not change as time passes (0A000)."""
    from changeflow.adapter.connection import DatabaseError

    with beside_postgres(tmp_path / "home", postgres_url, "ck", *SETUP) as (ours, _):
        for sql in (
            "CREATE MATERIALIZED VIEW v AS SELECT id, statement_timestamp() FROM ck",
            "CREATE VIEW v AS SELECT id FROM ck WHERE clock_timestamp() > '2020-01-01'",
            "CREATE MATERIALIZED VIEW v AS SELECT id, now() FROM ck",
        ):
            with pytest.raises(DatabaseError) as caught:
                ours.execute(sql)
            assert caught.value.sqlstate == "0A000", sql
        assert outcome(ours, "SELECT count(*) FROM ck") == ("ok", ["count"], [("3",)])
