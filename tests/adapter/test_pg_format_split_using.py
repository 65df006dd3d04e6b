"""``format`` widths (``%-s``, ``%*s``, ``%*n$s``, a negative or NULL width),
``regexp_split_to_array``/``_table`` with patterns that can match nothing (no empty match at
the start or right after another match), and ``ORDER BY x USING <`` / ``USING >``: here and
on PostgreSQL 15, ad hoc and in views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE fs (id int PRIMARY KEY, w int, s text, g int)",
    "INSERT INTO fs VALUES (1, 6, 'ab  cd', 1), (2, -4, 'x', 1), (3, NULL, NULL, 2),"
    " (4, 0, ' lead and trail ', 2), (5, 2, 'aaa', NULL)",
]
FORMAT = [
    "SELECT format('[%-s]', 'v'), format('[%-8s]', 'v'), format('[%8s]', 'v')",
    "SELECT format('[%*s]', 5, 'v'), format('[%*s]', -5, 'v'), format('[%*s]', NULL, 'v')",
    "SELECT format('[%2$*1$s]', 4, 'v'), format('[%*2$s]', 'v', 3), format('[%-*s]', 4, 'v')",
    "SELECT format('[%1$*2$L|%s]', 'v', 6), format('[%*L]', 3, NULL), format('%s %1$s %s', 1, 2)",
    "SELECT format('%*s', 'x', 'v')",
    "SELECT format('%*s', 5)",
    "SELECT format('%0$s', 'v')",
    "SELECT format('%*s', 9999999999, 'v')",
    "SELECT id, format('[%*s|%-*s]', w, s, w, s) FROM fs ORDER BY id",
]
SPLIT = [
    "SELECT regexp_split_to_array('ab  cd e', '\\s*')::text,"
    " regexp_split_to_array('abc', '')::text, regexp_split_to_array('a,b,,c', ',*')::text",
    "SELECT regexp_split_to_array('abc', 'x*')::text, regexp_split_to_array('bab', 'b*')::text,"
    " regexp_split_to_array('', 'a*')::text, regexp_split_to_array('xyz', '.')::text",
    "SELECT part, length(part) FROM regexp_split_to_table('a  bc', ' *') AS part",
    "SELECT id, regexp_split_to_array(s, ' *')::text FROM fs ORDER BY id",
    "SELECT v, v IS NULL FROM string_to_table('1|2||3', '|') g(v) ORDER BY v",
    "SELECT * FROM string_to_table('abc', NULL) AS x ORDER BY x",
    "SELECT string_to_table('a b c', ' ', 'b') AS p ORDER BY p",
    "SELECT id, string_to_table(s, ' ') AS p FROM fs ORDER BY id, p",
]
USING = [
    "SELECT id, w FROM fs ORDER BY w USING >, id",
    "SELECT id, w FROM fs ORDER BY w USING < NULLS FIRST, id USING >",
    "SELECT id, w FROM fs ORDER BY w USING > NULLS LAST, id",
    "SELECT DISTINCT ON (g) g, id FROM fs ORDER BY g USING >, id USING >",
    "SELECT string_agg(s, ',' ORDER BY s USING >) FROM fs",
    "SELECT g, array_agg(id ORDER BY id USING >)::text FROM fs GROUP BY g ORDER BY g USING <",
]
QUERIES = [
    "SELECT id, format('[%*s]', w, s) AS f, format('%-*s|', w, id) AS l FROM fs",
    "SELECT id, regexp_split_to_array(s, ' *')::text AS parts FROM fs",
    "SELECT g, string_agg(s, ',' ORDER BY s USING >) AS agg FROM fs GROUP BY g",
]
CHANGES = [
    "INSERT INTO fs VALUES (6, 3, 'q r', 1), (7, -2, '', 3)",
    "UPDATE fs SET w = -1, s = 'z  z' WHERE id = 1",
    "DELETE FROM fs WHERE id IN (2, 5)",
]


def test_format_widths_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fs", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, FORMAT)


def test_split_on_empty_matches_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fs", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, SPLIT)


def test_order_by_using_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fs", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, USING)


def test_format_split_using_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "fs", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
