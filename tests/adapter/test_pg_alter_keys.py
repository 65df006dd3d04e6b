"""ALTER TABLE … ADD PRIMARY KEY / UNIQUE and ALTER COLUMN … SET/DROP NOT NULL, SET/DROP DEFAULT
as PostgreSQL 15 has them: the rows checked (23502, 23505), keys named by its rules, enforced
on later writes and ON CONFLICT, and listed in its catalogs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

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
    # which existing row a serial numbers first is the scan's order, undefined in both
    "SELECT id, x, s, k2 FROM ak ORDER BY id, x",
    "SELECT count(DISTINCT k), min(k), max(k), count(DISTINCT k4), min(k4), max(k4) FROM ak",
    *CATALOG,
]


def test_alter_keys_and_columns_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    create = "CREATE TABLE ak (id int, x int, s text)"
    with beside_postgres(tmp_path / "home", postgres_url, "ak", create) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)


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
        same_outcomes(ours, pg, MIGRATION)


AUTH_SETUP = [  # tables an earlier migration made, with rows, a foreign key and an index
    "CREATE TABLE au_ct (id int PRIMARY KEY, name varchar(100) NOT NULL, app varchar(100))",
    "CREATE TABLE au_perm (id int PRIMARY KEY, name varchar(50) NOT NULL, "
    "ct_id int NOT NULL REFERENCES au_ct DEFERRABLE INITIALLY DEFERRED)",
    "CREATE INDEX au_perm_ct ON au_perm (ct_id)",
    "CREATE INDEX au_ct_name ON au_ct (app)",
    "INSERT INTO au_ct VALUES (1, 'user', 'auth'), (2, 'group', 'auth')",
    "INSERT INTO au_perm VALUES (1, 'add user', 1), (2, 'change user', 1), (3, 'add group', 2)",
]
COLUMNS = (
    "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, "
    "column_default FROM information_schema.columns WHERE table_name LIKE 'au_%' "
    "ORDER BY table_name, ordinal_position"
)
AUTH_MIGRATIONS = [
    "BEGIN",
    "ALTER TABLE au_ct ALTER COLUMN name DROP NOT NULL",
    "COMMIT",
    "BEGIN",
    "ALTER TABLE au_ct DROP COLUMN name",
    "COMMIT",
    "BEGIN",
    "ALTER TABLE au_perm ALTER COLUMN name TYPE varchar(255)",
    "COMMIT",
    "BEGIN",
    "ALTER TABLE au_perm ALTER COLUMN name TYPE varchar(5)",
    "ROLLBACK",
    "BEGIN",
    "ALTER TABLE au_perm ADD COLUMN extra int DEFAULT 5",
    "ALTER TABLE au_perm ALTER COLUMN name TYPE text",
    "ALTER TABLE au_perm RENAME COLUMN ct_id TO type_id",
    "ALTER TABLE au_perm ALTER COLUMN id DROP NOT NULL",
    "ROLLBACK",
    "SELECT * FROM au_perm ORDER BY id",
    "SELECT * FROM au_perm WHERE ct_id = 1 ORDER BY id",
    COLUMNS,
    "BEGIN",
    "ALTER TABLE au_perm DROP COLUMN name",
    "INSERT INTO au_perm VALUES (4, 2)",
    "ROLLBACK",
    "SELECT * FROM au_perm ORDER BY id",
    "BEGIN",
    "ALTER TABLE au_perm ADD COLUMN codename varchar(100) DEFAULT 'x' NOT NULL",
    "ALTER TABLE au_perm ALTER COLUMN codename DROP DEFAULT",
    "INSERT INTO au_perm VALUES (4, 'delete user', 1, 'delete_user')",
    "COMMIT",
    "SELECT * FROM au_perm ORDER BY id",
    "SELECT * FROM au_perm WHERE ct_id = 1 ORDER BY id",
    COLUMNS,
]


def test_migrations_altering_earlier_tables_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """ALTER TABLE of the columns of tables an earlier transaction made (type, NOT NULL,
    ADD/DROP/RENAME COLUMN), inside BEGIN … COMMIT as migrations run it, with the tables'
    indexes rebuilt, and ROLLBACK putting the tables back with their rows."""
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "au_perm, au_ct", *AUTH_SETUP) as (ours, pg):
        same_outcomes(ours, pg, AUTH_MIGRATIONS)


def test_writes_wait_for_a_transaction_altering_their_table(tmp_path: Path) -> None:
    """Another session's write to a table an open transaction altered waits for its end, as
    PostgreSQL's lock makes it, and then writes the table as the end left it."""
    import threading

    from changeflow.adapter import sequence_holds
    from changeflow.adapter.environment import Environment
    from changeflow.adapter.session import Session
    from changeflow.config import Config

    env = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    try:
        a, b = Session(env), Session(env)
        a.execute("CREATE TABLE w (id int, s text); INSERT INTO w VALUES (1, 'a')")
        for end, columns in [("ROLLBACK", 2), ("COMMIT", 3)]:
            a.execute("BEGIN; ALTER TABLE w ADD COLUMN z int DEFAULT 7")
            thread = threading.Thread(target=lambda: b.execute("INSERT INTO w (id) VALUES (2)"))
            thread.start()
            for _ in range(6000):
                if sequence_holds.waiting() or not thread.is_alive():
                    break
                thread.join(0.01)
            assert thread.is_alive()  # it waits
            a.execute(end)
            thread.join(60)
            assert not thread.is_alive()
            rows = b.execute("SELECT * FROM w ORDER BY id")[-1].rows
            assert all(len(r) == columns for r in rows)
            b.execute("DELETE FROM w WHERE id = 2")
        assert b.execute("SELECT * FROM w ORDER BY id")[-1].rows == [(1, "a", 7)]
    finally:
        env.close()


SEVERAL = [
    "INSERT INTO mt VALUES (1, 10), (2, 20)",
    "ALTER TABLE mt ADD COLUMN a int, ADD COLUMN b text DEFAULT 'x'",
    "ALTER TABLE mt ADD COLUMN c int, ADD COLUMN a int",
    "ALTER TABLE mt ADD COLUMN c int, ADD COLUMN d int NOT NULL",
    "ALTER TABLE mt DROP COLUMN a, DROP COLUMN b",
    "ALTER TABLE mt ALTER COLUMN id SET NOT NULL, ADD PRIMARY KEY (id)",
    "ALTER TABLE mt ADD CONSTRAINT mt_v UNIQUE (v), ALTER COLUMN v TYPE bigint",
    "ALTER TABLE mt ADD COLUMN d int, ALTER COLUMN v TYPE date",
    "ALTER TABLE mt ADD COLUMN e int, RENAME COLUMN v TO w",
    "ALTER TABLE IF EXISTS nope ADD COLUMN e int, ADD COLUMN f int",
    "BEGIN",
    "ALTER TABLE mt ADD COLUMN e int, ADD COLUMN f int DEFAULT 3",
    "ROLLBACK",
    "INSERT INTO mt VALUES (1, 30)",
    "SELECT * FROM mt ORDER BY id",
    "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns "
    "WHERE table_name = 'mt' ORDER BY ordinal_position",
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = 'mt'::regclass ORDER BY 1",
]


def test_several_actions_as_one_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """ALTER TABLE with several actions applies all of them or, if one fails, none."""
    create = "CREATE TABLE mt (id int, v int)"
    with beside_postgres(tmp_path / "home", postgres_url, "mt", create) as (ours, pg):
        same_outcomes(ours, pg, SEVERAL)


RENAMES = [
    "ALTER TABLE rc RENAME CONSTRAINT rc_pkey TO rc_key",
    "ALTER TABLE rc RENAME CONSTRAINT rc_v_check TO rc_positive",
    "ALTER TABLE rc RENAME CONSTRAINT nope TO other",
    "ALTER TABLE rc RENAME CONSTRAINT rc_positive TO rc_key",
    "ALTER TABLE rc RENAME CONSTRAINT rc_key TO rc",
    "ALTER TABLE rc RENAME CONSTRAINT rc_u_key TO rc_unique",
    "INSERT INTO rc VALUES (1, -1, 'a')",
    "INSERT INTO rc VALUES (1, 1, 'a')",
    "INSERT INTO rc VALUES (1, 2, 'b')",
    "INSERT INTO rc VALUES (2, 2, 'a')",
    "SELECT conname, contype FROM pg_constraint WHERE conrelid = 'rc'::regclass ORDER BY 1",
    "SELECT indexname FROM pg_indexes WHERE tablename = 'rc' ORDER BY 1",
]


def test_rename_constraint_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """RENAME CONSTRAINT renames a key (and its index), a check or a foreign key; the
    errors of names taken or missing are PostgreSQL's."""
    create = "CREATE TABLE rc (id int PRIMARY KEY, v int CHECK (v > 0), u text UNIQUE)"
    with beside_postgres(tmp_path / "home", postgres_url, "rc", create) as (ours, pg):
        same_outcomes(ours, pg, RENAMES)
        sql = "INSERT INTO rc VALUES (3, -3, 'c')"
        assert _message(ours, sql) == _message(pg, sql)  # the check's new name


def _message(conn, sql: str) -> str | None:
    try:
        conn.execute(sql)
    except Exception as e:  # noqa: BLE001 - either connection's error class
        return str(e).splitlines()[0]
    return None


def test_keys_added_beside_unique_indexes(tmp_path: Path) -> None:
    """A schema with a unique index (whose item marks it unique) names new keys around it."""
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    with changeflow.connect(tmp_path / "home", host_seconds=0) as c:
        c.autocommit = True
        c.execute("CREATE TABLE ui (a int, b int)")
        c.execute("CREATE UNIQUE INDEX ui_a_key ON ui (a)")
        c.execute("ALTER TABLE ui ADD UNIQUE (a)")  # ui_a_key is taken: ui_a_key1
        c.execute("ALTER TABLE ui RENAME CONSTRAINT ui_a_key1 TO ui_b")
        with pytest.raises(DatabaseError) as taken:
            c.execute("ALTER TABLE ui ADD CONSTRAINT ui_a_key UNIQUE (b)")
        assert taken.value.sqlstate == "42P07"
        names = c.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'ui'::regclass ORDER BY 1"
        ).fetchall()
        assert names == [("ui_b",)]
