"""Escape strings (``E'…'``) in statement options, decoded as PostgreSQL 15 decodes them:
compared with what PostgreSQL gives for the same literal, and its errors for bad bytes."""

from __future__ import annotations

import psycopg
import pytest

from changeflow.adapter.sql.statements import unquote
from changeflow.errors import PlanError

pytestmark = pytest.mark.postgres

LITERALS = [
    r"E'café'",
    r"E'caf\u00e9 \U0001F600'",
    r"E'\xc3\xa9 \303\251'",
    r"E'é\tz\n\b\f\r'",
    r"E'\x41\101\7\q\\'",
    r"E'it''s \'quoted\''",
    r"e'ünïcödé ✓ 日本'",
    "'plain ''é'''",
]
REFUSED = [r"E'\xe9'", r"E'\377'", r"E'\0'"]


def test_escape_strings_decode_as_postgres(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        for literal in LITERALS:
            (want,) = pg.execute(f"SELECT {literal}").fetchone()
            assert unquote(literal) == want, literal
        for literal in REFUSED:
            with pytest.raises(psycopg.Error) as theirs:
                pg.execute(f"SELECT {literal}")
            with pytest.raises(PlanError) as ours:
                unquote(literal)
            assert ours.value.sqlstate == theirs.value.sqlstate, literal


def test_escape_strings_in_queries_as_postgres(tmp_path, postgres_url: str) -> None:
    """E'…' in queries, writes and views: the same values as PostgreSQL's (sqlglot's own
    decoding of them differs), its errors for bad bytes, and the other literals untouched."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from sqlhelp import beside_postgres, outcome, same_errors

    setup = (
        "CREATE TABLE esc (id int, s text)",
        r"INSERT INTO esc VALUES (1, E'a\tb'), (2, 'a\tb')",
    )
    queries = [
        "SELECT " + ", ".join(LITERALS),
        r"SELECT id FROM esc WHERE s = E'a\tb'",
        r"SELECT id, s || E'\'!' FROM esc ORDER BY id",
        r"SELECT 'E''x', $$E'\n'$$, E'-- not a comment' -- E'\q'",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "esc", *setup) as (ours, pg):
        for sql in queries:
            assert outcome(ours, sql) == outcome(pg, sql), sql
        same_errors(ours, pg, [f"SELECT {literal}" for literal in REFUSED])
        ours.execute(r"CREATE MATERIALIZED VIEW escv AS SELECT id FROM esc WHERE s = E'a\tb'")
        assert ours.execute("SELECT * FROM escv").fetchall() == [(1,)]
