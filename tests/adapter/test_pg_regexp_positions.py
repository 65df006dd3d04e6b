"""``regexp_count``, ``regexp_instr`` and ``regexp_substr`` (every form: start, n, end
option, flags, group) and their refusals (22023), here and on PostgreSQL 15, ad hoc and in
views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE rp (id int PRIMARY KEY, s text, p text, k int)",
    "INSERT INTO rp VALUES (1, 'banana bandana', 'an', 1), (2, 'Xyz xyZ', 'x(y)(z)', 2),"
    " (3, '', 'a*', 1), (4, NULL, 'a', 1), (5, 'aaa', NULL, 3), (6, 'a-b-c-d', '[a-z]', 4)",
]
AD_HOC = [
    "SELECT regexp_count('abcabcab', 'ab'), regexp_count('abcabcab', 'ab', 3),"
    " regexp_count('ABab', 'ab', 1, 'i'), regexp_count('aaaa', 'aa'), regexp_count('', 'x*')",
    "SELECT regexp_instr('abcabc', 'b'), regexp_instr('abcabc', 'b', 3),"
    " regexp_instr('abcabc', 'b', 1, 2), regexp_instr('abcabc', 'b', 1, 2, 1),"
    " regexp_instr('abcABC', 'B', 1, 2, 0, 'i'), regexp_instr('abcabc', 'x')",
    "SELECT regexp_instr('k12-34', '([0-9]+)-([0-9]+)', 1, 1, 0, '', 2),"
    " regexp_instr('k12-34', '([0-9]+)-([0-9]+)', 1, 1, 1, '', 1),"
    " regexp_instr('k12', '([0-9]+)(x)?', 1, 1, 0, '', 2),"
    " regexp_instr('k12', '([0-9]+)', 1, 1, 0, '', 3)",
    "SELECT regexp_substr('abcabc', 'b.'), regexp_substr('abcabc', 'b.', 3),"
    " regexp_substr('abcABC', 'B.', 1, 2, 'i'), regexp_substr('k12-34', '([0-9]+)-([0-9]+)',"
    " 1, 1, '', 2), regexp_substr('abc', 'x') IS NULL, regexp_substr('k1', '(k)(x)?', 1, 1,"
    " '', 2) IS NULL",
    "SELECT id, regexp_count(s, p), regexp_instr(s, p, k), regexp_substr(s, p, 1, k)"
    " FROM rp ORDER BY id",
]
ERRORS = [
    "SELECT regexp_count('abc', 'b', 0)",
    "SELECT regexp_count('abc', 'b', 1, 'g')",
    "SELECT regexp_instr('abc', 'b', 1, 0)",
    "SELECT regexp_instr('abc', 'b', 1, 1, 2)",
    "SELECT regexp_instr('abc', 'b', 1, 1, 0, '', -1)",
    "SELECT regexp_substr('abc', 'b', -1)",
    "SELECT regexp_substr('abc', 'b', 1, 1, 'g')",
    "SELECT regexp_substr('abc', 'b', 1, 1, 'z')",
    "SELECT regexp_count('abc', '(')",
]
QUERIES = [
    "SELECT id, regexp_count(s, p) AS c, regexp_instr(s, p, 1, k, 1) AS i,"
    " regexp_substr(s, p, 1, k) AS t FROM rp",
]
CHANGES = [
    "INSERT INTO rp VALUES (7, 'xyxyxy', 'x(y)', 2), (8, 'none', 'q', 1)",
    "UPDATE rp SET k = 2 WHERE id = 1",
    "DELETE FROM rp WHERE id IN (2, 3)",
]


def test_regexp_positions_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rp", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        same_errors(ours, pg, ERRORS)


def test_regexp_positions_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rp", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
