"""SQL materialized views on the cluster tier: chosen by WITH (CLUSTER = …) or by the inputs'
size, shown by EXPLAIN, exact through inserts, updates and deletes and across a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

pytestmark = pytest.mark.spark

VIEW = (
    "SELECT c.region, count(*) AS n, sum(o.amount) AS total FROM orders o "
    "JOIN customers c ON o.customer = c.id GROUP BY c.region"
)


def _sorted(conn, sql: str) -> list[tuple]:
    return sorted(conn.execute(sql).fetchall())


def _tier(conn, name: str) -> str:
    lines = [r[0] for r in conn.execute(f"EXPLAIN MATERIALIZED VIEW {name}").fetchall()]
    return lines[0]


def test_a_cluster_view_is_exact_through_writes_and_a_restart(spark, tmp_path: Path) -> None:
    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.execute("CREATE TABLE customers (id int NOT NULL, region text)")
    conn.execute("CREATE TABLE orders (id int NOT NULL, customer int, amount int)")
    conn.cursor().executemany(
        "INSERT INTO customers VALUES (%s, %s)", [(i, f"r{i % 3}") for i in range(9)]
    )
    conn.cursor().executemany(
        "INSERT INTO orders VALUES (%s, %s, %s)", [(i, i % 9, i * 10) for i in range(40)]
    )
    conn.execute(f"CREATE MATERIALIZED VIEW spend WITH (CLUSTER = true) AS {VIEW}")
    conn.execute(f"CREATE MATERIALIZED VIEW small AS {VIEW}")  # few rows: in the process
    assert _tier(conn, "spend").startswith("Tier: cluster")
    assert _tier(conn, "small").startswith("Tier: process")
    assert _sorted(conn, "SELECT * FROM spend") == _sorted(conn, VIEW)
    conn.execute("UPDATE orders SET amount = amount + 1 WHERE id < 10")
    conn.execute("DELETE FROM orders WHERE id % 7 = 0")
    conn.execute("INSERT INTO customers VALUES (100, 'r9')")
    conn.execute("INSERT INTO orders VALUES (100, 100, 5)")
    assert _sorted(conn, "SELECT * FROM spend") == _sorted(conn, VIEW)
    assert _sorted(conn, "SELECT * FROM small") == _sorted(conn, VIEW)
    conn.close()
    again = changeflow.connect(home, host_seconds=0)  # a restart: the view's tier is kept
    again.execute("UPDATE customers SET region = 'r0' WHERE id = 100")
    assert _tier(again, "spend").startswith("Tier: cluster")
    assert _sorted(again, "SELECT * FROM spend") == _sorted(again, VIEW)
    kept = home / "blob" / "dataflows"
    assert [p.name for p in kept.iterdir()], "the arrangements are under the blob root"
    again.execute("DROP MATERIALIZED VIEW spend")
    assert not list(kept.iterdir()), "a dropped view's arrangements are deleted"
    again.close()


def test_the_inputs_size_chooses_the_tier(spark, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CHANGEFLOW_CLUSTER_ROWS", "5")
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.execute("CREATE TABLE t (k int, v int)")
    conn.execute("CREATE MATERIALIZED VIEW few AS SELECT k, count(*) FROM t GROUP BY k")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i % 2, i) for i in range(6)])
    conn.execute("CREATE MATERIALIZED VIEW many AS SELECT k, count(*) FROM t GROUP BY k")
    forced = "CREATE MATERIALIZED VIEW kept WITH (CLUSTER = false) AS SELECT k FROM t"
    conn.execute(forced)
    assert _tier(conn, "few").startswith("Tier: process")
    assert _tier(conn, "many").startswith("Tier: cluster")
    assert _tier(conn, "kept").startswith("Tier: process")
    assert _sorted(conn, "SELECT * FROM many") == [(0, 3), (1, 3)]
    conn.close()


def test_bad_cluster_options_are_refused(tmp_path: Path) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.execute("CREATE TABLE t (k int)")
    for sql, state in [
        ("CREATE MATERIALIZED VIEW v WITH (CLUSTER = maybe) AS SELECT k FROM t", "22023"),
        ("CREATE MATERIALIZED VIEW v WITH (SIZE = 3) AS SELECT k FROM t", "42601"),
        ("CREATE VIEW v WITH (CLUSTER = true) AS SELECT k FROM t", "42601"),
        ("EXPLAIN MATERIALIZED VIEW nope", "42P01"),
    ]:
        with pytest.raises(DatabaseError) as caught:
            conn.execute(sql)
        assert caught.value.sqlstate == state, sql
    assert conn.execute("SHOW MATERIALIZED VIEWS").fetchall() == []
    conn.close()


def test_a_view_keyed_by_uuid_runs_on_the_cluster(spark, tmp_path: Path) -> None:
    """uuid keys and bytea values are carried, joined and counted on Spark, as PostgreSQL
    compares them; a cast of one keeps the view in the process."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.execute("CREATE TABLE users (id uuid NOT NULL, team text)")
    conn.execute("CREATE TABLE events (id int, user_id uuid, body bytea)")
    ids = [f"{i:08x}-0000-4000-8000-{i * 7919:012x}" for i in range(12)]
    conn.cursor().executemany(
        "INSERT INTO users VALUES (%s, %s)", [(u, f"t{i % 3}") for i, u in enumerate(ids)]
    )
    conn.cursor().executemany(
        "INSERT INTO events VALUES (%s, %s, %s)",
        [(i, ids[i % 12], bytes([i % 5, 200])) for i in range(60)],
    )
    view = (
        "SELECT u.team, e.body, count(*) AS n, count(DISTINCT e.user_id) AS users "
        "FROM events e JOIN users u ON e.user_id = u.id GROUP BY u.team, e.body"
    )
    conn.execute(f"CREATE MATERIALIZED VIEW activity WITH (CLUSTER = true) AS {view}")
    assert _tier(conn, "activity").startswith("Tier: cluster")
    conn.execute(f"DELETE FROM events WHERE user_id = '{ids[3]}'")
    conn.execute(f"UPDATE users SET team = 't9' WHERE id = '{ids[4]}'")
    conn.execute(f"INSERT INTO events VALUES (100, '{ids[5]}', '\\x00ff')")
    assert _sorted(conn, "SELECT * FROM activity") == _sorted(conn, view)
    conn.execute("CREATE MATERIALIZED VIEW shown AS SELECT id::text AS id FROM users")
    assert _tier(conn, "shown").startswith("Tier: process")
    conn.close()


def test_a_view_carrying_interval_and_jsonb_runs_on_the_cluster(spark, tmp_path: Path) -> None:
    """Interval and jsonb values are carried through a join on Spark; comparing one keeps the
    view in the process."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.execute("CREATE TABLE plans (id int, span interval, spec jsonb)")
    conn.execute("CREATE TABLE runs (id int, plan_id int)")
    conn.cursor().executemany(
        "INSERT INTO plans VALUES (%s, %s, %s)",
        [
            (i, f"{i} months {i % 7} days {i}.5 seconds", f'{{"n": {i}, "t": [1.50]}}')
            for i in range(8)
        ],
    )
    conn.cursor().executemany("INSERT INTO runs VALUES (%s, %s)", [(i, i % 9) for i in range(30)])
    view = "SELECT r.id, p.span, p.spec FROM runs r JOIN plans p ON r.plan_id = p.id"
    conn.execute(f"CREATE MATERIALIZED VIEW planned WITH (CLUSTER = true) AS {view}")
    assert _tier(conn, "planned").startswith("Tier: cluster")
    conn.execute("DELETE FROM runs WHERE id < 4")
    conn.execute("UPDATE plans SET span = interval '-1 day', spec = '[]' WHERE id = 5")
    conn.execute("INSERT INTO runs VALUES (100, 7), (101, 8)")
    conn.execute("INSERT INTO plans VALUES (8, NULL, NULL)")
    got = [(i, str(s), str(j)) for i, s, j in _sorted(conn, "SELECT * FROM planned")]
    assert got == [(i, str(s), str(j)) for i, s, j in _sorted(conn, view)]
    assert len(got) == 28  # every run has its plan
    compared = "SELECT id FROM plans WHERE span > interval '1 month'"
    conn.execute(f"CREATE MATERIALIZED VIEW longer AS {compared}")
    assert _tier(conn, "longer").startswith("Tier: process")
    conn.close()
