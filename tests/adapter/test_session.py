"""The adapter end to end through ``changeflow.connect``: DDL, DML, queries, views, indexes,
transactions, AS OF, SUBSCRIBE, timelines and errors, on a real home (SQLite consensus)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import (
    Connection,
    DatabaseError,
    IntegrityError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
)
from changeflow.compute import plan as P
from changeflow.config import Config


def open_home(home: Path, **kwargs) -> Connection:
    return changeflow.connect(home, host_seconds=0, **kwargs)


@pytest.fixture
def conn(tmp_path: Path):
    c = open_home(tmp_path / "home")
    yield c
    c.close()


def rows(conn: Connection, sql: str, params=None) -> list[tuple]:
    return conn.execute(sql, params).fetchall()


def error(conn: Connection, sql: str, kind=DatabaseError) -> Exception:
    with pytest.raises(kind) as caught:
        conn.execute(sql)
    return caught.value


def test_table_round_trip(conn: Connection) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id int NOT NULL, name text, price numeric(10,2) DEFAULT 1.5)")
    assert cur.statusmessage == "CREATE TABLE"
    cur.execute("INSERT INTO t VALUES (1, 'a', 2.25), (2, 'b', NULL)")
    assert cur.rowcount == 2 and cur.statusmessage == "INSERT 0 2"
    cur.execute("INSERT INTO t (id, name) VALUES (%s, %s)", (3, "it's"))
    cur.execute("SELECT id, name, price FROM t ORDER BY id")
    assert [d[0] for d in cur.description] == ["id", "name", "price"]
    assert cur.fetchall() == [
        (1, "a", Decimal("2.25")),
        (2, "b", None),
        (3, "it's", Decimal("1.5")),
    ]
    cur.execute("UPDATE t SET name = upper(name) WHERE id < 3")
    assert cur.statusmessage == "UPDATE 2"
    cur.execute("DELETE FROM t WHERE id = 2")
    assert cur.statusmessage == "DELETE 1"
    assert rows(conn, "SELECT id, name FROM t ORDER BY id") == [(1, "A"), (3, "it's")]


def test_bad_input_changes_nothing(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (id int NOT NULL, name text)")
    conn.execute("INSERT INTO t VALUES (1, 'a')")
    e = error(conn, "INSERT INTO t VALUES (2, 'b'), (NULL, 'c')", IntegrityError)
    assert e.sqlstate == "23502" and '"id"' in str(e)
    assert error(conn, "SELECT nope FROM t").sqlstate == "42703"
    assert error(conn, "SELECT * FROM nowhere").sqlstate == "42P01"
    assert error(conn, "INSERT INTO nowhere VALUES (1)").sqlstate == "42P01"
    assert error(conn, "CREATE TABLE t (x int)").sqlstate == "42P07"
    assert error(conn, "SELEC 1").sqlstate == "42601"
    assert rows(conn, "SELECT * FROM t") == [(1, "a")]


def test_views_indexes_and_materialized_views_agree(conn: Connection) -> None:
    conn.execute("CREATE TABLE orders (id int NOT NULL, customer text, amount int)")
    conn.execute("CREATE TABLE customers (name text, region text)")
    conn.execute("INSERT INTO customers VALUES ('ann', 'north'), ('bob', 'south')")
    conn.execute("INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 5), (3, 'ann', 7)")
    query = (
        "SELECT c.region, count(*) AS n, sum(o.amount) AS total FROM orders o "
        "JOIN customers c ON o.customer = c.name GROUP BY c.region"
    )
    conn.execute(f"CREATE VIEW by_region AS {query}")
    conn.execute(f"CREATE MATERIALIZED VIEW by_region_mv AS {query}")
    conn.execute("CREATE INDEX by_region_idx ON by_region (region)")
    expected = [("north", 2, 17), ("south", 1, 5)]
    for source in ("by_region", "by_region_mv", f"({query}) q"):
        assert rows(conn, f"SELECT * FROM {source} ORDER BY region") == expected
    conn.execute("INSERT INTO orders VALUES (4, 'bob', 1)")
    conn.execute("DELETE FROM orders WHERE id = 1")
    expected = [("north", 1, 7), ("south", 2, 6)]
    for source in ("by_region", "by_region_mv"):
        assert rows(conn, f"SELECT * FROM {source} ORDER BY region") == expected
    assert rows(conn, "SHOW MATERIALIZED VIEWS") == [("by_region_mv",)]
    assert rows(conn, "SHOW INDEXES") == [("by_region_idx", "by_region", "region")]
    assert rows(conn, "SHOW VIEWS") == [("by_region",)]
    assert rows(conn, "SHOW TABLES") == [("customers",), ("orders",)]
    ((name, sql),) = rows(conn, "SHOW CREATE VIEW by_region")
    assert name == "by_region" and sql.startswith("CREATE VIEW by_region AS SELECT")
    assert rows(conn, "SHOW COLUMNS FROM orders") == [
        ("id", "false", "integer"),
        ("customer", "true", "text"),
        ("amount", "true", "integer"),
    ]
    plan = rows(conn, "EXPLAIN SELECT * FROM by_region_mv")
    assert any("Get" in line for (line,) in plan)


def test_drop_refuses_to_orphan_and_cascades(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("CREATE MATERIALIZED VIEW m AS SELECT a FROM t")
    conn.execute("CREATE VIEW v AS SELECT a FROM m")
    e = error(conn, "DROP TABLE t")
    assert e.sqlstate == "2BP01" and '"m"' in str(e)
    assert rows(conn, "SHOW TABLES") == [("t",)]
    conn.execute("DROP TABLE t CASCADE")
    assert rows(conn, "SHOW TABLES") == rows(conn, "SHOW VIEWS") == []
    assert rows(conn, "SHOW MATERIALIZED VIEWS") == []
    assert conn.env.storage.shards() == []
    conn.execute("DROP TABLE IF EXISTS t")
    conn.execute("CREATE TABLE t (b text)")  # the name is free again, with a new GlobalId
    ids = sorted(conn.env.catalog.load().items)
    assert ids == ["u4"]


def test_rename(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.execute("ALTER TABLE t RENAME TO u")
    assert rows(conn, "SELECT a FROM u") == [(1,)]
    assert error(conn, "SELECT a FROM t").sqlstate == "42P01"
    assert rows(conn, "SHOW CREATE TABLE u")[0][1].startswith("CREATE TABLE u")


def test_writes_to_views_are_refused(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("CREATE VIEW v AS SELECT a FROM t")
    assert error(conn, "INSERT INTO v VALUES (1)").sqlstate == "42809"


def test_transactions(tmp_path: Path) -> None:
    a, b = open_home(tmp_path / "h"), open_home(tmp_path / "h")
    try:
        a.execute("CREATE TABLE t (k int, v int)")
        a.execute("INSERT INTO t VALUES (1, 10)")
        # write-only: buffered, invisible until COMMIT, then all at one timestamp
        a.execute("BEGIN")
        a.execute("INSERT INTO t VALUES (2, 20)")
        a.execute("INSERT INTO t VALUES (3, 30)")
        assert rows(b, "SELECT count(*) FROM t") == [(1,)]
        a.execute("COMMIT")
        assert rows(b, "SELECT count(*) FROM t") == [(3,)]
        # rollback discards
        a.execute("BEGIN")
        a.execute("DELETE FROM t")
        a.execute("ROLLBACK")
        assert rows(b, "SELECT count(*) FROM t") == [(3,)]
        # one timestamp for every read; a write after reads sees itself, and its commit is
        # refused when what the transaction read has changed since
        a.execute("BEGIN")
        assert rows(a, "SELECT count(*) FROM t") == [(3,)]
        b.execute("INSERT INTO t VALUES (4, 40)")
        assert rows(a, "SELECT count(*) FROM t") == [(3,)]
        a.execute("INSERT INTO t VALUES (5, 50)")
        assert rows(a, "SELECT count(*) FROM t") == [(4,)]
        assert error(a, "COMMIT", OperationalError).sqlstate == "40001"
        assert rows(a, "SELECT count(*) FROM t") == [(4,)]
        # read-then-write: a write in between to rows it read is a serialization failure,
        # nothing applied; a write to other rows of the table is no conflict
        a.execute("BEGIN")
        a.execute("UPDATE t SET v = v + 1 WHERE k = 1")
        b.execute("UPDATE t SET v = 0 WHERE k = 2")
        b.execute("INSERT INTO t VALUES (5, 50)")
        a.execute("COMMIT")
        assert rows(b, "SELECT k, v FROM t ORDER BY k") == [
            (1, 11),
            (2, 0),
            (3, 30),
            (4, 40),
            (5, 50),
        ]
        a.execute("BEGIN")
        a.execute("UPDATE t SET v = v + 1 WHERE k = 1")
        b.execute("INSERT INTO t VALUES (1, 12)")  # a row its WHERE matches
        e = error(a, "COMMIT", OperationalError)
        assert e.sqlstate == "40001"
        a.execute("BEGIN")
        a.execute("DELETE FROM t WHERE k = 1")
        b.execute("UPDATE t SET v = 0 WHERE k = 1 AND v = 12")
        e = error(a, "COMMIT", OperationalError)
        assert e.sqlstate == "40001"
        assert rows(b, "SELECT k, v FROM t ORDER BY k") == [
            (1, 0),
            (1, 11),
            (2, 0),
            (3, 30),
            (4, 40),
            (5, 50),
        ]
    finally:
        a.close()
        b.close()


def test_dbapi_transactions_without_autocommit(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int)")
    conn.autocommit = False
    conn.execute("INSERT INTO t VALUES (1)")
    conn.rollback()
    conn.execute("INSERT INTO t VALUES (2)")
    conn.commit()
    assert rows(conn, "SELECT a FROM t") == [(2,)]
    conn.commit()


def test_as_of_reads_the_past(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("INSERT INTO t VALUES (1)")
    ts = conn.env.oracle("EpochMilliseconds").read_ts()
    conn.execute("INSERT INTO t VALUES (2)")
    assert rows(conn, f"SELECT a FROM t AS OF {ts}") == [(1,)]
    assert sorted(rows(conn, "SELECT a FROM t")) == [(1,), (2,)]
    e = error(conn, f"SELECT a FROM t AS OF {ts + 10**9}")
    assert e.sqlstate == "22003" and "latest" in str(e)


def test_subscribe(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("INSERT INTO t VALUES (1)")
    start = conn.env.oracle("EpochMilliseconds").read_ts()
    conn.execute("INSERT INTO t VALUES (2)")
    conn.execute("DELETE FROM t WHERE a = 1")
    end = conn.env.oracle("EpochMilliseconds").read_ts() + 1
    got = list(conn.subscribe(f"SUBSCRIBE TO t AS OF {start} UP TO {end}"))
    assert got[0] == (start, 1, 1)
    assert [(d, a) for _, d, a in got[1:]] == [(1, 2), (-1, 1)]
    times = [t for t, *_ in got]
    assert times == sorted(times) and all(start <= t < end for t in times)
    cur = conn.cursor()
    cur.execute(f"SUBSCRIBE (SELECT a FROM t) WITH (PROGRESS) AS OF {end - 1} UP TO {end}")
    assert [d[0] for d in cur.description] == ["mz_timestamp", "mz_progressed", "mz_diff", "a"]
    assert cur.fetchall() == [(end - 1, False, 1, 2)]


def test_subscribe_sees_new_writes(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int)")
    sub = conn.subscribe("t")
    assert sub.poll(0.2) == []
    other = conn.cursor()
    other.execute("INSERT INTO t VALUES (7)")
    got = sub.poll(5.0)
    assert [(d, a) for _, d, a in got] == [(1, 7)]


def test_mz_now_rules(conn: Connection) -> None:
    conn.execute("CREATE TABLE events (at bigint)")
    conn.execute("CREATE MATERIALIZED VIEW recent AS SELECT at FROM events WHERE mz_now() < at")
    e = error(conn, "CREATE VIEW bad AS SELECT at FROM events WHERE mz_now() < at OR at > 1")
    assert e.sqlstate == "0A000"
    e = error(conn, "SELECT mz_now() FROM events")
    assert e.sqlstate == "0A000"
    now = conn.env.oracle("EpochMilliseconds").read_ts()
    conn.execute("INSERT INTO events VALUES (%s), (%s)", (now - 1000, now + 10**9))
    assert rows(conn, "SELECT at FROM recent") == [(now + 10**9,)]


def test_ddl_inside_a_transaction(conn: Connection) -> None:
    """CREATE is applied at once and undone by ROLLBACK; DROP takes the item away at once and
    releases it at COMMIT (ROLLBACK puts it back); other DDL refuses to run inside a
    transaction block."""
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.execute("CREATE MATERIALIZED VIEW tv AS SELECT a * 2 AS b FROM t")
    conn.execute("COMMIT")
    assert rows(conn, "SELECT b FROM tv") == [(2,)]
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE u (a int)")
    conn.execute("CREATE INDEX u_a ON u (a)")
    assert error(conn, "ALTER TABLE t ADD COLUMN c int").sqlstate == "25001"  # tv reads t
    conn.execute("ROLLBACK")
    conn.execute("BEGIN")
    conn.execute("DROP MATERIALIZED VIEW tv")
    conn.execute("ALTER TABLE t ADD COLUMN c int")  # no view reads t now
    conn.execute("ROLLBACK")
    assert error(conn, "SELECT * FROM u").sqlstate == "42P01"
    assert rows(conn, "SELECT b FROM tv") == [(2,)]
    conn.execute("BEGIN")
    assert error(conn, "DROP TABLE nope").sqlstate == "42P01"
    conn.execute("ROLLBACK")
    conn.execute("BEGIN")
    conn.execute("DROP MATERIALIZED VIEW tv")
    conn.execute("DROP TABLE IF EXISTS nope")
    conn.execute("SAVEPOINT s")
    assert error(conn, "SELECT b FROM tv").sqlstate == "42P01"  # gone for the transaction
    conn.execute("ROLLBACK TO SAVEPOINT s")
    conn.execute("COMMIT")
    assert error(conn, "SELECT * FROM tv").sqlstate == "42P01"
    assert [r[0] for r in rows(conn, "SHOW TABLES")] == ["t"]


def test_sql_result_converts(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int, b text)")
    conn.execute("INSERT INTO t VALUES (1, 'x'), (2, NULL)")
    result = conn.sql("SELECT a, b FROM t ORDER BY a")
    assert result.to_arrow().to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": None}]
    assert list(result.to_pandas()["a"]) == [1, 2]


def test_unsupported_is_clear(conn: Connection) -> None:
    e = error(conn, "SUBSCRIBE TO t WITH (FOO)", ProgrammingError)
    assert "FOO" in str(e)
    with pytest.raises(NotSupportedError):
        conn.execute("SELECT * FROM (SELECT 1) AS x LATERAL nonsense")


def test_a_second_process_sees_acknowledged_writes(tmp_path: Path) -> None:
    """Strict serializability across processes: a write acknowledged in one process is seen
    by a read that starts after it in another."""
    import subprocess
    import sys

    home = tmp_path / "h"
    with open_home(home) as c:
        c.execute("CREATE TABLE t (a int)")
    script = (
        "import changeflow, sys\n"
        f"c = changeflow.connect({str(home)!r}, host_seconds=0)\n"
        "c.execute('INSERT INTO t VALUES (%s)', (int(sys.argv[1]),))\n"
        "print(c.execute('SELECT count(*) FROM t').fetchone()[0])\n"
        "c.close()\n"
    )
    for i in range(3):
        out = subprocess.run(
            [sys.executable, "-c", script, str(i)], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == str(i + 1)
    with open_home(home) as c:
        assert sorted(rows(c, "SELECT a FROM t")) == [(0,), (1,), (2,)]


def test_connect_default_config(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with changeflow.connect(host_seconds=0) as c:
        assert c.env.config.home == Config.load().home


def test_concurrent_sessions_commit_in_groups(tmp_path: Path) -> None:
    """Sessions of one process share the write log through group commit: every acknowledged
    insert is there once, and all of them may share log entries."""
    import threading

    from changeflow.adapter.session import Session

    with open_home(tmp_path / "h") as conn:
        conn.execute("CREATE TABLE t (worker int, i int)")
        before = conn.env.committer.entries

        def work(worker: int) -> None:
            session = Session(conn.env)
            for i in range(25):
                session.execute(f"INSERT INTO t VALUES ({worker}, {i})")

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = sorted(rows(conn, "SELECT worker, i FROM t"))
        assert got == [(w, i) for w in range(4) for i in range(25)]
        assert 0 < conn.env.committer.entries - before <= 100


@pytest.mark.postgres
def test_two_processes_on_postgresql_consensus(postgres_url: str, tmp_path: Path) -> None:
    from postgres_server import database_for_test

    url = database_for_test(postgres_url, "adapter_pg")
    config = Config.load(home=str(tmp_path / "h"), consensus=url)
    a = changeflow.connect(config=config, host_seconds=0)
    b = changeflow.connect(config=config, host_seconds=0)
    try:
        a.execute("CREATE TABLE t (k int, v int)")
        a.execute("CREATE MATERIALIZED VIEW s AS SELECT sum(v) AS total FROM t")
        a.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
        assert rows(b, "SELECT total FROM s") == [(30,)]
        b.execute("BEGIN")
        b.execute("UPDATE t SET v = 0 WHERE k = 1")
        a.execute("DELETE FROM t WHERE k = 1")
        assert error(b, "COMMIT").sqlstate == "40001"
        assert rows(a, "SELECT total FROM s") == [(20,)]
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("point", ["ddl.before_catalog", "txns.before_commit"])
def test_a_crash_in_ddl_or_a_write_leaves_things_before_or_after(tmp_path: Path, point) -> None:
    import os
    import subprocess
    import sys

    from changeflow.failpoints import ENV, EXIT_CODE

    home = tmp_path / "h"
    with open_home(home) as c:
        c.execute("CREATE TABLE t (a int)")
        c.execute("INSERT INTO t VALUES (1)")
    script = (
        "import changeflow\n"
        f"c = changeflow.connect({str(home)!r}, host_seconds=0)\n"
        "c.execute('BEGIN')\n"
        "c.execute('INSERT INTO t VALUES (2)')\n"
        "c.execute('INSERT INTO t VALUES (3)')\n"
        "c.execute('COMMIT')\n"
        "c.execute('CREATE MATERIALIZED VIEW m AS SELECT count(*) AS n FROM t')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, ENV: point})
    assert done.returncode == EXIT_CODE
    with open_home(home) as c:
        assert rows(c, "SHOW MATERIALIZED VIEWS") == []
        expected = [(1,)] if point == "txns.before_commit" else [(1,), (2,), (3,)]
        assert sorted(rows(c, "SELECT a FROM t")) == expected
        c.execute("CREATE MATERIALIZED VIEW m AS SELECT count(*) AS n FROM t")
        assert rows(c, "SELECT n FROM m") == [(len(expected),)]


def test_history_is_kept_for_a_window_then_reads_before_it_are_refused(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("INSERT INTO t VALUES (1)")
    old = conn.env.oracle("EpochMilliseconds").read_ts()
    conn.execute("INSERT INTO t VALUES (2)")
    now = conn.env.oracle("EpochMilliseconds").read_ts()
    conn.env.tick()  # keeps an hour: the old time is still readable
    assert rows(conn, f"SELECT a FROM t AS OF {old}") == [(1,)]
    conn.env.allow_compaction(conn.env.catalog.load(), now)
    e = error(conn, f"SELECT a FROM t AS OF {old}")
    assert e.sqlstate == "22003" and "compacted" in str(e)
    assert sorted(rows(conn, f"SELECT a FROM t AS OF {now}")) == [(1,), (2,)]


@pytest.mark.spark
def test_sql_result_to_spark(conn: Connection, spark) -> None:
    conn.execute("CREATE TABLE t (a int, b text)")
    conn.execute("INSERT INTO t VALUES (1, 'x'), (2, NULL)")
    frame = conn.sql("SELECT a, b FROM t").to_spark(spark)
    assert sorted(tuple(r) for r in frame.collect()) == [(1, "x"), (2, None)]


@pytest.mark.spark
def test_big_queries_run_on_spark_with_the_same_answers(
    conn: Connection, spark, monkeypatch
) -> None:
    from changeflow.adapter import environment

    conn.execute("CREATE TABLE t (k int, v int, s text)")
    conn.execute(
        "INSERT INTO t VALUES " + ", ".join(f"({i % 7}, {i}, 's{i % 3}')" for i in range(200))
    )
    queries = [
        "SELECT k, count(*), sum(v) FROM t GROUP BY k",
        "SELECT a.s, count(*) FROM t a JOIN t b ON a.k = b.k WHERE a.v < b.v GROUP BY a.s",
        "SELECT DISTINCT s FROM t",
        "SELECT v, s FROM t ORDER BY v DESC LIMIT 5 OFFSET 3",
    ]

    def answers() -> list[list[tuple]]:  # in order where the query orders them
        return [rows(conn, q) if "ORDER BY" in q else sorted(rows(conn, q)) for q in queries]

    small = answers()
    for name in ("SPARK_ROWS", "COLUMNAR_ROWS", "PROCESS_ROWS"):
        monkeypatch.setattr(environment, name, 0)
    calls = []
    original = environment.Environment._evaluate_on_spark
    monkeypatch.setattr(
        environment.Environment,
        "_evaluate_on_spark",
        lambda self, *a: calls.append(a) or original(self, *a),
    )
    assert answers() == small
    assert len(calls) == len(queries)
    limited = calls[-1][0]  # only the rows LIMIT and OFFSET can show come back from Spark
    assert isinstance(limited, P.TopK) and (limited.limit, limited.offset) == (8, 0)


def test_big_queries_run_on_columns_with_the_same_answers(conn: Connection, monkeypatch) -> None:
    """Above the row operators' size, a query runs on the snapshot's Arrow columns (no Spark):
    NULL group keys, sums, averages, count(DISTINCT), joins, as the row operators answer."""
    from changeflow.adapter import environment

    conn.execute("CREATE TABLE t (k int, v bigint, n numeric, f double precision, s text)")
    values = ", ".join(
        f"({'NULL' if i % 5 == 0 else i % 7}, {i * 10**9}, {i}.{i % 10}5, {i / 3}, "
        f"{'NULL' if i % 4 == 0 else repr('s' + str(i % 3))})"
        for i in range(200)
    )
    conn.execute("INSERT INTO t VALUES " + values)
    conn.execute("DELETE FROM t WHERE v < 10 * 10^9")
    queries = [
        "SELECT count(*) FROM t",
        "SELECT k, count(*), sum(v), sum(n), avg(n), count(DISTINCT s), min(s), max(f)"
        " FROM t GROUP BY k",
        "SELECT a.s, count(*), sum(b.k) FROM t a JOIN t b ON a.k = b.k WHERE a.v < b.v"
        " GROUP BY a.s",
        "SELECT DISTINCT s FROM t",
        "SELECT k, avg(f) FROM t WHERE s LIKE 's1%' GROUP BY k",
    ]
    small = [sorted(rows(conn, q), key=str) for q in queries]
    monkeypatch.setattr(environment, "COLUMNAR_ROWS", 0)
    answered = []
    original = environment.Environment._evaluate_columnar
    monkeypatch.setattr(
        environment.Environment,
        "_evaluate_columnar",
        lambda self, *a: answered.append(out := original(self, *a)) or out,
    )
    monkeypatch.setattr(
        environment.Environment, "_evaluate_on_spark", lambda *a: pytest.fail("Spark ran")
    )
    big = [sorted(rows(conn, q), key=str) for q in queries]
    assert all(a is not None for a in answered) and len(answered) == len(queries)
    for ours, reference in zip(big, small, strict=True):
        assert len(ours) == len(reference)
        for a, b in zip(ours, reference, strict=True):
            assert all(
                x == y or (isinstance(x, float) and abs(x - y) < 1e-9 * max(1, abs(y)))
                for x, y in zip(a, b, strict=True)
            ), (a, b)


def test_assignment_rounds_numerics_and_checks_lengths(conn: Connection) -> None:
    conn.execute("CREATE TABLE t (p numeric(4,2), v varchar(3))")
    conn.execute("INSERT INTO t VALUES (1.235, 'abc'), (-1.005, NULL)")
    assert sorted(rows(conn, "SELECT p, v FROM t"), key=str) == [
        (Decimal("-1.01"), None),
        (Decimal("1.24"), "abc"),
    ]
    assert error(conn, "INSERT INTO t VALUES (1, 'abcd')").sqlstate == "22001"
    assert error(conn, "INSERT INTO t VALUES (100, 'a')").sqlstate == "22003"
    assert error(conn, "UPDATE t SET p = p * 100").sqlstate == "22003"
    assert len(rows(conn, "SELECT * FROM t")) == 2


def test_a_described_query_is_planned_once_unless_the_catalog_changed(
    conn: Connection, monkeypatch
) -> None:
    """A portal's query is planned when it is described and run with that plan (described
    again, its plan is the one kept for its text); a catalog change in between (the table
    dropped and made again) makes its run plan it again."""
    from changeflow.adapter.sql import query as Q
    from changeflow.adapter.sql.statements import parse

    conn.execute("CREATE TABLE t (a int)")
    conn.execute("INSERT INTO t VALUES (1)")
    planned = []
    original = Q.plan_query
    monkeypatch.setattr(Q, "plan_query", lambda *a, **k: planned.append(1) or original(*a, **k))
    session = conn.session
    stmt = parse("SELECT a FROM t")
    session.describe(stmt, keep=True)
    assert session.run(stmt).rows == [(1,)] and len(planned) == 1
    session.describe(stmt, keep=True)
    assert len(planned) == 1
    conn.execute("DROP TABLE t")
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("INSERT INTO t VALUES (2)")
    assert session.run(stmt).rows == [(2,)] and len(planned) == 2


def test_the_host_moves_a_since_only_once_it_is_far_enough_behind(conn: Connection) -> None:
    """Each move of a since is a consensus write that commits queue behind: the host's tick
    leaves one that is less than a slack behind where it may go."""
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("INSERT INTO t VALUES (1)")
    env = conn.env
    shard = env.catalog.load().get("t").id  # type: ignore[union-attr]
    state = env.catalog.load()
    start = env.oracle("EpochMilliseconds").read_ts() - 1_000
    env.allow_compaction(state, start)
    assert env.storage.state(shard).since.elements == (start,)
    env.allow_compaction(state, start + 500, slack=1_000)  # within the slack: stays
    assert env.storage.state(shard).since.elements == (start,)
    env.allow_compaction(state, start + 1_500, slack=1_000)
    assert env.storage.state(shard).since.elements == (start + 1_500,)


def test_drop_then_create_of_one_name_in_a_transaction(conn: Connection) -> None:
    """DROP then CREATE of the same names in one transaction (as migrations and pandas'
    to_sql(if_exists="replace") run them): the new items at COMMIT; ROLLBACK, or ROLLBACK TO
    a savepoint before the DROP, puts the old ones back, their rows and views with them."""
    conn.execute("CREATE TABLE r (a int)")
    conn.execute("INSERT INTO r VALUES (1), (2)")
    conn.execute("CREATE INDEX r_a ON r (a)")
    conn.execute("CREATE MATERIALIZED VIEW rv AS SELECT count(*) AS n FROM r")
    for end in ("ROLLBACK", "SAVEPOINT"):
        conn.execute("BEGIN")
        if end == "SAVEPOINT":
            conn.execute("SAVEPOINT before_drop")
        conn.execute("DROP TABLE r CASCADE")
        conn.execute("CREATE TABLE r (a int, b text)")
        conn.execute("CREATE INDEX r_a ON r (b)")
        conn.execute("INSERT INTO r VALUES (7, 'x')")
        assert rows(conn, "SELECT * FROM r") == [(7, "x")]
        if end == "SAVEPOINT":
            conn.execute("ROLLBACK TO SAVEPOINT before_drop")
            conn.execute("COMMIT")
        else:
            conn.execute("ROLLBACK")
        assert sorted(rows(conn, "SELECT * FROM r")) == [(1,), (2,)], end
        conn.execute("INSERT INTO r VALUES (3)")
        assert rows(conn, "SELECT n FROM rv") == [(3,)], end  # hosted again
        conn.execute("DELETE FROM r WHERE a = 3")
    conn.execute("BEGIN")  # replaced twice, then rolled back
    for _ in range(2):
        conn.execute("DROP TABLE r CASCADE")
        conn.execute("CREATE TABLE r (a int, b text)")
    conn.execute("ROLLBACK")
    assert sorted(rows(conn, "SELECT * FROM r")) == [(1,), (2,)]
    conn.execute("BEGIN")
    conn.execute("DROP TABLE r CASCADE")
    conn.execute("CREATE TABLE r (a int, b text)")
    conn.execute("INSERT INTO r VALUES (7, 'x')")
    conn.execute("COMMIT")
    assert rows(conn, "SELECT * FROM r") == [(7, "x")]
    assert error(conn, "SELECT * FROM rv").sqlstate == "42P01"


DROPPING_CHILD = """
import sys, time
import changeflow
conn = changeflow.connect(sys.argv[1], host_seconds=0)
conn.execute("BEGIN")
conn.execute("DROP TABLE kept")
print("dropped", flush=True)
time.sleep(600)
"""


def test_a_drop_of_a_transaction_killed_before_its_commit_is_undone(tmp_path: Path) -> None:
    """The items an open transaction dropped come back when its process dies (SIGKILL)
    before the COMMIT: the next environment opened on the home puts them back, rows and all."""
    import signal
    import subprocess
    import sys

    home = tmp_path / "home"
    first = changeflow.connect(home, host_seconds=0)
    first.execute("CREATE TABLE kept (a int)")
    first.execute("INSERT INTO kept VALUES (1), (2)")
    first.close()
    child = subprocess.Popen(
        [sys.executable, "-c", DROPPING_CHILD, str(home)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "dropped"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        child.kill()
        child.wait()
    again = changeflow.connect(home, host_seconds=0)
    assert sorted(again.execute("SELECT a FROM kept").fetchall()) == [(1,), (2,)]
    again.close()


def test_closing_a_session_rolls_its_open_transaction_back(tmp_path: Path) -> None:
    """A session closed inside BEGIN (a client gone) aborts the transaction, as PostgreSQL
    does: what it dropped is back, what it created is gone, its writes never land."""
    home = tmp_path / "home"
    setup = changeflow.connect(home, host_seconds=0)
    setup.execute("CREATE TABLE stays (a int)")
    setup.execute("INSERT INTO stays VALUES (1)")
    leaving = changeflow.connect(home, host_seconds=0)
    leaving.execute("BEGIN")
    leaving.execute("INSERT INTO stays VALUES (2)")
    leaving.execute("DROP TABLE stays")
    leaving.execute("CREATE TABLE made (a int)")
    assert error(setup, "SELECT * FROM stays").sqlstate == "42P01"  # set aside meanwhile
    leaving.close()
    assert rows(setup, "SELECT a FROM stays") == [(1,)]
    assert error(setup, "SELECT * FROM made").sqlstate == "42P01"
    setup.close()
