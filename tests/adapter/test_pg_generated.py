"""Generated columns (``GENERATED ALWAYS AS (…) STORED``) as PostgreSQL 15 has them: computed
on INSERT (VALUES, SELECT, DEFAULT), UPDATE, ON CONFLICT DO UPDATE and MERGE; values given
for them refused; their definitions checked (other columns, immutability, aggregates, other
generated columns, a DEFAULT beside); DROP and RENAME of the columns they read; the catalogs
psql reads. Rows and SQLSTATEs compared with PostgreSQL's, and a view kept through them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = (
    "CREATE TABLE gen (id int PRIMARY KEY, a int, b int GENERATED ALWAYS AS (a * 2) STORED, "
    "t text, u text GENERATED ALWAYS AS (upper(t) || '!') STORED, "
    "w numeric(6,1) GENERATED ALWAYS AS (a / 3.0) STORED)"
)
STATEMENTS = [
    "INSERT INTO gen (id, a, b) VALUES (1, 2, DEFAULT)",
    "INSERT INTO gen (id, a, t) VALUES (2, 5, 'abc'), (3, NULL, NULL)",
    "INSERT INTO gen VALUES (4, 7, DEFAULT, 'q') RETURNING *",
    "INSERT INTO gen (id, a, t) SELECT 10 + id, a + 1, t FROM gen",
    "UPDATE gen SET a = a + 100, b = DEFAULT WHERE id = 2 RETURNING *",
    "UPDATE gen SET t = 'new' WHERE id < 4 RETURNING id, u",
    "INSERT INTO gen (id, a, t) VALUES (2, 1, 'c') ON CONFLICT (id) DO UPDATE "
    "SET a = excluded.a + 1000 RETURNING *",
    "MERGE INTO gen g USING (VALUES (3, 9), (50, 5)) s(id, a) ON g.id = s.id WHEN MATCHED "
    "THEN UPDATE SET a = s.a WHEN NOT MATCHED THEN INSERT (id, a, t) VALUES (s.id, s.a, 'm')",
    "ALTER TABLE gen RENAME COLUMN t TO tt",
    "INSERT INTO gen (id, a, tt) VALUES (60, 6, 'r')",
    "ALTER TABLE gen ADD COLUMN z int",
    "INSERT INTO gen (id, a, tt, z) VALUES (61, 8, 's', 1)",
    "ALTER TABLE gen DROP COLUMN u",
    "SELECT * FROM gen ORDER BY id",
    "SELECT attname, attgenerated, atthasdef FROM pg_attribute "
    "WHERE attrelid = 'gen'::regclass AND attnum > 0 ORDER BY attnum",
    "SELECT column_name, column_default, is_generated, generation_expression"
    " FROM information_schema.columns "
    "WHERE table_name = 'gen' ORDER BY ordinal_position",
    "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d "
    "WHERE d.adrelid = 'gen'::regclass ORDER BY d.adnum",
]
REFUSED = [
    "INSERT INTO gen VALUES (100, 2, 3)",
    "INSERT INTO gen (id, b) SELECT 101, 4",
    "UPDATE gen SET b = 3",
    "INSERT INTO gen (id, a) VALUES (2, 1) ON CONFLICT (id) DO UPDATE SET b = 1",
    "MERGE INTO gen g USING (SELECT 1 AS id) s ON g.id = s.id WHEN MATCHED THEN UPDATE SET b = 1",
    "ALTER TABLE gen DROP COLUMN a",
    "CREATE TABLE gen_bad1 (a int, b int GENERATED ALWAYS AS (a * 2) STORED DEFAULT 5)",
    "CREATE TABLE gen_bad2 (a int, b int GENERATED ALWAYS AS (c * 2) STORED)",
    "CREATE TABLE gen_bad3 (a int, b int GENERATED ALWAYS AS (a) STORED, "
    "c int GENERATED ALWAYS AS (b + 1) STORED)",
    "CREATE TABLE gen_bad4 (a timestamptz, b timestamptz GENERATED ALWAYS AS (now()) STORED)",
    "CREATE TABLE gen_bad5 (a int, b int GENERATED ALWAYS AS (sum(a)) STORED)",
    "CREATE TABLE gen_bad6 (a int, b float8 GENERATED ALWAYS AS (random()) STORED)",
    "CREATE TABLE gen_bad7 (a int, b int GENERATED ALWAYS AS ((SELECT 1)) STORED)",
    "CREATE TABLE gen_bad8 (a int, b uuid GENERATED ALWAYS AS (gen_random_uuid()) STORED)",
]


def test_generated_columns_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "gen", CREATE) as (ours, pg):
        ours.execute("CREATE MATERIALIZED VIEW gen_b AS SELECT id, b FROM gen")
        for sql in STATEMENTS:  # (RETURNING's rows come in no set order)
            assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql
            if "gen_b" in sql or sql.startswith("ALTER"):
                continue
            kept = outcome(ours, "SELECT * FROM gen_b ORDER BY id")
            assert kept == outcome(pg, "SELECT id, b FROM gen ORDER BY id"), sql
        same_errors(ours, pg, REFUSED)


def test_adding_a_generated_column_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """ADD COLUMN … GENERATED ALWAYS AS (…) STORED computes each row's value (in a
    transaction block too), and later writes compute it as CREATE TABLE's column does."""
    setup = [
        "CREATE TABLE gen_add (id int, a int, s text)",
        "INSERT INTO gen_add VALUES (1, 10, 'x'), (2, NULL, 'yy'), (3, 5, NULL), (3, 5, NULL)",
    ]
    statements = [
        "ALTER TABLE gen_add ADD COLUMN b int GENERATED ALWAYS AS (a * 2) STORED",
        "SELECT * FROM gen_add ORDER BY id",
        "INSERT INTO gen_add (id, a) VALUES (4, 7)",
        "UPDATE gen_add SET a = 100 WHERE id = 1",
        "ALTER TABLE gen_add ADD COLUMN short varchar(3) GENERATED ALWAYS AS (s || '!!') STORED",
        "ALTER TABLE gen_add ADD COLUMN l numeric(5,1) GENERATED ALWAYS AS (length(s) / 3.0)"
        " STORED",
        "ALTER TABLE gen_add ADD COLUMN bad int GENERATED ALWAYS AS (b + 1) STORED",
        "ALTER TABLE gen_add ADD COLUMN bad float8 GENERATED ALWAYS AS (random()) STORED",
        "ALTER TABLE gen_add ADD COLUMN bad int DEFAULT 1 GENERATED ALWAYS AS (a) STORED",
        "INSERT INTO gen_add (id, b) VALUES (9, 1)",
        "SELECT * FROM gen_add ORDER BY id",
        "BEGIN",
        "ALTER TABLE gen_add ADD COLUMN c numeric(6,2) GENERATED ALWAYS AS (a / 4.0) STORED",
        "SELECT id, c FROM gen_add ORDER BY id",
        "ROLLBACK",
        "SELECT attname, attgenerated FROM pg_attribute WHERE attrelid = 'gen_add'::regclass"
        " AND attnum > 0 ORDER BY attnum",
        "SELECT column_name, is_generated, generation_expression FROM information_schema.columns"
        " WHERE table_name = 'gen_add' ORDER BY ordinal_position",
    ]
    with beside_postgres(tmp_path / "home", postgres_url, "gen_add", *setup) as (ours, pg):
        for sql in statements:
            assert outcome(ours, sql) == outcome(pg, sql), sql
