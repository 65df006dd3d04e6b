"""``json_agg`` (with ORDER BY, grouped or not) here and on PostgreSQL 15: the same text
(compared as text: psycopg reads PostgreSQL's json into Python values), ad hoc and as
materialized views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE ja (id int PRIMARY KEY, k int, name text, amount numeric(6,2), ok boolean)",
    "INSERT INTO ja VALUES (1, 1, 'b', 1.50, true), (2, 1, 'a', NULL, false), (3, 2, NULL, 3,"
    " true), (4, NULL, 'd', 0.25, NULL)",
]
AD_HOC = [
    "SELECT json_agg(name ORDER BY id)::text, pg_typeof(json_agg(id)) FROM ja",
    "SELECT json_agg(x)::text FROM (VALUES (1)) v(x) WHERE false",
    "SELECT k, json_agg(name ORDER BY name DESC)::text FROM ja GROUP BY k ORDER BY k",
]
QUERIES = [
    "SELECT k, json_agg(amount ORDER BY id)::text FROM ja GROUP BY k",
    "SELECT json_agg(ok ORDER BY id)::text AS j FROM ja",
]
CHANGES = [
    "INSERT INTO ja VALUES (5, 2, 'e', 9.99, false)",
    "UPDATE ja SET amount = 2.5, k = 2 WHERE id = 1",
    "DELETE FROM ja WHERE id = 3",
]


def test_json_agg_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ja", *SETUP) as (ours, pg):
        for sql in AD_HOC:
            assert outcome(ours, sql) == outcome(pg, sql), sql


def test_json_agg_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ja", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
