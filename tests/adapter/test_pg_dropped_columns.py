"""After DROP COLUMN, the other columns keep their numbers (pg_attribute's ``attnum``, a
dropped column's row with ``attisdropped``, an added column after the last number used), as
PostgreSQL 15 keeps them: pg_attribute, information_schema.columns, col_description, a key's
conkey and an index's indkey name the same numbers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE xd (a int, b text, c int NOT NULL, d text, PRIMARY KEY (c))",
    "CREATE INDEX xd_d ON xd (d)",
    "COMMENT ON COLUMN xd.c IS 'the key'",
    "COMMENT ON COLUMN xd.d IS 'the text'",
]
CHANGES = [
    "ALTER TABLE xd DROP COLUMN b",
    "ALTER TABLE xd ADD COLUMN e int",
    "ALTER TABLE xd DROP COLUMN e",
]
QUERIES = [
    "SELECT a.attname, a.attnum, a.attisdropped FROM pg_attribute a JOIN pg_class c"
    " ON a.attrelid = c.oid WHERE c.relname = 'xd' AND a.attnum > 0 AND NOT a.attisdropped"
    " ORDER BY a.attnum",
    "SELECT a.attnum, a.attisdropped FROM pg_attribute a JOIN pg_class c"
    " ON a.attrelid = c.oid WHERE c.relname = 'xd' AND a.attnum > 0 ORDER BY a.attnum",
    "SELECT column_name, ordinal_position FROM information_schema.columns"
    " WHERE table_name = 'xd' ORDER BY ordinal_position",
    "SELECT col_description(c.oid, 3), col_description(c.oid, 4), col_description(c.oid, 2)"
    " FROM pg_class c WHERE c.relname = 'xd'",
    "SELECT k.conkey::text FROM pg_constraint k JOIN pg_class c ON k.conrelid = c.oid"
    " WHERE c.relname = 'xd'",
    "SELECT i.indkey::text FROM pg_index i JOIN pg_class c ON i.indexrelid = c.oid"
    " WHERE c.relname = 'xd_d'",
]


def test_dropped_columns_keep_numbers_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "xd", *SETUP) as (ours, pg):
        for change in [None, *CHANGES]:
            if change is not None:
                for conn in (ours, pg):
                    conn.execute(change)
            for sql in QUERIES:
                assert outcome(ours, sql) == outcome(pg, sql), (change, sql)
