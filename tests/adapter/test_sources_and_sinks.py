"""CDC sources (their own timeline, new files picked up, bad folders refused) and sinks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import Connection, DatabaseError
from changeflow.cdc.files import write_messages
from changeflow.cdc.writer import CdcWriter
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
