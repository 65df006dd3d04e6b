"""FOREIGN KEY constraints as PostgreSQL 15 has them: refused when they cannot be (42830,
42804), enforced on the referencing and the referenced table (23503; NO ACTION, RESTRICT,
CASCADE, SET NULL, SET DEFAULT), kept by DROP TABLE (2BP01) and TRUNCATE (0A000), added
and dropped by ALTER TABLE, and listed in pg_constraint and information_schema: each
statement run here and on PostgreSQL, outcomes, errors and rows compared. Then the race of a
child's insert and its parent's delete: the second to commit fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.errors import ChangeflowError

pytestmark = pytest.mark.postgres

TABLES = ["fk_c5", "fk_c4", "fk_c3", "fk_c2", "fk_c", "fk_self", "fk_p2", "fk_p"]
SETUP = [
    "CREATE TABLE fk_p (id int PRIMARY KEY, code text UNIQUE, name text)",
    "CREATE TABLE fk_p2 (a int, b text, v int, PRIMARY KEY (a, b))",
    "CREATE TABLE fk_c (id int PRIMARY KEY, p_id int REFERENCES fk_p, note text)",
    "CREATE TABLE fk_c2 (id int, p_id bigint REFERENCES fk_p (id) ON DELETE CASCADE "
    "ON UPDATE CASCADE, code text REFERENCES fk_p (code) ON DELETE SET NULL)",
    "CREATE TABLE fk_c3 (id int, x int, y text, CONSTRAINT fk_c3_two FOREIGN KEY (x, y) "
    "REFERENCES fk_p2 (a, b) ON DELETE RESTRICT ON UPDATE SET NULL)",
    "CREATE TABLE fk_c4 (id int, p_id int DEFAULT 0 REFERENCES fk_p ON DELETE SET DEFAULT)",
    "CREATE TABLE fk_self (id int PRIMARY KEY, up int REFERENCES fk_self ON DELETE CASCADE)",
]
STATEMENTS = [
    "INSERT INTO fk_p VALUES (0, 'z', 'zero'), (1, 'a', 'one'), (2, 'b', 'two'), (3, 'c', 'x')",
    "INSERT INTO fk_p2 VALUES (1, 'x', 0), (2, 'y', 0)",
    "INSERT INTO fk_c VALUES (1, 1, 'ok'), (2, NULL, 'null passes')",
    "INSERT INTO fk_c VALUES (3, 7, 'no parent')",
    "INSERT INTO fk_c VALUES (3, 2, 'b'), (4, 9, 'one bad row: none written')",
    "UPDATE fk_c SET p_id = 8 WHERE id = 1",
    "UPDATE fk_c SET p_id = 3 WHERE id = 1",
    "INSERT INTO fk_c VALUES (1, 5, 'x') ON CONFLICT (id) DO UPDATE SET p_id = EXCLUDED.p_id",
    "INSERT INTO fk_c VALUES (1, 2, 'x') ON CONFLICT (id) DO UPDATE SET p_id = EXCLUDED.p_id",
    "DELETE FROM fk_p WHERE id = 2",
    "UPDATE fk_p SET id = 20 WHERE id = 2",
    "UPDATE fk_p SET name = 'two!' WHERE id = 2",
    "INSERT INTO fk_c2 VALUES (1, 1, 'a'), (2, 3, 'c'), (3, NULL, 'c'), (4, 3, NULL)",
    "INSERT INTO fk_c2 VALUES (5, 1, 'q')",
    "UPDATE fk_p SET id = 30 WHERE id = 3",
    "SELECT * FROM fk_c2 ORDER BY id",
    "UPDATE fk_p SET code = 'cc' WHERE id = 30",
    "DELETE FROM fk_p WHERE id = 30",
    "SELECT * FROM fk_c2 ORDER BY id",
    "INSERT INTO fk_c3 VALUES (1, 1, 'x'), (2, 2, NULL), (3, NULL, 'nope')",
    "INSERT INTO fk_c3 VALUES (4, 2, 'x')",
    "DELETE FROM fk_p2 WHERE a = 1",
    "UPDATE fk_p2 SET b = 'xx' WHERE a = 1",
    "SELECT * FROM fk_c3 ORDER BY id",
    "INSERT INTO fk_c4 VALUES (1, 1), (2, 0)",
    "INSERT INTO fk_p VALUES (4, 'd', 'four'), (5, 'e', 'five')",
    "INSERT INTO fk_c4 VALUES (3, 4)",
    "DELETE FROM fk_p WHERE id = 4",
    "SELECT * FROM fk_c4 ORDER BY id",
    "DELETE FROM fk_p WHERE id = 0",
    "INSERT INTO fk_self VALUES (1, NULL), (2, 1), (3, 2), (4, 4)",
    "INSERT INTO fk_self VALUES (5, 6)",
    "DELETE FROM fk_self WHERE id = 1",
    "SELECT * FROM fk_self ORDER BY id",
    "SELECT * FROM fk_c ORDER BY id",
    "TRUNCATE fk_p",
    "TRUNCATE fk_self",
    "DROP TABLE fk_p",
    "DROP TABLE fk_p2",
    "DROP TABLE IF EXISTS fk_p2 CASCADE",
    "INSERT INTO fk_c3 VALUES (8, 5, 'no longer referencing')",
    "ALTER TABLE fk_c DROP CONSTRAINT fk_c_p_id_fkey",
    "INSERT INTO fk_c VALUES (10, 99, 'free now')",
    "ALTER TABLE fk_c ADD CONSTRAINT fk_c_again FOREIGN KEY (p_id) REFERENCES fk_p (id)",
    "DELETE FROM fk_c WHERE id = 10",
    "ALTER TABLE fk_c ADD CONSTRAINT fk_c_again FOREIGN KEY (p_id) REFERENCES fk_p (id)",
    "DELETE FROM fk_p WHERE id = 1",
    "ALTER TABLE fk_c RENAME COLUMN p_id TO parent",
    "ALTER TABLE fk_p RENAME COLUMN id TO pid",
    "ALTER TABLE fk_c3 DROP COLUMN y",
    "INSERT INTO fk_c3 VALUES (9, 77)",
    "ALTER TABLE fk_p DROP COLUMN code",
    "ALTER TABLE fk_p DROP COLUMN code CASCADE",
    "INSERT INTO fk_c2 VALUES (9, NULL, 'nowhere')",
    "INSERT INTO fk_p VALUES (6, 'six'), (7, 'seven')",
    "INSERT INTO fk_c2 VALUES (10, 6, NULL), (11, 7, NULL), (12, 7, NULL)",
    "UPDATE fk_p SET pid = pid + 100 WHERE pid > 5",
    "SELECT * FROM fk_c2 ORDER BY id",
]
CATALOG = [
    "SELECT conname, contype, conrelid::regclass, confrelid::regclass, conkey::text, "
    "confkey::text, confupdtype, confdeltype, confmatchtype, pg_get_constraintdef(oid), "
    "pg_get_constraintdef(oid, true) FROM pg_constraint WHERE contype = 'f' "
    "AND conrelid::regclass::text LIKE 'fk_%' ORDER BY 1",
    "SELECT c.conname, i.relname FROM pg_constraint c JOIN pg_class i ON i.oid = c.conindid "
    "WHERE c.contype = 'f' AND c.conname LIKE 'fk_%' ORDER BY 1",
    "SELECT constraint_schema, constraint_name, table_name, constraint_type, is_deferrable, "
    "initially_deferred FROM information_schema.table_constraints "
    "WHERE table_name LIKE 'fk_%' AND constraint_type <> 'CHECK' ORDER BY 2",
    "SELECT constraint_name, unique_constraint_schema, unique_constraint_name, match_option, "
    "update_rule, delete_rule FROM information_schema.referential_constraints "
    "WHERE constraint_name LIKE 'fk_%' ORDER BY 1",
    "SELECT constraint_name, table_name, column_name, ordinal_position, "
    "position_in_unique_constraint FROM information_schema.key_column_usage "
    "WHERE table_name LIKE 'fk_%' ORDER BY 1, 4",
    "SELECT table_name, column_name, constraint_name "
    "FROM information_schema.constraint_column_usage WHERE constraint_name LIKE 'fk_%' "
    "ORDER BY 3, 1, 2",
]
BAD = [
    "CREATE TABLE fk_bad (x int REFERENCES fk_p (name))",
    "CREATE TABLE fk_bad (x text REFERENCES fk_p)",
    "CREATE TABLE fk_bad (x int REFERENCES fk_nowhere)",
    "CREATE TABLE fk_bad (x int REFERENCES fk_c (note))",
    "CREATE TABLE fk_bad (x int, FOREIGN KEY (x) REFERENCES fk_p2 (a))",
    "CREATE TABLE fk_bad (x int, FOREIGN KEY (x, x) REFERENCES fk_p2)",
    "CREATE TABLE fk_bad (x int, FOREIGN KEY (z) REFERENCES fk_p)",
    "CREATE TABLE fk_bad (x int, FOREIGN KEY (x) REFERENCES fk_p (zz))",
    "CREATE TABLE fk_bad (x int REFERENCES fk_c3)",
    "CREATE TABLE fk_bad (x int REFERENCES fk_p MATCH PARTIAL)",
]


def _outcome(conn: Any, sql: str) -> tuple:
    """A statement's rows, or its error's SQLSTATE, message and detail."""
    import psycopg

    from changeflow.adapter.connection import DatabaseError

    try:
        cur = conn.execute(sql)
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary, e.diag.message_detail)
    except DatabaseError as e:
        return (e.sqlstate, e.error.message, e.error.fields.get("detail"))
    if cur.description is None:
        return ("ok",)
    return ("ok", [tuple("NULL" if v is None else str(v) for v in r) for r in cur.fetchall()])


def _noted(conn: Any, sql: str) -> tuple:
    """:func:`_outcome` and the notices the statement gave."""
    import psycopg

    from changeflow.adapter.connection import notice_text

    if isinstance(conn, psycopg.Connection):
        heard: list[str] = []

        def hear(d: Any) -> None:
            heard.append(notice_text("", d.message_primary, d.message_detail or ""))

        conn.add_notice_handler(hear)
        try:
            return _outcome(conn, sql), heard
        finally:
            conn.remove_notice_handler(hear)
    conn.notices.clear()
    return _outcome(conn, sql), list(conn.notices)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[tuple]:
    import psycopg

    import changeflow

    home: Path = tmp_path_factory.mktemp("fk") / "home"
    ours = changeflow.connect(home, host_seconds=0)
    ours.autocommit = True
    pg = psycopg.connect(postgres_url, autocommit=True)
    pg.execute(f"DROP TABLE IF EXISTS {', '.join(TABLES)} CASCADE")
    try:
        yield ours, pg
    finally:
        pg.execute(f"DROP TABLE IF EXISTS {', '.join(TABLES)} CASCADE")
        pg.close()
        ours.close()


def test_foreign_keys_as_postgres(pair: tuple) -> None:
    ours, pg = pair
    for sql in SETUP:
        assert _outcome(ours, sql) == _outcome(pg, sql) == ("ok",), sql
    for sql in BAD:
        assert _outcome(ours, sql) == _outcome(pg, sql), sql
    for sql in STATEMENTS:
        assert _noted(ours, sql) == _noted(pg, sql), sql
        for query in CATALOG[:1]:
            assert _outcome(ours, query) == _outcome(pg, query), (sql, query)
    for query in CATALOG:
        assert _outcome(ours, query) == _outcome(pg, query), query
    for table in ("fk_c", "fk_c2", "fk_c3", "fk_c4", "fk_self", "fk_p", "fk_p2"):
        query = f"SELECT * FROM {table} ORDER BY 1"
        assert _outcome(ours, query) == _outcome(pg, query), query


def test_transactions_see_their_own_writes_as_postgres(pair: tuple) -> None:
    ours, pg = pair
    statements = [
        "CREATE TABLE fk_tp (id int PRIMARY KEY)",
        "CREATE TABLE fk_tc (id int, p int REFERENCES fk_tp ON DELETE CASCADE)",
        "BEGIN",
        "INSERT INTO fk_tp VALUES (1), (2)",
        "INSERT INTO fk_tc VALUES (1, 1), (2, 2)",
        "DELETE FROM fk_tp WHERE id = 2",
        "COMMIT",
        "SELECT * FROM fk_tc ORDER BY id",
        "BEGIN",
        "INSERT INTO fk_tc VALUES (3, 3)",
        "COMMIT",
        "BEGIN",
        "DELETE FROM fk_tc",
        "DELETE FROM fk_tp",
        "INSERT INTO fk_tp VALUES (5)",
        "INSERT INTO fk_tc VALUES (5, 5)",
        "COMMIT",
        "SELECT * FROM fk_tc ORDER BY id",
        "ALTER TABLE fk_tc ADD COLUMN q int DEFAULT 8 REFERENCES fk_tp",
        "SELECT * FROM fk_tc ORDER BY id",
        "ALTER TABLE fk_tc ADD COLUMN q int DEFAULT 5 REFERENCES fk_tp ON DELETE SET NULL",
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = 'fk_tc'::regclass ORDER BY 1",
        "INSERT INTO fk_tc VALUES (7, 5, 9)",
        "TRUNCATE fk_tp, fk_tc",
        "SELECT * FROM fk_tc ORDER BY id",
        "INSERT INTO fk_tp VALUES (5)",
        "CREATE TABLE fk_tu (id int, p int UNIQUE REFERENCES fk_tp ON UPDATE CASCADE)",
        "INSERT INTO fk_tp VALUES (6)",
        "INSERT INTO fk_tu VALUES (1, 5), (2, 6)",
        "UPDATE fk_tp SET id = 7 WHERE id = 5",
        "SELECT * FROM fk_tu ORDER BY id",
        "DROP TABLE fk_tu",
        "CREATE TABLE fk_tu (id int, p int UNIQUE DEFAULT 6 REFERENCES fk_tp "
        "ON DELETE SET DEFAULT)",
        "INSERT INTO fk_tu VALUES (1, 7), (2, 6)",
        "DELETE FROM fk_tp WHERE id = 7",
        "DELETE FROM fk_tu WHERE id = 2",
        "DELETE FROM fk_tp WHERE id = 7",
        "SELECT * FROM fk_tu ORDER BY id",
        "DROP TABLE fk_tu",
        "ALTER TABLE fk_tp DROP CONSTRAINT fk_tp_pkey",
        "ALTER TABLE fk_tp DROP CONSTRAINT fk_tp_pkey CASCADE",
        "INSERT INTO fk_tc VALUES (8, 88, NULL)",
        "CREATE TABLE fk_tu (id int PRIMARY KEY, p int REFERENCES fk_tu)",
        "CREATE TABLE fk_tv (u int REFERENCES fk_tu)",
        "INSERT INTO fk_tu VALUES (1, NULL), (2, 1)",
        "INSERT INTO fk_tv VALUES (2)",
        "TRUNCATE fk_tu",
        "TRUNCATE fk_tu CASCADE",
        "SELECT (SELECT count(*) FROM fk_tu), (SELECT count(*) FROM fk_tv)",
        "DROP TABLE fk_tv",
        "DROP TABLE fk_tu",
        "DROP TABLE fk_tp CASCADE",
        "INSERT INTO fk_tc VALUES (6, 6)",
        "DROP TABLE fk_tc",
    ]
    for sql in statements:
        assert _noted(ours, sql) == _noted(pg, sql), sql


def _state(e: ChangeflowError) -> str | None:
    return e.fields.get("sqlstate")


@pytest.mark.parametrize("first", ["child", "parent"])
def test_a_child_insert_and_its_parent_delete_never_both_commit(
    env: Environment, first: str
) -> None:
    """Two sessions: one inserts a child of parent 1, the other deletes parent 1; whichever
    commits second fails (40001), so no child is left without its parent."""
    p, c = f"race_p_{first}", f"race_c_{first}"
    setup = Session(env)
    setup.execute(f"CREATE TABLE {p} (id int PRIMARY KEY)")
    setup.execute(f"CREATE TABLE {c} (id int, p int REFERENCES {p})")
    setup.execute(f"INSERT INTO {p} VALUES (1), (2)")
    child, parent = Session(env), Session(env)
    child.execute("BEGIN")
    child.execute(f"INSERT INTO {c} VALUES (1, 1)")
    parent.execute("BEGIN")
    parent.execute(f"DELETE FROM {p} WHERE id = 1")
    one, two = (child, parent) if first == "child" else (parent, child)
    one.execute("COMMIT")
    with pytest.raises(ChangeflowError) as caught:
        two.execute("COMMIT")
    assert _state(caught.value) == "40001"
    parents = {r[0] for r in setup.execute(f"SELECT id FROM {p}")[-1].rows}
    children = setup.execute(f"SELECT p FROM {c}")[-1].rows
    assert all(r[0] in parents for r in children)
    assert (children, parents) == (([(1,)], {1, 2}) if first == "child" else ([], {2}))


def test_writes_of_other_keys_do_not_conflict(env: Environment) -> None:
    """A child of parent 2 and the delete of parent 1 both commit."""
    s = Session(env)
    s.execute("CREATE TABLE calm_p (id int PRIMARY KEY)")
    s.execute("CREATE TABLE calm_c (id int, p int REFERENCES calm_p)")
    s.execute("INSERT INTO calm_p VALUES (1), (2)")
    child, parent = Session(env), Session(env)
    child.execute("BEGIN")
    child.execute("INSERT INTO calm_c VALUES (1, 2)")
    parent.execute("BEGIN")
    parent.execute("DELETE FROM calm_p WHERE id = 1")
    parent.execute("COMMIT")
    child.execute("COMMIT")
    assert s.execute("SELECT p FROM calm_c")[-1].rows == [(2,)]


def test_tables_of_another_schema_as_postgres(pair: tuple) -> None:
    ours, pg = pair
    pg.execute("DROP SCHEMA IF EXISTS fk_s CASCADE")
    statements = [
        "CREATE SCHEMA fk_s",
        "CREATE TABLE fk_s.p (id int PRIMARY KEY)",
        "CREATE TABLE fk_s.t (id int PRIMARY KEY, up int REFERENCES fk_s.t, p int "
        "REFERENCES fk_s.p ON DELETE SET NULL)",
        "INSERT INTO fk_s.p VALUES (1)",
        "INSERT INTO fk_s.t VALUES (1, NULL, 1), (2, 1, 1)",
        "INSERT INTO fk_s.t VALUES (3, 9, NULL)",
        "DELETE FROM fk_s.p",
        "SELECT * FROM fk_s.t ORDER BY id",
        "DELETE FROM fk_s.t WHERE id = 1",
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' "
        "AND connamespace = 'fk_s'::regnamespace ORDER BY 1",
        "DROP TABLE fk_s.p",
    ]
    try:
        for sql in statements:
            assert _outcome(ours, sql) == _outcome(pg, sql), sql
    finally:
        for conn in (ours, pg):
            conn.execute("DROP SCHEMA fk_s CASCADE")
