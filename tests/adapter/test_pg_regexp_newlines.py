"""Regular expressions over text with newlines, as PostgreSQL 15 reads them by default:
``.`` and a negated bracket match a newline (``~``, ``~*``, ``regexp_match``,
``regexp_replace``, ``regexp_split_to_array``, ``substring … FROM``, ``SIMILAR TO``), and
under the flags that change it (``n``/``m``, ``p``, ``w``) and ``x``, ``q``; regexp_replace
from a start and of the n-th match; ad hoc and in views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE rn (id int PRIMARY KEY, s text)",
    "INSERT INTO rn VALUES (1, E'first\\nsecond'), (2, 'one line'), (3, E'a\\nb\\nc'),"
    " (4, NULL), (5, E'\\n')",
]
AD_HOC = [
    "SELECT E'a\\nb' ~ 'a.b', E'A\\nB' ~* 'a.b', E'a\\nb' ~ 'a[^x]b', E'a\\nb' !~ '^a.*b$'",
    "SELECT id, s ~ 't.s', regexp_match(s, '(.+)')::text, regexp_replace(s, '.', '-', 'g')"
    " FROM rn ORDER BY id",
    "SELECT id, regexp_replace(s, 't.s', '<\\&>'), regexp_split_to_array(s, 'd.')::text,"
    " substring(s FROM 'st.se') FROM rn ORDER BY id",
    "SELECT E'x\\ny' SIMILAR TO 'x_y', E'x\\ny' SIMILAR TO 'x%', regexp_replace(E'a\\nb',"
    " 'A.B', 'X', 'i')",
    "SELECT id, regexp_replace(s, '^.', '<\\&>', 'ng'), regexp_replace(s, 'a.b', '+', 'n'),"
    " regexp_like(s, 'a[^x]b', 'p'), regexp_replace(s, '^.', '-', 'wg'),"
    " regexp_match(s, 't . s', 'x')::text, regexp_like(s, '.', 'q') FROM rn ORDER BY id",
    "SELECT regexp_replace('A PostgreSQL function', 'A|e|i|o|u', 'X', 1),"
    " regexp_replace('A PostgreSQL function', 'a|e|i|o|u', 'X', 1, 2),"
    " regexp_replace('A PostgreSQL function', 'a|e|i|o|u', 'X', 1, 0, 'i'),"
    " regexp_replace('A PostgreSQL function', 'a|e|i|o|u', 'X', 1, 3, 'ig'),"
    " regexp_replace('A PostgreSQL function', 'a|e|i|o|u', 'X', 10, 0),"
    " regexp_replace('abcabc', 'b', 'X', 3, 1, 'g'), regexp_replace('abc', 'b', 'X', 9)",
]
ERRORS = [
    "SELECT regexp_replace('abc', 'b', 'X', 0)",
    "SELECT regexp_replace('abc', 'b', 'X', 1, -1)",
    "SELECT regexp_like('ab', 'a', 'z')",
]
QUERIES = [
    "SELECT id, s ~ 't.s' AS m, regexp_replace(s, 'a.b', '+', 'g') AS r FROM rn",
    "SELECT id, regexp_replace(s, '^.', '+', 'ng') AS r, regexp_replace(s, 'a|s', '_', 2, 2) AS n"
    " FROM rn",
]
CHANGES = [
    "INSERT INTO rn VALUES (6, E'a\\nbxa\\nb'), (7, 'tas')",
    "UPDATE rn SET s = E'lost\\nsoul' WHERE id = 2",
    "DELETE FROM rn WHERE id IN (1, 5)",
]


def test_regexp_over_newlines_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rn", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        same_errors(ours, pg, ERRORS)


def test_regexp_over_newlines_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rn", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
