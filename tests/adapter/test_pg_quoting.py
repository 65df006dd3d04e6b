"""Names that are keywords are quoted where changeflow writes SQL (SHOW CREATE, a renamed
relation's definition) and by the catalog's ``quote_ident``, as PostgreSQL 15 quotes them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres


def test_keywords_are_quoted_as_postgres_quotes_them(tmp_path: Path, postgres_url: str) -> None:
    setup = [
        'CREATE TABLE xq ("select" int, "Mixed" text, plain int, "user" int)',
        'ALTER TABLE xq RENAME TO "order"',
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "xq", *setup[:1]) as (ours, pg):
        for conn in (ours, pg):
            conn.execute(setup[1])
        try:
            for sql in [
                "SELECT quote_ident(c.relname) FROM pg_class c WHERE c.relname = 'order'",
                "SELECT quote_ident(a.attname) FROM pg_attribute a JOIN pg_class c"
                " ON a.attrelid = c.oid WHERE c.relname = 'order' AND a.attnum > 0"
                " ORDER BY a.attnum",
            ]:
                assert outcome(ours, sql) == outcome(pg, sql), sql
            ((_, create),) = ours.execute('SHOW CREATE TABLE "order"').fetchall()
            assert create.startswith('CREATE TABLE "order" ('), create
        finally:
            pg.execute('ALTER TABLE "order" RENAME TO xq')
    again = changeflow.connect(tmp_path / "again", host_seconds=0)
    try:
        again.execute(create)  # the shown statement reads back
        assert [d[0] for d in again.execute('SELECT * FROM "order"').description] == [
            "select",
            "Mixed",
            "plain",
            "user",
        ]
    finally:
        again.close()
