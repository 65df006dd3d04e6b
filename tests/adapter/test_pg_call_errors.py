"""Calls PostgreSQL 15 refuses, refused here with its SQLSTATE: a function called with no
arguments or too many (42883, a grammar construct's 42601), ``position`` written with commas
(42601), an array function or to_jsonb given only a bare NULL where it takes any array or
element (42804: no type to infer), and calls that answer as PostgreSQL's do beside them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_errors, unordered  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE ce (id int, s text, a int[])"
INSERT = "INSERT INTO ce VALUES (1, 'abc', '{1,2}'), (2, NULL, NULL)"


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "ce", CREATE, INSERT) as pair:
        yield pair


ARITY = [
    "SELECT concat()",
    "SELECT concat_ws()",
    "SELECT concat(upper(s), concat()) FROM ce",
    "SELECT upper()",
    "SELECT length()",
    "SELECT md5()",
    "SELECT strpos()",
    "SELECT strpos('a', 'b', 'c')",
    "SELECT substring()",
    "SELECT array_length()",
    "SELECT sum() FROM ce",
    "SELECT count() FROM ce",
    "SELECT coalesce()",
    "SELECT greatest()",
    "SELECT nullif()",
    "SELECT position()",
    "SELECT position('a')",
    "SELECT position('a', 'b')",
    "SELECT position('a', 'b', 'c')",
    "SELECT position(s, 'b', 1) FROM ce",
    "SELECT initcap()",
    "SELECT mod()",
    "SELECT mod(id) FROM ce",
    "SELECT now(1)",
    "SELECT now(NULL)",
]
UNDETERMINED = [
    "SELECT array_length(NULL, 1)",
    "SELECT cardinality(NULL)",
    "SELECT array_upper(NULL, 1), id FROM ce",
    "SELECT array_lower(NULL, 1)",
    "SELECT array_to_string(NULL, ',')",
    "SELECT to_jsonb(NULL)",
    "SELECT id FROM ce WHERE cardinality(NULL) > 0",
    "SELECT cardinality('{1,2}')",
    "SELECT to_jsonb('a')",
]
# a NULL or quoted literal where PostgreSQL has several candidates and prefers none (42725),
# and a quoted name compared with pg_typeof's regtype, read as an oid (22P02)
NOT_UNIQUE = [
    "SELECT unnest(NULL)",
    "SELECT * FROM unnest(NULL)",
    "SELECT unnest('{1}')",
    "SELECT array_agg(NULL)",
    "SELECT array_agg('a') FROM ce",
    "SELECT sum(NULL) FROM ce",
    "SELECT avg('1')",
    "SELECT age('2020-01-01')",
    "SELECT age(NULL)",
    "SELECT id FROM ce WHERE pg_typeof(id) = 'integer'",
    "SELECT pg_typeof(s) <> 'text' FROM ce",
]
ANSWERED = [
    "SELECT array_append(NULL, NULL), array_prepend(NULL, NULL), array_cat(NULL, NULL),"
    " array_remove(NULL, NULL), array_append(NULL, 1), array_cat(NULL, a) FROM ce",
    "SELECT array_length(NULL::int[], 1), cardinality(a), to_jsonb(NULL::text), to_jsonb(s)::text,"
    " array_to_string(a, ',') FROM ce",
    "SELECT concat(s), concat(NULL), concat(s, id), position('b' IN s), strpos(s, 'c') FROM ce",
    "SELECT position('b' IN s) + 1, position(s IN 'xabc') FROM ce",
    "SELECT jsonb_build_array()::text, jsonb_build_object()::text",
    "SELECT pg_catalog.pg_typeof(id)::text, pg_catalog.upper(s), pg_catalog.pg_typeof(1.5)::text"
    " FROM ce",
    "SELECT pg_catalog.pg_typeof(1)::text, mod(7, 3), current_timestamp(1) IS NOT NULL",
    "SELECT id, pg_typeof(id) = '23', pg_typeof(s) IN ('text', 'integer') FROM ce",
    "SELECT age('2020-01-01', '2019-01-01')::text, age(date '2020-01-01') IS NOT NULL",
]


def test_calls_of_the_wrong_arity_as_postgres(both) -> None:
    same_errors(*both, ARITY)


def test_polymorphic_calls_of_a_bare_null_as_postgres(both) -> None:
    same_errors(*both, UNDETERMINED)


def test_calls_postgres_finds_ambiguous_as_postgres(both) -> None:
    same_errors(*both, NOT_UNIQUE)


def test_calls_beside_them_as_postgres(both) -> None:
    ours, pg = both
    for sql in ANSWERED:
        assert unordered(ours, sql) == unordered(pg, sql), sql
