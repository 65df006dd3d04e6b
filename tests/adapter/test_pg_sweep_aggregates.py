"""``json_agg`` (with ORDER BY, grouped or not), ``jsonb_set`` and ``jsonb_strip_nulls`` here
and on PostgreSQL 15: the same text (compared as text: psycopg reads PostgreSQL's json into
Python values), ad hoc and as materialized views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

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
        same_outcomes(ours, pg, AD_HOC)


def test_json_agg_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ja", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)


JSONB_EDITS = [
    "SELECT jsonb_set('{\"a\":1}', '{b}', '2')::text",
    "SELECT jsonb_set('{\"a\":[1,2,{\"c\":3}]}', '{a,2,c}', '[true]')::text,"
    " jsonb_set('{\"a\":[1,2]}', '{a,-1}', '\"x\"', false)::text,"
    " jsonb_set('{\"a\":[1,2]}', '{a,9}', '0')::text,"
    " jsonb_set('{\"a\":[1,2]}', '{a,-9}', '0')::text,"
    " jsonb_set('{\"a\":1}', '{b}', '2', false)::text, jsonb_set('{\"a\":1}', '{x,y}', '2')::text,"
    " jsonb_set('{\"a\":1}', '{}', '2')::text, jsonb_set('{\"a\":1}', '{a}', NULL)",
    "SELECT jsonb_set('1', '{a}', '2')",
    "SELECT jsonb_set('[1]', '{x}', '2')",
    'SELECT jsonb_strip_nulls(\'{"a":null,"b":{"c":null,"d":1},"e":[null]}\')::text,'
    " jsonb_strip_nulls('null')::text, jsonb_strip_nulls(NULL)",
]


def test_jsonb_edits_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """``jsonb_set`` and ``jsonb_strip_nulls``, ad hoc and in a view kept through changes."""
    setup = [
        *SETUP,
        "ALTER TABLE ja ADD COLUMN j jsonb",
        "UPDATE ja SET j = jsonb_build_object('n', name, 'k', k)",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "ja", *setup) as (ours, pg):
        same_outcomes(ours, pg, JSONB_EDITS)
        queries = [
            "SELECT id, jsonb_set(j, '{k}', to_jsonb(id))::text, jsonb_strip_nulls(j)::text FROM ja"
        ]
        maintained_as_postgres(ours, pg, queries, CHANGES)


def test_scalar_subquery_keeps_scale_in_a_view(tmp_path: Path, postgres_url: str) -> None:
    """A scalar subquery of a numeric(p, s) column shows its scale in a view (``500.00``)."""
    queries = [
        "SELECT (SELECT max(amount) FROM ja) AS m, (SELECT amount FROM ja WHERE id = 1) AS one",
        "SELECT id, (SELECT min(b.amount) FROM ja b WHERE b.k = a.k) AS low FROM ja a",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "ja", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, queries, CHANGES)
