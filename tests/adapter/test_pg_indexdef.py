"""Indexes in the catalogs as PostgreSQL 15 shows them: pg_indexes.indexdef and
pg_get_indexdef (whole, pretty, and column by column) with operator classes, collations,
DESC and NULLS orders, USING hash, INCLUDE and WITH, and pg_index's and pg_class's columns
that say the same (indnatts, indnkeyatts, indoption, reloptions, relam)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    'CREATE TABLE ixd (a int, b text, c varchar(10), d numeric, "Odd" int)',
    "CREATE INDEX ixd1 ON ixd (a DESC)",
    "CREATE INDEX ixd2 ON ixd (a DESC NULLS LAST, b NULLS FIRST)",
    "CREATE INDEX ixd3 ON ixd (a ASC NULLS LAST, b DESC NULLS FIRST)",
    "CREATE INDEX ixd4 ON ixd USING hash (b)",
    "CREATE INDEX ixd5 ON ixd (a) INCLUDE (b, d)",
    "CREATE INDEX ixd6 ON ixd (a) WITH (fillfactor = 70)",
    "CREATE INDEX ixd7 ON ixd (c varchar_pattern_ops)",
    "CREATE INDEX ixd8 ON ixd (b text_pattern_ops)",
    'CREATE INDEX ixd9 ON ixd (b COLLATE "C")',
    "CREATE INDEX ixd10 ON ixd (b text_ops)",
    'CREATE INDEX ixd11 ON ixd ("Odd")',
    "CREATE UNIQUE INDEX ixd12 ON ixd (a, b) WITH (fillfactor=50, deduplicate_items=off)",
    "CREATE INDEX ixd13 ON ixd (c text_ops)",
    'CREATE INDEX ixd14 ON ixd (b COLLATE "default")',
    "CREATE INDEX ON ixd (a, d)",
    'CREATE INDEX ixd15 ON ixd USING btree (a) INCLUDE ("Odd") WITH (fillfactor=90)',
    'CREATE INDEX ixd17 ON ixd (b COLLATE pg_catalog."C" text_pattern_ops DESC)',
]
QUERIES = [
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'ixd' ORDER BY 1",
    "SELECT c.relname, pg_get_indexdef(c.oid), pg_get_indexdef(c.oid, 0, true), "
    "pg_get_indexdef(c.oid, 1, true), pg_get_indexdef(c.oid, 2, false), "
    "pg_get_indexdef(c.oid, 3, false), i.indnatts, i.indnkeyatts, i.indoption::text, "
    "c.reloptions::text, a.amname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
    "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'ixd'::regclass ORDER BY 1",
]


def test_index_definitions_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path, postgres_url, "ixd", *SETUP) as (ours, pg):
        for sql in QUERIES:
            assert outcome(ours, sql) == outcome(pg, sql), sql


def test_index_definitions_read_back_the_same(tmp_path: Path) -> None:
    """Each shown definition, run again on a table of the same columns (as a restore of
    pg_dump's output runs it), is shown the same."""
    import changeflow

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    for sql in SETUP:
        conn.execute(sql)
    conn.execute('CREATE TABLE ixe (a int, b text, c varchar(10), d numeric, "Odd" int)')
    shown = "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = '{}' ORDER BY 1"
    first = conn.execute(shown.format("ixd")).fetchall()
    for name, definition in first:
        again = definition.replace(f"INDEX {name} ON public.ixd", f"INDEX {name}_e ON public.ixe")
        conn.execute(again)
    expected = [
        (f"{name}_e", d.replace(f"INDEX {name} ON public.ixd", f"INDEX {name}_e ON public.ixe"))
        for name, d in first
    ]
    assert conn.execute(shown.format("ixe")).fetchall() == sorted(expected)
    conn.close()
