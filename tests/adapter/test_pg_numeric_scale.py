"""A numeric's scale as PostgreSQL 15 shows it, embedded: ``scale``, ``min_scale`` and
``trim_scale``, and no negative zero (``ceil(-0.5)``, ``-0.50 * 0``), ad hoc and in views of
declared ``numeric(p, s)`` columns, compared as text with the same statements on PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_errors  # noqa: E402

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


def texts(conn, sql: str) -> list:
    return sorted(outcome(conn, sql)[2], key=str)


def test_numeric_scale_functions_and_zero_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ns", CREATE, INSERT) as (ours, pg):
        for sql in AD_HOC:
            assert outcome(ours, sql) == outcome(pg, sql), sql
        maintained_as_postgres(ours, pg, QUERIES, CHANGES, rows=texts)
        same_errors(ours, pg, ["SELECT scale(1.5::float8)", "SELECT trim_scale('a'::text)"])
