"""quote_ident of keywords, to_number, div and the places of extract compared with PostgreSQL
15: the same statements on the same data, ad hoc and installed as materialized views kept
through inserts, updates and deletes (and read again after a restart), and PostgreSQL's
errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from changeflow.compute.functions.keywords import COLUMN_NAME, RESERVED, TYPE_FUNC_NAME

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres


def test_keywords_are_postgres_own(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url) as pg:
        rows = pg.execute("SELECT word, catcode FROM pg_get_keywords()").fetchall()
    theirs = {code: {w for w, c in rows if c == code} for code in "CTR"}
    assert theirs == {"C": COLUMN_NAME, "T": TYPE_FUNC_NAME, "R": RESERVED}


def test_quote_ident_of_every_keyword_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url) as pg:
        words = [w for (w,) in pg.execute("SELECT word FROM pg_get_keywords() ORDER BY 1")]
    words += ["plain_1", "Upper", "sp ace", "", 'q"t', "_x", "1a", "é"]
    create = "CREATE TABLE kw (id int NOT NULL, w text)"
    values = ", ".join(f"({i}, '{w}')" for i, w in enumerate(words))
    with beside_postgres(
        tmp_path / "home", postgres_url, "kw", create, f"INSERT INTO kw VALUES {values}"
    ) as (ours, pg):
        queries = ["SELECT id, quote_ident(w), format('%I', w) FROM kw"]
        changes = ["UPDATE kw SET w = upper(w) WHERE id % 3 = 0", "DELETE FROM kw WHERE id < 40"]
        maintained_as_postgres(ours, pg, queries, changes)
        sql = "SELECT quote_ident('select'), quote_ident('abort'), quote_ident('left')"
        assert outcome(ours, sql) == outcome(pg, sql)
