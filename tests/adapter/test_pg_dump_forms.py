"""The DDL forms pg_dump, Django and Alembic write, statement by statement against
PostgreSQL 15: ALTER … OWNER TO, ALTER SEQUENCE … OWNED BY, NOT DEFERRABLE, CREATE INDEX
with operator classes and orderings, schema-qualified session functions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

TABLES = "df_child, df_parent, df_other"
SETUP = [
    "CREATE TABLE df_parent (id int PRIMARY KEY, name varchar(20), note text)",
    "CREATE TABLE df_other (id int)",
]
STATEMENTS = [
    "CREATE TABLE df_child (id int, p int REFERENCES df_parent NOT DEFERRABLE)",
    "DROP TABLE df_child",
    "CREATE TABLE df_child (id int, p int REFERENCES df_parent NOT DEFERRABLE INITIALLY DEFERRED)",
    "CREATE TABLE df_child (id int, p int, FOREIGN KEY (p) REFERENCES df_parent "
    "NOT DEFERRABLE INITIALLY IMMEDIATE)",
    "SELECT conname, condeferrable, condeferred FROM pg_constraint WHERE conname LIKE 'df_%' "
    "ORDER BY 1",
    "ALTER TABLE df_parent OWNER TO CURRENT_USER",
    "ALTER TABLE df_parent OWNER TO df_nobody",
    "ALTER TABLE IF EXISTS df_nothing OWNER TO CURRENT_USER",
    "ALTER TABLE df_nothing OWNER TO CURRENT_USER",
    "CREATE SEQUENCE df_seq AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1",
    "ALTER SEQUENCE df_seq OWNER TO CURRENT_USER",
    "ALTER SEQUENCE df_seq OWNED BY df_parent.nope",
    "ALTER SEQUENCE df_seq OWNED BY df_nothing.id",
    "ALTER SEQUENCE df_seq OWNED BY df_other.id",
    "ALTER TABLE ONLY df_other ALTER COLUMN id SET DEFAULT nextval('df_seq'::regclass)",
    "INSERT INTO df_other DEFAULT VALUES",
    "SELECT pg_catalog.setval('df_seq', 41, true)",
    "INSERT INTO df_other DEFAULT VALUES",
    "SELECT * FROM df_other ORDER BY id",
    "SELECT pg_get_serial_sequence('df_other', 'id')",
    "ALTER SEQUENCE df_seq OWNED BY NONE",
    "SELECT pg_get_serial_sequence('df_other', 'id')",
    "CREATE INDEX df_parent_name_like ON df_parent (name varchar_pattern_ops)",
    "CREATE INDEX df_parent_note ON ONLY public.df_parent USING btree "
    '(note COLLATE "C" DESC NULLS LAST, id)',
    "CREATE INDEX ON df_parent (note)",
    "CREATE INDEX ON df_parent (note)",
    "CREATE UNIQUE INDEX ON df_parent (name)",
    "SELECT indexname FROM pg_indexes WHERE tablename = 'df_parent' ORDER BY 1",
    "INSERT INTO df_parent VALUES (1, 'a', 'x'), (2, 'b', 'x')",
    "SELECT id FROM df_parent WHERE note = 'x' AND name = 'b'",
    "SELECT pg_catalog.set_config('search_path', '', false)",
    "SELECT count(*) FROM public.df_parent",
    "SELECT pg_catalog.set_config('search_path', 'public', false)",
]


def test_dump_forms_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, TABLES, *SETUP) as (ours, pg):
        try:
            same_outcomes(ours, pg, STATEMENTS)
        finally:
            pg.execute("DROP SEQUENCE IF EXISTS df_seq CASCADE")
