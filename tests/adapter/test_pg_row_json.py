"""A table's row given to ``to_json``, ``to_jsonb``, ``jsonb_agg``, ``json_agg`` and the json
builders: a JSON object of its columns by name (it was the row's record text as a JSON string),
here and on PostgreSQL 15 (json compared as text), ad hoc and in views kept through changes;
json_agg's text of other values, and json values given to the jsonb functions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE rj (id int PRIMARY KEY, g int, s text, x numeric(6,2), b bool)",
    "INSERT INTO rj VALUES (1, 1, 'a', 1.5, true), (2, 1, NULL, NULL, false),"
    " (3, 2, 'q\"t', -2, NULL)",
]
AD_HOC = [
    "SELECT to_json(rj)::text, to_jsonb(rj)::text FROM rj ORDER BY id",
    "SELECT to_json(t)::text, to_jsonb(t)::text FROM rj AS t WHERE id = 3",
    "SELECT jsonb_agg(rj ORDER BY id)::text FROM rj",
    "SELECT g, jsonb_agg(t ORDER BY id DESC)::text FROM rj t GROUP BY g ORDER BY g",
    "SELECT jsonb_agg(s ORDER BY id)::text, to_jsonb(s)::text FROM rj GROUP BY s ORDER BY 1",
    "SELECT jsonb_agg(t)::text FROM rj t WHERE id > 5",
    "SELECT json_agg(rj ORDER BY id)::text, json_agg(t)::text FROM rj, rj t WHERE t.id > 5",
    "SELECT g, json_agg(x ORDER BY x.id DESC)::text FROM (SELECT id, g, s FROM rj) x GROUP BY g"
    " ORDER BY g",
    "SELECT json_agg(s ORDER BY id)::text, json_agg(x ORDER BY id)::text, "
    "json_agg(b ORDER BY id)::text, json_agg(ARRAY[id, g] ORDER BY id)::text, "
    "json_agg(to_json(s) ORDER BY id)::text FROM rj",
    "SELECT json_agg(row_to_json(rj) ORDER BY id) FILTER (WHERE id > 1)::text FROM rj",
    "SELECT json_build_object('r', rj, 'n', id)::text, jsonb_build_object('r', rj)::text, "
    "json_build_array(rj, 1)::text, jsonb_build_array(rj)::text FROM rj ORDER BY id",
    "SELECT to_jsonb(to_json(rj))::text, jsonb_build_object('j', '[1, 2.50]'::json)::text "
    "FROM rj ORDER BY id",
]
QUERIES = [
    "SELECT id, to_jsonb(rj)::text AS j, to_json(rj)::text AS t FROM rj",
    "SELECT g, jsonb_agg(rj ORDER BY id)::text AS a FROM rj GROUP BY g",
    "SELECT g, json_agg(rj ORDER BY id)::text AS a, json_agg(s ORDER BY id)::text AS b "
    "FROM rj GROUP BY g",
    "SELECT id, json_build_object('r', rj)::text AS o FROM rj",
]
CHANGES = [
    "INSERT INTO rj VALUES (4, 2, 'new', 0.25, true), (5, 3, NULL, 7, false)",
    "UPDATE rj SET s = 'changed', x = 9.99 WHERE id = 1",
    "DELETE FROM rj WHERE id IN (2, 3)",
]


def test_rows_as_json_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rj", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)


def test_rows_as_json_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rj", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
