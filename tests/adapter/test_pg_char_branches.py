"""char(n) where PostgreSQL's result is bpchar without a length, each value keeping its own
blanks: CASE and COALESCE of char(n) beside a quoted literal or another width, UNION ALL of
char(n) columns of different n, and ``x::bpchar``; their comparisons, ``||``, ``length()``
and IN still ignore trailing blanks. Compared with PostgreSQL 15 ad hoc and in materialized
views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE cb (id int PRIMARY KEY, a char(4), b char(2), s text)",
    "INSERT INTO cb VALUES (1, 'ab', 'x', 'ab '), (2, NULL, 'y', NULL), (3, 'x', NULL, 'x'),"
    " (4, NULL, NULL, 'q  ')",
]
STATEMENTS = [
    "SELECT id, coalesce(a, 'zz'), coalesce(a, b), coalesce(b, a, 'none'),"
    " CASE WHEN id = 1 THEN a ELSE 'q ' END, CASE WHEN id < 3 THEN a ELSE b END,"
    " CASE WHEN id = 1 THEN a END, coalesce(a, NULL) FROM cb ORDER BY id",
    "SELECT id, coalesce(a, 'zz') = 'ab', coalesce(a, b) = 'x', coalesce(a, 'zz') || '|',"
    " length(coalesce(a, b)), upper(coalesce(a, 'zz')), coalesce(a, b) IN ('ab ', 'y'),"
    " octet_length(coalesce(a, 'zz')), coalesce(a, 'zz') LIKE '%  ',"
    " pg_typeof(coalesce(a, 'zz'))::text, coalesce(a, b)::text || '|' FROM cb ORDER BY id",
    "SELECT id, s::bpchar, s::bpchar = 'q', s::bpchar || '|', length(s::bpchar),"
    " a::bpchar, a::bpchar = b::bpchar, s::bpchar::char(1) FROM cb ORDER BY id",
    "SELECT a FROM cb UNION ALL SELECT b FROM cb",
    "SELECT x FROM (SELECT a AS x FROM cb UNION ALL SELECT b FROM cb) u WHERE x = 'x'",
    "SELECT id FROM cb WHERE coalesce(a, b) = 'y' ORDER BY id",
]
MAINTAINED = [
    "SELECT id, coalesce(a, 'zz') AS c, coalesce(a, b) AS d, coalesce(a, b) || '|' AS e,"
    " CASE WHEN id > 1 THEN a ELSE 'none' END AS f FROM cb",
    "SELECT a AS x FROM cb UNION ALL SELECT b FROM cb",
    "SELECT id FROM cb WHERE coalesce(a, 'zz') = 'zz'",
]
CHANGES = [
    "INSERT INTO cb VALUES (5, 'p', 'p', 'p')",
    "UPDATE cb SET a = 'zz' WHERE id = 2",
    "UPDATE cb SET b = NULL, a = NULL WHERE id = 1",
    "DELETE FROM cb WHERE id = 3",
]


def test_char_branches_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "cb", *SETUP) as (ours, pg):
        for sql in STATEMENTS:
            sort = "ORDER BY" not in sql
            assert outcome(ours, sql, sort=sort) == outcome(pg, sql, sort=sort), sql
        maintained_as_postgres(ours, pg, MAINTAINED, CHANGES)
