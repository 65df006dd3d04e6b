"""CDC sources (their own timeline, new files picked up, bad folders refused) and sinks."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import Connection, DatabaseError
from changeflow.cdc.files import write_messages
from changeflow.cdc.writer import CdcWriter
from changeflow.errors import InvalidInput
from changeflow.storage.ingest import retired_files
from changeflow.time import Antichain
from changeflow.updates import canonical_json


def as_json(order_id: int, name: str) -> str:
    return canonical_json({"id": order_id, "name": name})


class Feed:
    """A CDC v2 folder written step by step, a file a step."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.writer, self.t, self.n = folder, CdcWriter(), 0, 0

    def step(self, *rows: tuple[int, str, int]) -> None:
        updates = [(as_json(i, name), self.t, d) for i, name, d in rows]
        self.t += 1
        messages = list(self.writer.write(updates, Antichain([self.t])))
        write_messages(self.folder, messages, "jsonl", prefix=f"step{self.n:04d}")
        self.n += 1


@pytest.fixture
def conn(tmp_path: Path):
    c = changeflow.connect(tmp_path / "home", host_seconds=0)
    yield c
    c.close()


def rows(conn: Connection, sql: str) -> list[tuple]:
    return conn.execute(sql).fetchall()


def error(conn: Connection, sql: str) -> DatabaseError:
    with pytest.raises(DatabaseError) as caught:
        conn.execute(sql)
    return caught.value


def test_a_source_reads_its_folder_as_files_arrive(conn: Connection, tmp_path: Path) -> None:
    feed = Feed(tmp_path / "cdc")
    feed.step((1, "a", 1), (2, "b", 1))
    conn.execute(
        f"CREATE SOURCE orders FROM CDC '{feed.folder}' FORMAT JSON (id bigint NOT NULL, name text)"
    )
    assert rows(conn, "SELECT id, name FROM orders ORDER BY id") == [(1, "a"), (2, "b")]
    feed.step((1, "a", -1), (3, "c", 2))
    assert rows(conn, "SELECT id, count(*) FROM orders GROUP BY id ORDER BY id") == [
        (2, 1),
        (3, 2),
    ]
    assert rows(conn, "SHOW SOURCES") == [("orders", str(feed.folder), "External(orders)")]
    conn.execute(
        "CREATE MATERIALIZED VIEW names AS SELECT name, count(*) AS n FROM orders GROUP BY name"
    )
    feed.step((4, "c", 1))
    assert rows(conn, "SELECT name, n FROM names ORDER BY name") == [("b", 1), ("c", 3)]


def test_a_restarted_source_reads_only_new_files_and_a_dropped_one_forgets_them(
    tmp_path: Path,
) -> None:
    feed, home = Feed(tmp_path / "cdc"), tmp_path / "home"
    feed.step((1, "a", 1), (2, "b", 1))
    feed.step((3, "c", 1))
    with closing(changeflow.connect(home, host_seconds=0)) as conn:
        conn.execute(f"CREATE SOURCE s FROM CDC '{feed.folder}' FORMAT JSON (id bigint, name text)")
        assert rows(conn, "SELECT count(*) FROM s") == [(3,)]
        source = conn.env.catalog.load().get("s").id
        retired = retired_files(conn.env.storage, source)
    assert retired, "the files wholly below the source's upper are retired"
    for path in retired:  # not read again after a restart: garbage of the same size and time
        info = Path(path).stat()
        Path(path).write_bytes(b"x" * info.st_size)
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    feed.step((4, "d", 1))
    with closing(changeflow.connect(home, host_seconds=0)) as conn:
        assert rows(conn, "SELECT id FROM s ORDER BY id") == [(1,), (2,), (3,), (4,)]
        conn.execute("DROP SOURCE s")
        assert retired_files(conn.env.storage, source) == {}


def test_timelines_are_not_mixed(conn: Connection, tmp_path: Path) -> None:
    feed = Feed(tmp_path / "cdc")
    feed.step((1, "a", 1))
    other = Feed(tmp_path / "cdc2")
    other.step((1, "x", 1))
    conn.execute(f"CREATE SOURCE s FROM CDC '{feed.folder}' FORMAT JSON (id bigint, name text)")
    conn.execute(f"CREATE SOURCE s2 FROM CDC '{other.folder}' FORMAT JSON (id bigint, name text)")
    conn.execute("CREATE TABLE t (id bigint)")
    for ddl in (
        "CREATE VIEW v AS SELECT s.id FROM s JOIN t ON s.id = t.id",
        "CREATE MATERIALIZED VIEW v AS SELECT s.id FROM s JOIN s2 ON s.id = s2.id",
        "SELECT s.id FROM s JOIN t ON s.id = t.id",
    ):
        e = error(conn, ddl)
        assert e.sqlstate == "0A000"
        assert "multiple timelines within one dataflow are not supported" in str(e)
        assert "External(s)" in str(e)
    assert rows(conn, "SHOW VIEWS") == rows(conn, "SHOW MATERIALIZED VIEWS") == []
    conn.execute("BEGIN")
    conn.execute("SELECT * FROM t")
    e = error(conn, "SELECT * FROM s")
    assert "Transactions can only reference objects in the same timedomain" in str(e)
    conn.execute("ROLLBACK")


def test_sources_in_one_named_timeline_join(conn: Connection, tmp_path: Path) -> None:
    a, b = Feed(tmp_path / "a"), Feed(tmp_path / "b")
    a.step((1, "a", 1), (2, "b", 1))
    b.step((1, "x", 1))
    for name, feed in (("a", a), ("b", b)):
        conn.execute(
            f"CREATE SOURCE {name} FROM CDC '{feed.folder}' FORMAT JSON (id bigint, name text) "
            "WITH (TIMELINE = 'shop')"
        )
    assert rows(conn, "SELECT a.name, b.name FROM a JOIN b ON a.id = b.id") == [("a", "x")]


def test_a_bad_folder_or_definition_changes_nothing(conn: Connection, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "part-0.jsonl").write_text("this is not CDC\n")
    e = error(conn, f"CREATE SOURCE s FROM CDC '{bad}' FORMAT JSON (id bigint, name text)")
    assert 'source "s"' in str(e)
    e = error(conn, f"CREATE SOURCE s FROM CDC '{bad}' FORMAT JSON")
    assert "needs its columns" in str(e)
    e = error(conn, f"CREATE SOURCE s FROM CDC '{bad}' FORMAT XML (id bigint)")
    assert "FORMAT" in str(e)
    e = error(conn, f"CREATE SOURCE s FROM CDC '{tmp_path / 'none'}' FORMAT JSON (id bigint)")
    assert e.sqlstate == "58P01" and "no such file or folder" in str(e)  # as COPY FROM's
    assert rows(conn, "SHOW SOURCES") == []
    assert conn.env.storage.shards() == []


def test_a_sink_keeps_sqlite_exact(conn: Connection, tmp_path: Path) -> None:
    target = tmp_path / "out.sqlite"
    conn.execute("CREATE TABLE orders (id int NOT NULL, customer text, amount int)")
    conn.execute("INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 5), (3, 'ann', 7)")
    conn.execute(
        "CREATE MATERIALIZED VIEW totals AS SELECT customer, sum(amount) AS total FROM orders "
        "GROUP BY customer"
    )
    conn.execute(f"CREATE SINK totals_out FROM totals INTO 'sqlite:{target}' KEY (customer)")

    def target_rows() -> list[tuple]:
        with sqlite3.connect(target) as db:
            return sorted(db.execute("SELECT customer, total FROM totals_out").fetchall())

    table = [r[1] for r in rows(conn, "SHOW SINKS")]
    assert table == ["totals"]
    conn.execute("UPDATE orders SET amount = 1 WHERE id = 2")
    conn.env.tick()
    assert target_rows() == sorted(rows(conn, "SELECT customer, total FROM totals"))
    e = error(conn, f"CREATE SINK bad FROM totals INTO 'sqlite:{target}' KEY (nope)")
    assert e.sqlstate == "42703"
    conn.execute("DROP MATERIALIZED VIEW totals CASCADE")
    assert rows(conn, "SHOW SINKS") == []


def test_insert_select_from_another_timeline_is_refused(conn: Connection, tmp_path: Path) -> None:
    feed = Feed(tmp_path / "cdc")
    feed.step((1, "a", 1))
    conn.execute(f"CREATE SOURCE s FROM CDC '{feed.folder}' FORMAT JSON (id bigint, name text)")
    conn.execute("CREATE TABLE t (id bigint, name text)")
    e = error(conn, "INSERT INTO t SELECT id, name FROM s")
    assert e.sqlstate == "0A000" and "External(s)" in str(e)
    assert rows(conn, "SELECT count(*) FROM t") == [(0,)]


@pytest.fixture
def spark_conn(spark, tmp_path: Path, monkeypatch):
    """A connection whose sources decode every folder on Spark."""
    monkeypatch.setenv("CHANGEFLOW_SPARK_INGEST_BYTES", "0")
    c = changeflow.connect(tmp_path / "spark-home", host_seconds=0)
    yield c
    c.close()


def _tasks(spark) -> int:
    listed = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    return sum(listed.apply(i).completedTasks() for i in range(listed.size()))


@pytest.mark.spark
def test_a_large_source_decodes_on_spark(spark, spark_conn: Connection, tmp_path: Path) -> None:
    before = _tasks(spark)
    test_a_source_reads_its_folder_as_files_arrive(spark_conn, tmp_path)
    assert _tasks(spark) > before, "Spark decoded the folder"


@pytest.mark.spark
def test_a_source_decoded_on_spark_refuses_data_that_does_not_fit(
    spark_conn: Connection, tmp_path: Path
) -> None:
    feed = Feed(tmp_path / "cdc")
    feed.step((1, "a", 1))
    sql = f"CREATE SOURCE s FROM CDC '{feed.folder}' FORMAT JSON (id bigint NOT NULL, name text)"
    spark_conn.execute(sql)
    writer, t = feed.writer, feed.t
    bad = [(canonical_json({"id": 2, "nam": "b"}), t, 1)]
    write_messages(feed.folder, list(writer.write(bad, Antichain([t + 1]))), "jsonl", "bad")
    e = error(spark_conn, "SELECT * FROM s")
    assert "shard" in str(e) and "nam" in str(e), e
    shard = spark_conn.env.storage.state(spark_conn.env.catalog.load().get("s").id)
    assert shard.upper == Antichain([t]), "nothing was appended"


def _tables(target: str) -> set[str]:
    """The tables of a sink's target: a SQLite file or a PostgreSQL database."""
    if target.startswith("sqlite:"):
        if not Path(target[7:]).exists():
            return set()
        with sqlite3.connect(target[7:]) as db:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    import psycopg

    with psycopg.connect(target) as db:
        found = db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {r[0] for r in found}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sink_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'out.sqlite'}"
    from postgres_server import database_for_test

    return database_for_test(request.getfixturevalue("postgres_url"), "nullkey")


def test_a_null_in_a_sink_key_is_refused_up_front(conn: Connection, sink_target: str) -> None:
    """CREATE SINK over rows with a NULL key column names the column and a row (23502) and
    leaves no table, no checkpoint and no hold; a NULL arriving later stops the sink with the
    same error, and the target keeps what it had."""
    conn.execute("CREATE TABLE emp (id int NOT NULL, dept text, pay int)")
    conn.execute("INSERT INTO emp VALUES (1, NULL, 10), (2, NULL, 20), (3, 'a', 5)")
    conn.execute(
        "CREATE MATERIALIZED VIEW per AS SELECT dept, sum(pay) AS total FROM emp GROUP BY dept"
    )
    for source, shown in [("emp", "id=1, dept=NULL, pay=10"), ("per", "dept=NULL, total=30")]:
        e = error(conn, f"CREATE SINK out_{source} FROM {source} INTO '{sink_target}' KEY (dept)")
        assert e.sqlstate == "23502", e
        assert "key column 'dept' is NULL in" in str(e) and shown in str(e), e
        assert "rows at frontier" not in str(e) and "earlier transaction" not in str(e)
    assert _tables(sink_target) == set()
    assert rows(conn, "SHOW SINKS") == []
    shard = conn.env.catalog.load().get("emp").shard
    held = conn.env.storage.registered_readers(shard)
    assert not [h for h in held if "sink" in h or "materialization" in h], held
    conn.execute("DELETE FROM emp WHERE dept IS NULL")
    conn.execute(f"CREATE SINK later FROM emp INTO '{sink_target}' KEY (dept)")
    conn.execute("INSERT INTO emp VALUES (4, NULL, 1)")
    with pytest.raises(InvalidInput) as caught:
        conn.env.tick()
    assert "key column 'dept' is NULL in 1 row (the first: id=4, dept=NULL" in str(caught.value)
    assert "later" in _tables(sink_target)


def test_a_sink_starts_from_its_input_now(conn: Connection, sink_target: str) -> None:
    """A sink of a materialized view created just before starts from the view's rows now, not
    from the view's first times (a sum over no rows yet is NULL: a NULL key there was refused
    as if the view were incomplete); nor from a table's history (a NULL key inserted, then
    deleted)."""
    conn.execute("CREATE TABLE st (k int, v int)")
    conn.execute("INSERT INTO st VALUES (1, 10), (2, 20), (1, 5), (NULL, 1)")
    conn.execute("DELETE FROM st WHERE k IS NULL")
    conn.execute("CREATE MATERIALIZED VIEW g AS SELECT sum(v) AS s, count(*) AS n FROM st")
    conn.execute(f"CREATE SINK g_out FROM g INTO '{sink_target}' KEY (s)")
    conn.execute(f"CREATE SINK st_out FROM st INTO '{sink_target}' KEY (k, v)")
    assert {"g_out", "st_out"} <= _tables(sink_target)
    conn.execute("INSERT INTO st VALUES (3, 1)")
    conn.env.tick()
    read = _target_rows(sink_target)
    assert read("SELECT s, n FROM g_out") == rows(conn, "SELECT s, n FROM g") == [(36, 4)]
    assert read("SELECT k, v FROM st_out") == sorted(rows(conn, "SELECT k, v FROM st"))


def _target_rows(target: str) -> Callable[[str], list[tuple]]:
    """A reader of a sink's target: a query's rows, sorted."""
    if target.startswith("sqlite:"):

        def read(sql: str) -> list[tuple]:
            with sqlite3.connect(target[7:]) as db:
                return sorted(db.execute(sql).fetchall())

        return read
    import psycopg

    def read_pg(sql: str) -> list[tuple]:
        with psycopg.connect(target) as db:
            return sorted(db.execute(sql).fetchall())

    return read_pg


def test_a_sink_writes_numerics_as_the_view_shows_them(conn: Connection, tmp_path: Path) -> None:
    """A numeric(p, s) column is written at its scale, an unconstrained one (an average, a
    maximum) as a query of the view shows it: without its storage's ten trailing zeros."""
    target = tmp_path / "out.sqlite"
    conn.execute("CREATE TABLE nn (id int NOT NULL, g int, x numeric(12,2), u numeric)")
    conn.execute("INSERT INTO nn VALUES (1, 1, 287.5, 1.5), (2, 1, 3, 2.125), (3, 2, 0.1, 7)")
    conn.execute(
        "CREATE MATERIALIZED VIEW nv AS SELECT g, sum(x) AS s, avg(x) AS a, max(u) AS mu"
        " FROM nn GROUP BY g"
    )
    conn.execute(f"CREATE SINK nv_out FROM nv INTO 'sqlite:{target}' KEY (g)")
    conn.execute("UPDATE nn SET u = 100 WHERE id = 3")
    conn.env.tick()
    with closing(sqlite3.connect(target)) as db:
        got = sorted(db.execute("SELECT g, s, a, mu FROM nv_out").fetchall())
    shown = [(g, *map(str, rest)) for g, *rest in rows(conn, "SELECT g, s, a, mu FROM nv")]
    assert got == sorted(shown) == [(1, "290.50", "145.25", "2.125"), (2, "0.10", "0.1", "100")]
