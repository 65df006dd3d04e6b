"""Text types without a length and casts with a type modifier, compared with PostgreSQL 15:
``bpchar`` alone compares, concatenates and measures as char (trailing blanks ignored),
``varchar`` alone is text, ``pg_typeof`` names char(n) ``character`` and varchar
``character varying``, casts to numeric(p,s), varchar(n) and char(n) fit their values;
ad hoc, in materialized views kept through changes, and char(n) padded in SUBSCRIBE's rows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE cc (id int PRIMARY KEY, a char(4), v varchar(6), s text, n numeric)",
    "INSERT INTO cc VALUES (1, 'ab', 'ab', 'ab  ', 1.005), (2, NULL, 'x ', 'x', NULL),"
    " (3, 'abcd', 'abcd', 'abcdefg', 123.456)",
]
STATEMENTS = [
    "SELECT 'ab '::bpchar = 'ab', 'ab'::bpchar = 'ab  ', 'ab '::bpchar || '|',"
    " length('ab  '::bpchar), 'a '::bpchar < 'a'::bpchar, pg_typeof('x'::bpchar)::text",
    "SELECT id, s::bpchar = 'ab', s::bpchar || '|', length(s::bpchar), s::varchar || '|',"
    " s::bpchar = a FROM cc ORDER BY id",
    "SELECT id, pg_typeof(a)::text, pg_typeof(v)::text, pg_typeof(s)::text,"
    " pg_typeof(a::varchar(2))::text, pg_typeof(s::char(2))::text, pg_typeof(a || 'x')::text"
    " FROM cc ORDER BY id",
    "SELECT id, n::numeric(10,2), n::numeric(4,1), s::varchar(3), s::char(3), v::char(2)"
    " FROM cc ORDER BY id",
]
MAINTAINED = [
    "SELECT id, s::bpchar = 'ab' AS e, s::bpchar || '|' AS t, pg_typeof(a)::text AS k FROM cc",
    "SELECT id, n::numeric(10,2) AS m, s::varchar(3) AS w, s::char(3) AS c FROM cc",
]
CHANGES = [
    "INSERT INTO cc VALUES (4, 'q', 'q', 'ab', 9.999)",
    "UPDATE cc SET s = 'zz   ', n = 0.5 WHERE id = 1",
    "DELETE FROM cc WHERE id = 2",
]


def test_unsized_text_and_casts_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "cc", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
        maintained_as_postgres(ours, pg, MAINTAINED, CHANGES)


def test_subscribe_shows_char_padded(tmp_path: Path, postgres_url: str) -> None:
    """SUBSCRIBE's rows show char(n) values padded to n, as PostgreSQL's SELECT does."""
    with beside_postgres(tmp_path / "home", postgres_url, "cc", *SETUP) as (ours, pg):
        ours.execute("CREATE MATERIALIZED VIEW ccm AS SELECT id, a, s::char(6) AS c FROM cc")
        sub = ours.subscribe("ccm")
        got = sub.poll(30)
        expected = pg.execute("SELECT id, a, s::char(6) AS c FROM cc").fetchall()
        assert sorted(got_row[2:] for got_row in got) == sorted(expected)
        assert {r[1] for r in got} == {1}
        for conn in (ours, pg):
            conn.execute("UPDATE cc SET a = 'z' WHERE id = 1")
        changed: list[tuple] = []
        while len(changed) < 2:
            changed += sub.poll(30)
        row = pg.execute("SELECT id, a, s::char(6) FROM cc WHERE id = 1").fetchone()
        assert (1, *row) in [(r[1], *r[2:]) for r in changed]
