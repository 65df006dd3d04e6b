"""ALTER TABLE ADD, DROP and RENAME COLUMN as PostgreSQL 15 does them: each statement's outcome
(its SQLSTATE, or the table's rows after it) compared with PostgreSQL's; the new columns
survive a restart; views created after a change see it; a write framed before a change lands
in the table's new columns."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

CREATE = "CREATE TABLE a (id int PRIMARY KEY, name text, x numeric(10,2))"
INSERT = "INSERT INTO a VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, NULL, 3)"
STEPS = [
    "ALTER TABLE a ADD COLUMN n int",
    "ALTER TABLE a ADD COLUMN d int DEFAULT 7",
    "ALTER TABLE a ADD COLUMN price numeric(8,2) NOT NULL DEFAULT 2.5",
    "ALTER TABLE a ADD COLUMN label text DEFAULT 'x' || 'y'",
    "ALTER TABLE a ADD COLUMN must int NOT NULL",
    "ALTER TABLE a ADD COLUMN n text",
    "ALTER TABLE a ADD COLUMN IF NOT EXISTS n text",
    "ALTER TABLE a ADD COLUMN bad int DEFAULT 'nope'",
    "INSERT INTO a (id, name) VALUES (4, 'four')",
    "INSERT INTO a VALUES (5, 'five', 5, 50, 51, 5.55, 'l5')",
    "UPDATE a SET n = id * 10 WHERE id <= 2",
    "ALTER TABLE a DROP COLUMN name",
    "ALTER TABLE a DROP COLUMN name",
    "ALTER TABLE a DROP COLUMN IF EXISTS name",
    "ALTER TABLE a DROP COLUMN nothing",
    "ALTER TABLE a ADD COLUMN name int DEFAULT 0",  # a dropped column's name, another type
    "ALTER TABLE a RENAME COLUMN d TO dd",
    "ALTER TABLE a RENAME COLUMN dd TO x",
    "ALTER TABLE a RENAME COLUMN nothing TO y",
    "ALTER TABLE a RENAME x TO xx",
    "DELETE FROM a WHERE dd = 7 AND id = 3",
    "ALTER TABLE a DROP COLUMN id",  # the primary key goes with its column
    "INSERT INTO a (xx, n) VALUES (1.5, 10), (1.5, 10)",
    "ALTER TABLE missing ADD COLUMN c int",
    "ALTER TABLE IF EXISTS missing ADD COLUMN c int",
    "ALTER TABLE a ADD COLUMN k int PRIMARY KEY",
    "ALTER TABLE a ADD COLUMN k",
]


def _rows(conn) -> list[tuple]:
    cur = conn.execute("SELECT * FROM a")
    names = [d[0] for d in cur.description]
    rows = sorted((tuple("NULL" if v is None else str(v) for v in r) for r in cur), key=str)
    return [tuple(names), *rows]


def _outcome(conn, sql: str, error: type[Exception]) -> tuple:
    try:
        conn.execute(sql)
    except error as e:
        return ("error", e.sqlstate)
    return ("ok", _rows(conn))


@pytest.mark.postgres
def test_alter_table_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    with beside_postgres(tmp_path / "home", postgres_url, "a", CREATE, INSERT) as (ours, pg):
        for sql in STEPS:
            want = _outcome(pg, sql, psycopg.Error)
            assert _outcome(ours, sql, DatabaseError) == want, sql


VIEW_STEPS = [
    "ALTER TABLE a ADD COLUMN c int DEFAULT 1",
    "SELECT * FROM av",
    "SELECT * FROM av2",
    "ALTER TABLE a RENAME COLUMN name TO title",
    "INSERT INTO a VALUES (4, 'four', 4, 4)",
    "SELECT * FROM av",
    "SELECT * FROM av2",
    "SELECT * FROM a WHERE title = 'four'",
    "ALTER TABLE a DROP COLUMN title",
    "ALTER TABLE a DROP COLUMN x",
    "ALTER TABLE av ADD COLUMN z int",
    "CREATE VIEW av3 AS SELECT * FROM a",
    "SELECT * FROM av3",
]


@pytest.mark.postgres
def test_views_keep_their_columns_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """A view reads the columns the table had when it was created: an added column is not
    among them, a renamed one keeps its place, and a column a view reads cannot be dropped."""

    with beside_postgres(tmp_path / "home", postgres_url, "a", CREATE, INSERT) as (ours, pg):
        try:
            for c in (ours, pg):
                c.execute("CREATE VIEW av AS SELECT * FROM a")
                c.execute("CREATE VIEW av2 AS SELECT id, name FROM av WHERE id > 1")
            for sql in VIEW_STEPS:
                want = outcome(pg, sql, sort=True)
                assert outcome(ours, sql, sort=True) == want, sql
        finally:
            pg.execute("DROP VIEW IF EXISTS av3, av2, av")


DROP_VIEWS = [
    "CREATE VIEW ids AS SELECT id FROM a WHERE id > 1",
    "CREATE VIEW named AS SELECT id, upper(name) AS up FROM a",
    "CREATE VIEW counted AS SELECT count(*) AS n FROM a",
    "CREATE VIEW pairs AS SELECT a.id, b.id AS other FROM a JOIN a AS b ON a.id = b.id + 1",
    "CREATE VIEW filtered AS SELECT id FROM a WHERE x IS NULL",
    "CREATE VIEW unioned AS SELECT id FROM a UNION ALL SELECT id FROM ids",
]
DROP_STEPS = [
    "ALTER TABLE a DROP COLUMN x",
    "ALTER TABLE a DROP COLUMN name",
    "DROP VIEW filtered",
    "ALTER TABLE a DROP COLUMN x",
    "INSERT INTO a VALUES (4, 'four')",
    "SELECT * FROM a",
    "SELECT * FROM ids",
    "SELECT * FROM named",
    "SELECT * FROM counted",
    "SELECT * FROM pairs",
    "SELECT * FROM unioned",
    "ALTER TABLE a DROP COLUMN id",
]


@pytest.mark.postgres
def test_a_column_no_view_reads_drops_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """DROP COLUMN is refused (2BP01) only while a view reads the column; the views that do
    not keep their rows."""

    with beside_postgres(tmp_path / "home", postgres_url, "a", CREATE, INSERT) as (ours, pg):
        try:
            for c in (ours, pg):
                for sql in DROP_VIEWS:
                    c.execute(sql)
            for sql in DROP_STEPS:
                want = outcome(pg, sql, sort=True)
                assert outcome(ours, sql, sort=True) == want, sql
        finally:
            pg.execute("DROP VIEW IF EXISTS unioned, filtered, pairs, counted, named, ids")


def test_a_rename_keeps_materialized_views_and_indexes(tmp_path: Path) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE t (k int, v int)")
    conn.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
    conn.execute("CREATE MATERIALIZED VIEW s AS SELECT sum(v) AS total FROM t")
    conn.execute("CREATE INDEX t_by_k ON t (k)")
    conn.execute("ALTER TABLE t RENAME COLUMN k TO key")
    conn.execute("INSERT INTO t VALUES (3, 30)")
    assert conn.execute("SELECT total FROM s").fetchall() == [(60,)]
    assert conn.execute("SELECT * FROM t WHERE key = 3").fetchall() == [(3, 30)]
    index = "SELECT indexdef FROM pg_indexes WHERE indexname = 't_by_k'"
    assert conn.execute(index).fetchall() == [
        ("CREATE INDEX t_by_k ON public.t USING btree (key)",)
    ]
    with pytest.raises(DatabaseError) as e:  # the view sums it
        conn.execute("ALTER TABLE t DROP COLUMN v")
    assert e.value.sqlstate == "2BP01" and "materialized view s" in str(e.value)
    conn.close()


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE t ADD COLUMN b int, ALTER COLUMN a SET STATISTICS 100",
        "ALTER TABLE t ALTER COLUMN a ADD GENERATED BY DEFAULT AS IDENTITY",
        "ALTER TABLE t ALTER COLUMN a SET STATISTICS 100",
    ],
)
def test_other_alter_table_forms_say_they_are_not_supported(tmp_path: Path, sql: str) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.execute("CREATE TABLE t (a int)")
    with pytest.raises(DatabaseError) as e:
        conn.execute(sql)
    assert e.value.sqlstate == "0A000" and "not supported" in str(e.value)
    conn.close()


def test_columns_survive_a_restart_and_views_see_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE t (k int, v text)")
    conn.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    conn.execute("ALTER TABLE t ADD COLUMN w int DEFAULT 5")
    conn.execute("ALTER TABLE t DROP COLUMN v")
    conn.execute("ALTER TABLE t RENAME COLUMN w TO weight")
    conn.close()

    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    assert sorted(conn.execute("SELECT * FROM t").fetchall()) == [(1, 5), (2, 5)]
    conn.execute("CREATE MATERIALIZED VIEW s AS SELECT sum(weight) AS total FROM t")
    conn.execute("INSERT INTO t VALUES (3, 10)")
    assert conn.execute("SELECT total FROM s").fetchall() == [(20,)]
    conn.execute("ALTER TABLE t ADD COLUMN z int")
    cur = conn.execute("SELECT * FROM t WHERE k = 3")
    assert [d[0] for d in cur.description] == ["k", "weight", "z"]
    assert cur.fetchall() == [(3, 10, None)]
    show = conn.execute("SHOW CREATE TABLE t").fetchall()[0][1]
    assert "weight" in show and " v " not in show and "z INT" in show
    conn.close()


def test_a_write_framed_before_a_change_lands_in_the_new_columns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    writer = changeflow.connect(home, host_seconds=0)
    other = changeflow.connect(home, host_seconds=0)
    other.autocommit = True
    other.execute("CREATE TABLE t (k int, v text, gone int)")
    writer.execute("INSERT INTO t VALUES (1, 'a', 9)")  # framed with three columns
    other.execute("ALTER TABLE t DROP COLUMN gone")
    other.execute("ALTER TABLE t ADD COLUMN extra int")
    writer.commit()
    other.execute("INSERT INTO t VALUES (2, 'b', 3)")
    assert sorted(other.execute("SELECT * FROM t").fetchall()) == [(1, "a", None), (2, "b", 3)]
    writer.close()
    other.close()


def test_a_change_cut_short_is_put_back_on_open(tmp_path: Path) -> None:
    """A process that stopped after changing the shard's schema, before the catalog: the
    next open gives the shard its item's columns back."""
    import pyarrow as pa

    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE t (k int, v text)")
    conn.execute("INSERT INTO t VALUES (1, 'a')")
    conn.execute("ALTER TABLE t ADD COLUMN w int")
    env = conn.env
    shard = env.catalog.load().by_name("t").id
    schema = env.storage.state(shard).schema
    env.storage.evolve(shard, schema.append(pa.field("cut", pa.int64())))  # then it stopped
    conn.close()

    conn = changeflow.connect(home, host_seconds=0)
    assert conn.env.storage.state(shard).schema == schema
    assert conn.execute("SELECT * FROM t").fetchall() == [(1, "a", None)]
    conn.close()


MV_SETUP = [
    "CREATE MATERIALIZED VIEW totals AS SELECT count(*) AS n, sum(x) AS sx FROM a",
    "CREATE MATERIALIZED VIEW everything AS SELECT * FROM a",
    "CREATE MATERIALIZED VIEW named AS SELECT id, name FROM a WHERE id > 1",
    "CREATE INDEX a_by_name ON a (name)",
]
MV_QUERIES = [
    "SELECT * FROM totals",
    "SELECT * FROM everything",
    "SELECT * FROM named",
    "SELECT * FROM a WHERE name = 'one'",
    "SELECT * FROM a",
]
MV_STEPS = [
    "ALTER TABLE a ADD COLUMN c int DEFAULT 7",
    "INSERT INTO a VALUES (4, 'four', 4, 40)",
    "UPDATE a SET c = c + 1, x = 9 WHERE id <= 2",
    "DELETE FROM a WHERE id = 3",
    "ALTER TABLE a ADD COLUMN d text",
    "UPDATE a SET d = name || '!' WHERE name IS NOT NULL",
    "ALTER TABLE a DROP COLUMN x",  # everything and totals read it
    "ALTER TABLE a DROP COLUMN name",  # everything, named (and the index here) read it
    "ALTER TABLE a DROP COLUMN c",  # read by no view
    "INSERT INTO a VALUES (5, 'five', 5, 'e')",
]


def _compare(ours, pg, sql: str) -> None:
    assert outcome(ours, sql, sort=True) == outcome(pg, sql, sort=True), sql


@pytest.mark.postgres
def test_materialized_views_and_indexes_keep_their_columns_as_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    """ADD COLUMN under materialized views and an index: they keep their columns and stay
    exact through later writes and a restart; a DROP COLUMN they read is refused (2BP01) as
    PostgreSQL refuses it, one no view reads is not."""
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "a", CREATE, INSERT) as (ours, pg):
        try:
            for sql in MV_SETUP:  # PostgreSQL's views are the same queries, kept current
                ours.execute(sql)
                pg.execute(sql.replace("MATERIALIZED VIEW", "VIEW"))
            for step in MV_STEPS:
                _compare(ours, pg, step)
                for sql in MV_QUERIES:
                    _compare(ours, pg, sql)
            ours.close()
            again = changeflow.connect(home, host_seconds=0)
            again.autocommit = True
            try:
                for step in [None, "INSERT INTO a VALUES (6, 'six', 6, 'f')"]:
                    if step is not None:
                        _compare(again, pg, step)
                    for sql in MV_QUERIES:
                        _compare(again, pg, sql)
            finally:
                again.close()
        finally:
            pg.execute("DROP VIEW IF EXISTS totals, everything, named")
