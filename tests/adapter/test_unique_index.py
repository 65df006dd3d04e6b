"""CREATE UNIQUE INDEX as PostgreSQL 15's: built only without duplicates, enforced on later
writes (23505 with PostgreSQL's message and detail), an ON CONFLICT arbiter, shown in
pg_index and pg_indexes, kept across a restart, and gone with DROP INDEX or the table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError
from changeflow.errors import ChangeflowError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres  # noqa: E402

CREATE = "CREATE TABLE u (id int PRIMARY KEY, a int, b text)"
INSERT = "INSERT INTO u VALUES (1, 1, 'x'), (2, 1, 'x'), (3, NULL, NULL), (4, NULL, NULL)"
STATEMENTS = [
    "CREATE UNIQUE INDEX u_a ON u (a)",
    "CREATE UNIQUE INDEX ON u (b)",
    "CREATE UNIQUE INDEX u_id2 ON u USING btree (id)",
    "CREATE UNIQUE INDEX IF NOT EXISTS u_id2 ON u (id)",
    "INSERT INTO u VALUES (5, 5, 'z'), (6, 6, 'z')",
    "DELETE FROM u WHERE id = 2",
    "CREATE UNIQUE INDEX ON u (a, b)",
    "INSERT INTO u VALUES (7, 1, 'x')",
    "UPDATE u SET a = 1, b = 'x' WHERE id = 5",
    "INSERT INTO u VALUES (7, NULL, 'x'), (8, NULL, 'x')",
    "INSERT INTO u VALUES (9, 1, 'x') ON CONFLICT (a, b) DO NOTHING",
    "INSERT INTO u VALUES (10, 1, 'x') ON CONFLICT (a, b) DO UPDATE SET id = 100",
    "INSERT INTO u VALUES (12, 1, 'x') ON CONFLICT ON CONSTRAINT u_a_b_idx DO NOTHING",
    "INSERT INTO u VALUES (1, 7, 'y') ON CONFLICT ON CONSTRAINT u_pkey DO NOTHING",
    "CREATE UNIQUE INDEX u_nope ON u (nope)",
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'u' AND indexname <> 'u_pkey'"
    " ORDER BY 1",
    "SELECT c.relname, i.indisunique, i.indisprimary, i.indkey::text FROM pg_index i"
    " JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'u'::regclass"
    " AND c.relname <> 'u_pkey' ORDER BY 1",
    "DROP INDEX u_a_b_idx",
    "INSERT INTO u VALUES (11, 1, 'x')",
    "SELECT * FROM u ORDER BY id",
]


def _outcome(conn, sql: str) -> tuple:
    """The rows of ``sql``, or its error's SQLSTATE, message and detail."""
    import psycopg

    try:
        cur = conn.execute(sql)
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary, e.diag.message_detail)
    except DatabaseError as e:
        return (e.sqlstate, e.error.message, getattr(e.error, "detail", None))
    return [tuple(r) for r in cur.fetchall()] if cur.description else []


@pytest.mark.postgres
def test_unique_indexes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "u", CREATE, INSERT) as (ours, pg):
        for sql in STATEMENTS:
            assert _outcome(ours, sql) == _outcome(pg, sql), sql


def test_a_unique_index_outlives_a_restart_and_goes_with_its_table(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with changeflow.connect(home, host_seconds=0) as conn:
        conn.autocommit = True
        conn.execute("CREATE TABLE w (a int, b text)")
        conn.execute("CREATE UNIQUE INDEX w_a ON w (a)")
        conn.execute("INSERT INTO w VALUES (1, 'x')")
    with changeflow.connect(home, host_seconds=0) as conn:
        conn.autocommit = True
        with pytest.raises(DatabaseError) as e:
            conn.execute("INSERT INTO w VALUES (1, 'y')")
        assert e.value.sqlstate == "23505"
        conn.execute("DROP TABLE w")
        conn.execute("CREATE TABLE w (a int, b text)")
        conn.execute("INSERT INTO w VALUES (1, 'x'), (1, 'y')")  # the index went with it
        conn.execute("CREATE UNIQUE INDEX w_a ON w (b)")  # and its name with it
        assert conn.execute("SELECT count(*) FROM w").fetchone() == (2,)


def test_unique_indexes_are_for_tables(tmp_path: Path) -> None:
    with changeflow.connect(tmp_path / "home", host_seconds=0) as conn:
        conn.autocommit = True
        conn.execute("CREATE TABLE w (a int)")
        conn.execute("CREATE VIEW wv AS SELECT a FROM w")
        conn.execute("CREATE MATERIALIZED VIEW wm AS SELECT a FROM w")
        for name, code in (("wv", "42809"), ("wm", "0A000")):
            with pytest.raises(DatabaseError) as e:
                conn.execute(f"CREATE UNIQUE INDEX wi ON {name} (a)")
            assert e.value.sqlstate == code


def test_a_unique_index_follows_its_columns_through_alter_table(tmp_path: Path) -> None:
    with changeflow.connect(tmp_path / "home", host_seconds=0) as conn:
        conn.autocommit = True
        conn.execute("CREATE TABLE w (a int, b int, c int)")
        conn.execute("CREATE UNIQUE INDEX w_c ON w (c)")
        conn.execute("ALTER TABLE w DROP COLUMN a")
        conn.execute("ALTER TABLE w RENAME COLUMN c TO d")
        conn.execute("INSERT INTO w VALUES (1, 1), (1, 2)")  # b is free, d is not
        with pytest.raises(DatabaseError) as e:
            conn.execute("INSERT INTO w VALUES (3, 2)")
        assert e.value.sqlstate == "23505"
        assert e.value.error.detail == "Key (d)=(2) already exists."


def test_a_duplicate_written_while_the_index_is_built_undoes_it(tmp_path: Path) -> None:
    from changeflow.adapter.environment import Environment
    from changeflow.adapter.session import Session
    from changeflow.config import Config
    from changeflow.failpoints import hooked

    env = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    try:
        a, b = Session(env), Session(env)
        a.execute("CREATE TABLE w (a int)")
        a.execute("INSERT INTO w VALUES (1)")
        # a write planned before the index is in the catalog does not check it
        write = hooked("ddl.before_catalog", lambda: b.execute("INSERT INTO w VALUES (1)"))
        with write, pytest.raises(ChangeflowError) as e:
            a.execute("CREATE UNIQUE INDEX w_a ON w (a)")
        assert e.value.sqlstate == "23505"
        assert e.value.detail == "Key (a)=(1) is duplicated."
        assert env.catalog.load().by_name("w_a") is None
        b.execute("INSERT INTO w VALUES (1)")  # no index checks it
        assert a.execute("SELECT count(*) FROM w")[-1].rows == [(3,)]
    finally:
        env.close()
