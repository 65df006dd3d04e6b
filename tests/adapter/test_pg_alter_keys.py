"""ALTER TABLE … ADD PRIMARY KEY / UNIQUE and ALTER COLUMN … SET/DROP NOT NULL, SET/DROP DEFAULT
as PostgreSQL 15 has them: the rows checked (23502, 23505), keys named by its rules, enforced
on later writes and ON CONFLICT, and listed in its catalogs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

CATALOG = [
    "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = 'ak'::regclass ORDER BY 1",
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'ak' ORDER BY 1",
    "SELECT column_name, is_nullable, column_default FROM information_schema.columns "
    "WHERE table_name = 'ak' ORDER BY ordinal_position",
]
STATEMENTS = [
    "INSERT INTO ak VALUES (1, 1, 'a'), (2, 1, NULL), (NULL, 3, 'c')",
    "ALTER TABLE ak ADD PRIMARY KEY (id)",
    "DELETE FROM ak WHERE id IS NULL",
    "ALTER TABLE ak ADD UNIQUE (x)",
    "ALTER TABLE ak ADD PRIMARY KEY (nope)",
    "ALTER TABLE ak ADD PRIMARY KEY (id)",
    "ALTER TABLE ak ADD PRIMARY KEY (x)",
    "ALTER TABLE ak ADD CONSTRAINT other_pk PRIMARY KEY (x)",
    "INSERT INTO ak VALUES (1, 5, 'z')",
    "INSERT INTO ak VALUES (NULL, 5, 'z')",
    "ALTER TABLE ak ADD CONSTRAINT ak_s UNIQUE (s)",
    "INSERT INTO ak VALUES (3, 9, 'a')",
    "ALTER TABLE ak ADD UNIQUE (s)",
    "ALTER TABLE ak ADD UNIQUE (s)",
    "ALTER TABLE ak ADD CONSTRAINT ak_s UNIQUE (x, s)",
    "ALTER TABLE ak ADD CONSTRAINT ak_pos CHECK (x > 0)",
    "ALTER TABLE ak ADD CONSTRAINT ak_pos UNIQUE (x, s)",
    "ALTER TABLE ak ADD CONSTRAINT ak_xs UNIQUE (x, s)",
    "INSERT INTO ak VALUES (7, 8, 'a') ON CONFLICT (s) DO NOTHING",
    "INSERT INTO ak VALUES (7, 8, 'a') ON CONFLICT (s) DO UPDATE SET x = 40",
    *CATALOG,
    "ALTER TABLE ak ALTER COLUMN x SET NOT NULL",
    "ALTER TABLE ak ALTER s SET NOT NULL",
    "ALTER TABLE ak ALTER COLUMN id DROP NOT NULL",
    "ALTER TABLE ak ALTER COLUMN nope SET NOT NULL",
    "INSERT INTO ak VALUES (4, NULL, 'q')",
    "ALTER TABLE ak ALTER COLUMN x DROP NOT NULL",
    "ALTER TABLE ak ALTER COLUMN x DROP NOT NULL",
    "INSERT INTO ak VALUES (4, NULL, 'q')",
    "ALTER TABLE ak ALTER COLUMN s SET DEFAULT 'df' || 'lt'",
    "INSERT INTO ak (id, x) VALUES (5, 6)",
    "ALTER TABLE ak ALTER COLUMN x SET DEFAULT 'abc'",
    "ALTER TABLE ak ALTER COLUMN x SET DEFAULT 2.6",
    "ALTER TABLE ak ALTER COLUMN s DROP DEFAULT",
    "INSERT INTO ak (id) VALUES (6)",
    *CATALOG,
    "ALTER TABLE ak DROP CONSTRAINT ak_pkey",
    "INSERT INTO ak VALUES (1, 10, 'w')",
    "INSERT INTO ak VALUES (NULL, 10, 'v')",
    "ALTER TABLE ak ADD COLUMN k serial UNIQUE",
    "ALTER TABLE ak ADD COLUMN k2 int UNIQUE",
    "ALTER TABLE ak ADD COLUMN k3 int PRIMARY KEY",
    "ALTER TABLE ak ADD COLUMN k4 serial PRIMARY KEY",
    "INSERT INTO ak (id, x, s, k2) VALUES (8, 8, 'e', 1), (9, 9, 'f', 1)",
    "SELECT * FROM ak ORDER BY id, x",
    *CATALOG,
]


def test_alter_keys_and_columns_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    create = "CREATE TABLE ak (id int, x int, s text)"
    with beside_postgres(tmp_path / "home", postgres_url, "ak", create) as (ours, pg):
        for sql in STATEMENTS:
            assert outcome(ours, sql) == outcome(pg, sql), sql


def test_keys_added_hold_in_views_and_after_restart(tmp_path: Path) -> None:
    """A view over the table stays exact through SET NOT NULL and ADD PRIMARY KEY; DROP NOT
    NULL under it is refused (its output was planned NOT NULL); the keys hold after a
    restart."""
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    home = tmp_path / "home"
    with changeflow.connect(home, host_seconds=0) as c:
        c.autocommit = True
        c.execute("CREATE TABLE kv (a int, b text)")
        c.execute("INSERT INTO kv VALUES (1, 'x'), (2, 'y')")
        c.execute("CREATE MATERIALIZED VIEW kv_v AS SELECT a, upper(b) AS b FROM kv")
        c.execute("ALTER TABLE kv ALTER COLUMN a SET NOT NULL")
        c.execute("ALTER TABLE kv ADD CONSTRAINT kv_b UNIQUE (b)")
        c.execute("INSERT INTO kv VALUES (3, 'z')")
        with pytest.raises(DatabaseError) as refused:
            c.execute("ALTER TABLE kv ALTER COLUMN a DROP NOT NULL")
        assert refused.value.sqlstate == "0A000"
        assert c.execute("SELECT * FROM kv_v ORDER BY a").fetchall() == [
            (1, "X"),
            (2, "Y"),
            (3, "Z"),
        ]
    with changeflow.connect(home, host_seconds=0) as c:
        c.autocommit = True
        for sql, state in [
            ("INSERT INTO kv VALUES (NULL, 'w')", "23502"),
            ("INSERT INTO kv VALUES (4, 'x')", "23505"),
        ]:
            with pytest.raises(DatabaseError) as failed:
                c.execute(sql)
            assert failed.value.sqlstate == state, sql
        c.execute("INSERT INTO kv VALUES (4, 'w')")
        assert c.execute("SELECT count(*) FROM kv_v").fetchall() == [(4,)]


MIGRATION = [  # as an ORM's migration runs: one transaction
    "BEGIN",
    "CREATE TABLE am_p (id int NOT NULL)",
    "ALTER TABLE am_p ADD CONSTRAINT am_p_pkey PRIMARY KEY (id)",
    "CREATE TABLE am_c (id int, p_id int, name varchar(10))",
    "ALTER TABLE am_c ADD COLUMN flag boolean DEFAULT false NOT NULL",
    "ALTER TABLE am_c ALTER COLUMN flag DROP DEFAULT",
    "ALTER TABLE am_c ADD CONSTRAINT am_c_p_id_fk FOREIGN KEY (p_id) REFERENCES am_p (id) "
    "DEFERRABLE INITIALLY DEFERRED",
    "CREATE INDEX am_c_p_id ON am_c (p_id)",
    "COMMIT",
    "BEGIN",
    "ALTER TABLE am_c ADD CONSTRAINT am_c_name UNIQUE (name)",
    "ALTER TABLE am_c ALTER COLUMN name SET NOT NULL",
    "ALTER TABLE am_c ALTER COLUMN name SET DEFAULT 'n'",
    "ALTER TABLE am_c DROP CONSTRAINT am_c_p_id_fk",
    "ROLLBACK",
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = 'am_c'::regclass ORDER BY 1",
    "SELECT column_name, is_nullable, column_default FROM information_schema.columns "
    "WHERE table_name = 'am_c' ORDER BY ordinal_position",
    "BEGIN",
    "INSERT INTO am_p VALUES (1)",
    "INSERT INTO am_c (id, p_id, name, flag) VALUES (1, 1, 'a', true)",
    "COMMIT",
    "BEGIN",
    "ALTER TABLE am_c ADD CONSTRAINT am_c_name UNIQUE (name)",
    "INSERT INTO am_c (id, p_id, name, flag) VALUES (2, 1, 'a', true)",
    "ROLLBACK",
    "BEGIN",
    "ALTER TABLE am_c ADD CONSTRAINT am_c_name UNIQUE (name)",
    "INSERT INTO am_c (id, p_id, name, flag) VALUES (2, 7, 'b', true)",
    "COMMIT",
    "SELECT conname FROM pg_constraint WHERE conrelid = 'am_c'::regclass ORDER BY 1",
]


def test_alter_table_in_a_migration_transaction_as_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    """ALTER TABLE inside BEGIN … COMMIT as migrations run it: on tables the transaction
    made, and (constraints, NOT NULL, defaults) on others, put back by ROLLBACK, and by a
    deferred check failing at COMMIT."""
    with beside_postgres(tmp_path / "home", postgres_url, "am_c, am_p") as (ours, pg):
        for sql in MIGRATION:
            assert outcome(ours, sql) == outcome(pg, sql), sql
