"""Transactions that read and write in any order, as PostgreSQL's: a query sees the
transaction's own writes (through filters, joins, aggregates, subqueries and ORDER BY …
LIMIT), a write may follow a read, and ROLLBACK forgets both; a concurrent commit that changed
what the transaction read refuses its commit (40001, serializable), one that did not, does not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError, OperationalError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

TABLES = "rw_orders, rw_items"
SETUP = [
    "CREATE TABLE rw_orders (id int PRIMARY KEY, customer text, total numeric(10, 2))",
    "CREATE TABLE rw_items (order_id int, sku text, qty int)",
    "INSERT INTO rw_orders VALUES (1, 'ann', 10.50), (2, 'bob', 3.00)",
    "INSERT INTO rw_items VALUES (1, 'x', 2), (2, 'y', 1)",
]
STATEMENTS = [
    "BEGIN",
    "SELECT count(*) FROM rw_orders",
    "INSERT INTO rw_orders VALUES (3, 'cy', 7.25)",
    "SELECT * FROM rw_orders ORDER BY id",
    "SELECT id FROM rw_orders WHERE id = 3",
    "INSERT INTO rw_items VALUES (3, 'x', 5), (3, 'z', 1)",
    "SELECT o.customer, sum(i.qty) FROM rw_orders o JOIN rw_items i ON i.order_id = o.id "
    "GROUP BY o.customer ORDER BY 1",
    "WITH RECURSIVE r(n) AS (SELECT max(id) FROM rw_orders UNION ALL "
    "SELECT n - 1 FROM r WHERE n > 1) SELECT count(*) FROM r",
    "SELECT (SELECT max(qty) FROM rw_items), EXISTS (SELECT 1 FROM rw_items WHERE sku = 'z')",
    "UPDATE rw_orders SET total = total + 1 WHERE customer = 'cy'",
    "SELECT total FROM rw_orders WHERE id = 3",
    "DELETE FROM rw_items WHERE sku = 'x'",
    "SELECT * FROM rw_items ORDER BY order_id, sku",
    "SELECT id FROM rw_orders WHERE id NOT IN (SELECT order_id FROM rw_items) ORDER BY id",
    "SELECT * FROM rw_orders ORDER BY total DESC LIMIT 1",
    "INSERT INTO rw_orders VALUES (3, 'dup', 0)",
    "SELECT 1",
    "ROLLBACK",
    "SELECT * FROM rw_orders ORDER BY id",
    "BEGIN",
    "INSERT INTO rw_orders VALUES (4, 'dee', 1.00)",
    "SELECT sum(total) FROM rw_orders",
    "COMMIT",
    "SELECT * FROM rw_orders ORDER BY id",
    "BEGIN",
    "SELECT customer FROM rw_orders WHERE id = 4",
    "UPDATE rw_orders SET customer = 'dora' WHERE id = 4",
    "SELECT customer FROM rw_orders WHERE id = 4",
    "ROLLBACK",
    "SELECT customer FROM rw_orders WHERE id = 4",
]


@pytest.mark.postgres
def test_reads_and_writes_in_one_transaction_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, TABLES, *SETUP) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)


def test_a_changed_read_refuses_the_commit(tmp_path: Path) -> None:
    a = changeflow.connect(tmp_path / "home", host_seconds=0)
    b = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        a.execute("CREATE TABLE t (k int, v int)")
        a.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
        # what it read was changed by another commit: 40001, nothing written
        a.execute("BEGIN")
        assert a.execute("SELECT sum(v) FROM t WHERE k = 1").fetchall() == [(10,)]
        b.execute("UPDATE t SET v = 11 WHERE k = 1")
        a.execute("INSERT INTO t VALUES (3, 30)")
        with pytest.raises(OperationalError) as caught:
            a.execute("COMMIT")
        assert caught.value.sqlstate == "40001"
        assert a.execute("SELECT count(*) FROM t").fetchall() == [(2,)]
        # another commit to rows it did not read: no conflict
        a.execute("BEGIN")
        assert a.execute("SELECT v FROM t WHERE k = 1").fetchall() == [(11,)]
        b.execute("INSERT INTO t VALUES (9, 90)")
        a.execute("INSERT INTO t VALUES (3, 30)")
        a.execute("COMMIT")
        assert a.execute("SELECT k FROM t ORDER BY k").fetchall() == [(1,), (2,), (3,), (9,)]
        # a read through a materialized view: a change of its table is a conflict
        a.execute("CREATE MATERIALIZED VIEW total AS SELECT sum(v) AS s FROM t")
        a.execute("CREATE TABLE log (s int)")
        a.execute("BEGIN")
        assert a.execute("SELECT s FROM total").fetchall() == [(151,)]
        b.execute("INSERT INTO t VALUES (4, 1)")
        a.execute("INSERT INTO log VALUES (151)")
        with pytest.raises(OperationalError) as caught:
            a.execute("COMMIT")
        assert caught.value.sqlstate == "40001"
        # a view over a table the transaction wrote does not hold its rows: refused
        a.execute("BEGIN")
        a.execute("INSERT INTO t VALUES (5, 5)")
        with pytest.raises(DatabaseError) as caught:
            a.execute("SELECT s FROM total")
        assert caught.value.sqlstate == "0A000"
        assert "COMMIT first" in str(caught.value)
        a.execute("ROLLBACK")
        assert a.execute("SELECT s FROM total").fetchall() == [(152,)]
        # changes of columns the buffered rows cannot follow, or rewrites after reads: refused
        a.execute("CREATE TABLE w (k int, v int)")
        for change in (
            "ALTER TABLE w ALTER COLUMN v TYPE text",
            "ALTER TABLE w ADD COLUMN id serial",
            "ALTER TABLE w ADD COLUMN x int, ADD COLUMN y int",
        ):
            a.execute("BEGIN")
            a.execute("INSERT INTO w VALUES (1, 1)")
            with pytest.raises(DatabaseError) as caught:
                a.execute(change)
            assert caught.value.sqlstate == "25001", change
            a.execute("ROLLBACK")
        a.execute("BEGIN")
        a.execute("SELECT * FROM w")
        with pytest.raises(DatabaseError) as caught:
            a.execute("ALTER TABLE w ADD COLUMN d int DEFAULT 1")
        assert caught.value.sqlstate == "25001"
        a.execute("ROLLBACK")
        assert [d[0] for d in a.execute("SELECT * FROM w").description] == ["k", "v"]
    finally:
        a.close()
        b.close()


ALTER_TABLES = "rw_parent, rw_child"
ALTER_SETUP = [
    "CREATE TABLE rw_parent (id int, v int)",
    "CREATE TABLE rw_child (id int, p int)",
    "INSERT INTO rw_parent VALUES (1, 10), (2, NULL)",
]
# a new constraint is checked against the table as the transaction has left it
ALTER_STATEMENTS = [
    "BEGIN",
    "ALTER TABLE rw_parent ALTER COLUMN v SET NOT NULL",
    "ROLLBACK",
    "BEGIN",
    "UPDATE rw_parent SET v = 20 WHERE id = 2",
    "ALTER TABLE rw_parent ALTER COLUMN v SET NOT NULL",
    "INSERT INTO rw_parent VALUES (3, NULL)",
    "ROLLBACK",
    "BEGIN",
    "DELETE FROM rw_parent WHERE v IS NULL",
    "ALTER TABLE rw_parent ALTER COLUMN v SET NOT NULL",
    "COMMIT",
    "SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'rw_parent'::regclass "
    "AND attnum > 0 ORDER BY attnum",
    "BEGIN",
    "INSERT INTO rw_parent VALUES (1, 11)",
    "ALTER TABLE rw_parent ADD PRIMARY KEY (id)",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO rw_parent VALUES (5, 50)",
    "ALTER TABLE rw_parent ADD PRIMARY KEY (id)",
    "INSERT INTO rw_parent VALUES (5, 51)",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO rw_parent VALUES (-1, 5)",
    "ALTER TABLE rw_parent ADD CONSTRAINT positive CHECK (id > 0)",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO rw_parent VALUES (6, 60)",
    "ALTER TABLE rw_parent ADD PRIMARY KEY (id)",
    "INSERT INTO rw_child VALUES (1, 6)",
    "ALTER TABLE rw_child ADD FOREIGN KEY (p) REFERENCES rw_parent",
    "INSERT INTO rw_child VALUES (2, 7)",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO rw_child VALUES (1, 9)",
    "ALTER TABLE rw_parent ADD PRIMARY KEY (id)",
    "ALTER TABLE rw_child ADD FOREIGN KEY (p) REFERENCES rw_parent",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO rw_parent VALUES (7, 70)",
    "ALTER TABLE rw_parent ALTER COLUMN v SET DEFAULT 0",
    "ALTER TABLE rw_parent RENAME CONSTRAINT nope TO other",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO rw_parent VALUES (7, 70)",
    "ALTER TABLE rw_parent ALTER COLUMN v SET DEFAULT 0",
    "INSERT INTO rw_parent (id) VALUES (8)",
    "COMMIT",
    "SELECT * FROM rw_parent ORDER BY id",
    # a change of columns carries the transaction's rows to the new columns
    "BEGIN",
    "INSERT INTO rw_child VALUES (1, 1), (2, 2)",
    "DELETE FROM rw_child WHERE id = 2",
    "ALTER TABLE rw_child ADD COLUMN note text",
    "INSERT INTO rw_child VALUES (3, 3, 'x')",
    "SELECT * FROM rw_child ORDER BY id",
    "ALTER TABLE rw_child RENAME COLUMN note TO memo",
    "ALTER TABLE rw_child DROP COLUMN p",
    "SELECT * FROM rw_child ORDER BY id",
    "ALTER TABLE rw_child ADD COLUMN w int NOT NULL",
    "ROLLBACK",
    "SELECT * FROM rw_child ORDER BY id",
    "BEGIN",
    "CREATE TABLE rw_new (a int)",
    "INSERT INTO rw_new VALUES (1)",
    "ALTER TABLE rw_new ADD COLUMN b text DEFAULT 'b'",
    "INSERT INTO rw_new (a) VALUES (2)",
    "SELECT * FROM rw_new ORDER BY a",
    "COMMIT",
    "SELECT * FROM rw_new ORDER BY a",
    "DROP TABLE rw_new",
]


@pytest.mark.postgres
def test_alter_table_after_writes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, ALTER_TABLES, *ALTER_SETUP) as (ours, pg):
        same_outcomes(ours, pg, ALTER_STATEMENTS)
