"""``VARIADIC`` arrays given to the functions of any number of arguments (``concat``,
``concat_ws``, ``format``, the json and jsonb builders): literal, NULL, empty and column
arrays and aggregated ones, here and on PostgreSQL 15, ad hoc and in views kept through
changes (json compared as text)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE va (id int PRIMARY KEY, g int, a text[], n int[])",
    "INSERT INTO va VALUES (1, 1, '{x,y}', '{1,2}'), (2, 1, NULL, NULL), (3, 2, '{}', '{}'),"
    " (4, 2, '{p,NULL}', '{NULL,5}')",
]
AD_HOC = [
    "SELECT concat(VARIADIC ARRAY[1, 2, 3]), concat_ws('-', VARIADIC ARRAY['a', NULL, 'c'])",
    "SELECT concat(VARIADIC NULL::int[]) IS NULL, concat_ws(',', VARIADIC NULL::text[]) IS NULL,"
    " concat(VARIADIC '{}'::int[]) = ''",
    "SELECT format('%s and %s', VARIADIC ARRAY['x', 'y']), format('%2$s %1$s', VARIADIC"
    " ARRAY[1, 2]), format('none', VARIADIC NULL::text[]), format('%s', VARIADIC ARRAY[true])",
    "SELECT format('%s %s', VARIADIC ARRAY['only'])",
    "SELECT concat_ws(',', VARIADIC 10)",
    "SELECT concat(VARIADIC 'x'::text)",
    "SELECT json_build_array(VARIADIC ARRAY[1, 2])::text, json_build_object(VARIADIC"
    " ARRAY['k', 'v'])::text, jsonb_build_array(VARIADIC ARRAY['a', NULL])::text,"
    " jsonb_build_object(VARIADIC '{1,2,3,4}'::int[])::text",
    "SELECT json_build_array(VARIADIC NULL::int[]) IS NULL,"
    " jsonb_build_object(VARIADIC '{}'::text[])::text",
    "SELECT jsonb_build_object(VARIADIC ARRAY['a', 'b', 'c'])",
    "SELECT jsonb_build_object(VARIADIC ARRAY[NULL, 'a'])",
    "SELECT id, concat(VARIADIC a), concat_ws('+', VARIADIC n), jsonb_build_array(VARIADIC n)"
    "::text FROM va ORDER BY id",
    "SELECT g, concat_ws(',', VARIADIC array_agg(id ORDER BY id)),"
    " format(string_agg('<%s>', '' ORDER BY id), VARIADIC array_agg(id ORDER BY id))"
    " FROM va GROUP BY g ORDER BY g",
]
QUERIES = [
    "SELECT id, concat(VARIADIC a) AS c, concat_ws('+', VARIADIC n) AS w,"
    " json_build_array(VARIADIC a)::text AS j FROM va",
    "SELECT g, concat_ws(',', VARIADIC array_agg(id ORDER BY id)) AS ids FROM va GROUP BY g",
]
CHANGES = [
    "INSERT INTO va VALUES (5, 1, '{q}', '{7,8,9}'), (6, 3, NULL, '{}')",
    "UPDATE va SET a = '{z,z,z}', n = NULL WHERE id = 1",
    "DELETE FROM va WHERE id IN (2, 3)",
]


def test_variadic_arrays_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "va", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)


def test_variadic_arrays_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "va", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
