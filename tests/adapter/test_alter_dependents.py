"""ALTER TABLE over a table that sinks and indexes read: a sink's target keeps its columns
and stays exact (no row lost or doubled) through an added column, later writes and a
restart; DROP COLUMN drops an index keyed on the column as PostgreSQL 15 does; RENAME TO
and RENAME COLUMN under dependents as PostgreSQL does them; and a change that fails at its
last step (the catalog write) leaves the table, its dependents and its rows as they were."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

import changeflow
from changeflow.adapter.connection import Connection, DatabaseError
from changeflow.errors import PlanError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def targets(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """Two sink targets of one kind: a SQLite file or a PostgreSQL database each."""
    if request.param == "sqlite":
        return [f"sqlite:{tmp_path / f'out{n}.sqlite'}" for n in range(2)]
    from postgres_server import database_for_test

    return [database_for_test(request.getfixturevalue("postgres_url"), "alter") for _ in "ab"]


def _target(target: str, table: str) -> tuple[list[str], list[tuple]]:
    """The columns and sorted rows of ``table`` in a sink's target."""
    if target.startswith("sqlite:"):
        with sqlite3.connect(target[7:]) as db:
            cur = db.execute(f"SELECT * FROM {table}")
            return [d[0] for d in cur.description], sorted(cur.fetchall(), key=str)
    import psycopg

    with psycopg.connect(target) as db:
        cur = db.execute(f"SELECT * FROM {table}")
        assert cur.description is not None
        return [d[0] for d in cur.description], sorted(cur.fetchall(), key=str)


def _open(home: Path) -> Connection:
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    return conn


def _rows(conn: Connection, sql: str) -> list[tuple]:
    return sorted(conn.execute(sql).fetchall(), key=str)


SINK_STEPS = [
    "ALTER TABLE t ADD COLUMN w int DEFAULT 5",
    "INSERT INTO t VALUES (3, 30, 3)",
    "UPDATE t SET w = 9 WHERE k = 1",  # only the new column: nothing changes in the target
    "UPDATE t SET v = 11 WHERE k = 1",
    "ALTER TABLE t RENAME COLUMN v TO amount",
    "DELETE FROM t WHERE k = 2",
    "ALTER TABLE t ADD COLUMN x text",
    "ALTER TABLE t DROP COLUMN w",  # the sinks do not write it
]


def test_a_sink_keeps_its_columns_through_alter_and_a_restart(
    tmp_path: Path, targets: list[str]
) -> None:
    """The key-value sink and the change-table sink write the columns they wrote before
    (under their old names), every write once, through the changes and a restart; a
    column they write cannot be dropped (2BP01)."""
    home = tmp_path / "home"
    conn = _open(home)
    conn.execute("CREATE TABLE t (k int NOT NULL, v int)")
    conn.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
    conn.execute(f"CREATE SINK rows_out FROM t INTO '{targets[0]}' KEY (k)")
    conn.execute(f"CREATE SINK changes_out FROM t INTO '{targets[1]}' KEY (k) WITH (delta = true)")
    for step in SINK_STEPS:
        conn.execute(step)
        conn.env.tick()
    with pytest.raises(DatabaseError) as e:
        conn.execute("ALTER TABLE t DROP COLUMN amount")
    assert e.value.sqlstate == "2BP01" and "sink" in str(e.value)
    conn.close()

    conn = _open(home)
    conn.execute("INSERT INTO t VALUES (4, 40, 'four')")
    conn.execute("UPDATE t SET amount = amount + 1, x = 'y'")
    conn.env.tick()
    want = _rows(conn, "SELECT k, amount FROM t")
    assert want == [(1, 12), (3, 31), (4, 41)]
    assert _target(targets[0], "rows_out") == (["k", "v"], want)
    columns, changes = _target(targets[1], "changes_out")
    assert columns[:2] == ["k", "v"] and len(columns) == 4  # and the time and diff
    net: dict[tuple, int] = {}
    for k, v, _, diff in changes:
        net[(k, v)] = net.get((k, v), 0) + diff
    assert sorted(r for r, n in net.items() for _ in range(n)) == want
    assert all(n >= 0 for n in net.values())
    # the first value of row 1, its two changes, and nothing for the change to w alone
    assert sorted((v, d) for k, v, _, d in changes if k == 1) == [
        (10, -1),
        (10, 1),
        (11, -1),
        (11, 1),
        (12, 1),
    ]
    conn.close()


INDEX_SETUP = [
    "CREATE INDEX a_by_name ON a (name)",
    "CREATE INDEX a_by_x ON a (x)",
    "CREATE INDEX a_by_id_name ON a (id, name)",
]
INDEX_STEPS = [
    "ALTER TABLE a DROP COLUMN name",  # both of its indexes go with it
    "SELECT indexname FROM pg_indexes WHERE tablename = 'a'",
    "INSERT INTO a VALUES (4, 4)",
    "SELECT * FROM a WHERE x = 4",
    "SELECT * FROM a",
    "CREATE INDEX a_by_name ON a (id)",  # the name is free again
    "SELECT indexname FROM pg_indexes WHERE tablename = 'a'",
    "CREATE VIEW big AS SELECT id FROM a WHERE x > 1",
    "ALTER TABLE a DROP COLUMN x",  # the view reads it: refused, the index stays
    "SELECT indexname FROM pg_indexes WHERE tablename = 'a'",
    "DROP VIEW big",
    "ALTER TABLE a DROP COLUMN x",
    "SELECT indexname FROM pg_indexes WHERE tablename = 'a'",
    "SELECT * FROM a",
]
CREATE = "CREATE TABLE a (id int PRIMARY KEY, name text, x numeric(10,2))"
INSERT = "INSERT INTO a VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, NULL, 3)"


@pytest.mark.postgres
def test_an_index_on_a_dropped_column_goes_with_it_as_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "a", CREATE, INSERT) as (ours, pg):
        try:
            for c in (ours, pg):
                for sql in INDEX_SETUP:
                    c.execute(sql)
            for sql in INDEX_STEPS:
                assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql
        finally:
            pg.execute("DROP VIEW IF EXISTS big")


RENAME_STEPS = [
    "ALTER TABLE a RENAME TO b",
    "SELECT * FROM ids",
    "SELECT * FROM totals",
    "INSERT INTO b VALUES (4, 'four', 4)",
    "SELECT * FROM ids",
    "SELECT * FROM totals",
    "SELECT * FROM a",
    "ALTER TABLE b RENAME TO ids",
    "ALTER TABLE b RENAME COLUMN x TO y",
    "SELECT * FROM totals",
    "SELECT * FROM b WHERE id = 4",
    "ALTER TABLE b ALTER COLUMN y TYPE int",  # a view reads it
]


@pytest.mark.postgres
def test_renames_under_views_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """A table renamed (or a column of it) under views keeps them reading it; a name taken
    is refused; a column's type cannot change under a view (0A000), as in PostgreSQL."""
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "a", CREATE, INSERT) as (ours, pg):
        try:
            pg.execute("DROP TABLE IF EXISTS b")
            ours.execute("CREATE MATERIALIZED VIEW totals AS SELECT count(*) AS n, sum(x) FROM a")
            pg.execute("CREATE VIEW totals AS SELECT count(*) AS n, sum(x) FROM a")
            for c in (ours, pg):
                c.execute("CREATE VIEW ids AS SELECT id, x FROM a WHERE id > 1")
            for sql in RENAME_STEPS:
                assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql
            ours.close()
            again = _open(home)
            try:
                for sql in ["SELECT * FROM ids", "SELECT * FROM totals"]:
                    assert outcome(again, sql, sort=True) == outcome(pg, sql, sort=True), sql
            finally:
                again.close()
        finally:
            pg.execute("DROP VIEW IF EXISTS ids, totals")
            pg.execute("ALTER TABLE IF EXISTS b RENAME TO a")


def _fail(*args: Any, **kwargs: Any) -> None:
    raise PlanError("injected failure", sqlstate="58030")


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE t ADD COLUMN w int DEFAULT 5",
        "ALTER TABLE t DROP COLUMN d",
        "ALTER TABLE t RENAME COLUMN v TO vv",
    ],
)
def test_a_change_failing_at_its_catalog_write_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str
) -> None:
    """With a sink (pinned to its columns by an added one), an index keyed on the column
    dropped, and a materialized view, a failure
    of the catalog write leaves the shard's schema, the items and the rows as they were; the
    sink and the view go on as before, and the same statement then succeeds."""
    conn = _open(tmp_path / "home")
    conn.execute("CREATE TABLE t (k int NOT NULL, v int, u int)")
    conn.execute("INSERT INTO t VALUES (1, 10, 1), (2, 20, 2)")
    conn.execute(f"CREATE SINK out FROM t INTO 'sqlite:{tmp_path / 'o.sqlite'}' KEY (k)")
    conn.execute("ALTER TABLE t ADD COLUMN d int")
    conn.execute("CREATE INDEX t_by_d ON t (d)")
    conn.execute("CREATE MATERIALIZED VIEW s AS SELECT sum(u) AS total FROM t")
    env = conn.env
    shard = env.catalog.load().by_name("t").id
    schema, items = env.storage.state(shard).schema, env.catalog.load().items
    monkeypatch.setattr(env.catalog, "change", _fail)
    with pytest.raises(DatabaseError) as e:
        conn.execute(sql)
    assert e.value.sqlstate == "58030"
    monkeypatch.undo()
    assert env.storage.state(shard).schema == schema
    assert env.catalog.load().items == items
    conn.execute("INSERT INTO t VALUES (3, 30, 3, 33)")
    env.tick()
    assert _rows(conn, "SELECT * FROM t") == [(1, 10, 1, None), (2, 20, 2, None), (3, 30, 3, 33)]
    assert _rows(conn, "SELECT * FROM t WHERE d = 33") == [(3, 30, 3, 33)]
    assert _rows(conn, "SELECT * FROM s") == [(6,)]
    assert _target(f"sqlite:{tmp_path / 'o.sqlite'}", "out") == (
        ["k", "v", "u"],
        [(1, 10, 1), (2, 20, 2), (3, 30, 3)],
    )
    conn.execute(sql)
    conn.execute("INSERT INTO t (k) VALUES (4)")
    env.tick()
    assert _rows(conn, "SELECT k FROM t") == [(1,), (2,), (3,), (4,)]
    assert _rows(conn, "SELECT * FROM s") == [(6,)]
    conn.close()


def test_a_sink_created_after_changes_writes_the_sql_names(tmp_path: Path) -> None:
    """A table's stored column names may differ from its SQL ones after a rename or a
    dropped name added again: a sink created then writes (and keys on) the SQL names."""
    conn = _open(tmp_path / "home")
    conn.execute("CREATE TABLE t (k int, v int)")
    conn.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
    conn.execute("ALTER TABLE t RENAME COLUMN k TO id")
    conn.execute("ALTER TABLE t DROP COLUMN v")
    conn.execute("ALTER TABLE t ADD COLUMN v text DEFAULT 'x'")
    target = f"sqlite:{tmp_path / 'o.sqlite'}"
    conn.execute("INSERT INTO t VALUES (NULL, 'n')")
    with pytest.raises(DatabaseError) as e:
        conn.execute(f"CREATE SINK out FROM t INTO '{target}' KEY (id)")
    assert e.value.sqlstate == "23502" and "key column 'id' is NULL" in str(e.value)
    conn.execute("DELETE FROM t WHERE id IS NULL")
    conn.execute(f"CREATE SINK out FROM t INTO '{target}' KEY (id)")
    conn.execute("UPDATE t SET v = 'y' WHERE id = 2")
    conn.env.tick()
    assert _target(target, "out") == (["id", "v"], [(1, "x"), (2, "y")])
    conn.close()


CASCADE_SETUP = [
    "CREATE VIEW named AS SELECT id, name FROM a",
    "CREATE VIEW upper_named AS SELECT id, upper(name) AS up FROM named WHERE id > 1",
    "CREATE VIEW ids AS SELECT id, x FROM a",
]
# the views and materialized views left (totals is materialized here, a plain view on
# PostgreSQL, and information_schema leaves materialized views out)
VIEWS = (
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = 'public' AND c.relkind IN ('v', 'm')"
)
CASCADE_STEPS = [
    "ALTER TABLE a DROP COLUMN name RESTRICT",
    "ALTER TABLE a DROP COLUMN name CASCADE",  # named and upper_named go with it
    VIEWS,
    "SELECT * FROM named",
    "SELECT * FROM a",
    "INSERT INTO a VALUES (4, 4)",
    "SELECT * FROM ids",
    "SELECT * FROM totals",
    "ALTER TABLE a DROP COLUMN x CASCADE",
    VIEWS,
    "SELECT * FROM a",
]


@pytest.mark.postgres
def test_drop_column_cascade_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """DROP COLUMN … CASCADE drops the views and materialized views that read the column,
    and what depends on them; the others stay exact."""
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "a", CREATE, INSERT) as (ours, pg):
        try:
            ours.execute("CREATE MATERIALIZED VIEW totals AS SELECT count(*) AS n, sum(x) FROM a")
            pg.execute("CREATE VIEW totals AS SELECT count(*) AS n, sum(x) FROM a")
            for c in (ours, pg):
                for sql in CASCADE_SETUP:
                    c.execute(sql)
            for sql in CASCADE_STEPS:
                assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql
        finally:
            pg.execute("DROP VIEW IF EXISTS upper_named, named, ids, totals")
    again = _open(home)  # the materialized view that summed x went with it
    assert again.execute("SHOW MATERIALIZED VIEWS").fetchall() == []
    again.close()


def test_drop_column_cascade_drops_a_sink_that_writes_it(tmp_path: Path) -> None:
    conn = _open(tmp_path / "home")
    conn.execute("CREATE TABLE t (k int NOT NULL, v int)")
    conn.execute("INSERT INTO t VALUES (1, 10)")
    conn.execute(f"CREATE SINK out FROM t INTO 'sqlite:{tmp_path / 'o.sqlite'}' KEY (k)")
    conn.execute("CREATE MATERIALIZED VIEW s AS SELECT k, v + 1 AS w FROM t")
    conn.execute(f"CREATE SINK s_out FROM s INTO 'sqlite:{tmp_path / 's.sqlite'}' KEY (k)")
    shard = conn.env.catalog.load().by_name("t").id
    conn.execute("ALTER TABLE t DROP COLUMN v CASCADE")
    assert conn.execute("SHOW SINKS").fetchall() == []
    held = conn.env.storage.registered_readers(shard)
    assert [h for h in held if h != "adapter"] == [], held
    conn.execute("INSERT INTO t VALUES (2)")
    assert _rows(conn, "SELECT * FROM t") == [(1,), (2,)]
    conn.close()
