"""ALTER TABLE … ALTER COLUMN … TYPE compared with PostgreSQL 15: values converted by the
assignment cast or USING, 42804 where no cast applies, each failure (a value that does not
convert, a NULL in a NOT NULL column, a duplicate key, a failed catalog write) all or nothing,
the new type kept across a restart; a column that a view reads keeps its type (0A000)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError
from changeflow.errors import PlanError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

CREATE = "CREATE TABLE aty (id int NOT NULL, a int, s text, n numeric(10,2), d date)"
INSERT = (
    "INSERT INTO aty VALUES (1, 10, '5', 1.25, '2020-01-01'), (2, NULL, 'x', 2.5, NULL), "
    "(3, 30, '7', NULL, '2021-06-30')"
)
STEPS = [
    "ALTER TABLE aty ALTER COLUMN a TYPE bigint",
    "ALTER TABLE aty ALTER COLUMN a TYPE text",
    "ALTER TABLE aty ALTER COLUMN a TYPE int",  # text to int: no assignment cast (42804)
    "ALTER TABLE aty ALTER COLUMN a TYPE int USING a::int",
    "ALTER TABLE aty ALTER COLUMN s TYPE int USING s::int",  # 'x' does not convert (22P02)
    "ALTER TABLE aty ALTER COLUMN d TYPE timestamp",
    "ALTER TABLE aty ALTER COLUMN d TYPE int",  # no cast at all (42804)
    "ALTER TABLE aty ALTER COLUMN n TYPE numeric(4,1)",  # rounds 1.25 to 1.3
    "ALTER TABLE aty ALTER COLUMN n TYPE numeric(2,1)",  # 22003
    "ALTER TABLE aty ALTER COLUMN id SET DATA TYPE bigint",
    "ALTER TABLE aty ALTER COLUMN s TYPE varchar(1) USING s || 'zz'",  # 22001
    "ALTER TABLE aty ALTER COLUMN s TYPE varchar(3) USING s || 'zz'",
    "ALTER TABLE aty ALTER COLUMN id TYPE int USING NULL",  # 23502
    "ALTER TABLE aty ALTER COLUMN nope TYPE int",
    "ALTER TABLE aty ALTER COLUMN a TYPE nosuchtype",
    "ALTER TABLE aty ALTER COLUMN a TYPE int USING nope",
    "INSERT INTO aty VALUES (4, 40, 'abc', 1.5, '2022-01-01 10:00')",
    "ALTER TABLE aty ALTER s TYPE int USING length(s) * 2",
    "UPDATE aty SET s = s + 1 WHERE id > 2",
]
SELECT = "SELECT * FROM aty ORDER BY id"


@pytest.mark.postgres
def test_alter_column_type_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "aty", CREATE, INSERT) as (ours, pg):
        for sql in STEPS:
            assert outcome(ours, sql)[:2] == outcome(pg, sql)[:2], sql
            assert outcome(ours, SELECT) == outcome(pg, SELECT), sql
        ours.close()
        again = changeflow.connect(tmp_path / "home", host_seconds=0)
        assert outcome(again, SELECT) == outcome(pg, SELECT)
        again.close()


def _fail(*args: Any, **kwargs: Any) -> None:
    raise PlanError("injected failure", sqlstate="58030")


def test_a_type_change_is_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE t (k int PRIMARY KEY, v numeric, w text)")
    conn.execute("INSERT INTO t VALUES (1, 1.4, 'a'), (2, 0.6, 'b'), (3, 2, NULL)")
    env = conn.env
    shard = env.catalog.load().by_name("t").id
    schema, items = env.storage.state(shard).schema, env.catalog.load().items
    rows = sorted(conn.execute("SELECT * FROM t").fetchall())
    failing = {
        "ALTER TABLE t ALTER COLUMN k TYPE int USING k / 2": "23505",  # 2 and 3 meet
        "ALTER TABLE t ALTER COLUMN w TYPE int": "42804",
        "ALTER TABLE t ALTER COLUMN w TYPE int USING w::int": "22P02",
    }
    for sql, state in failing.items():
        with pytest.raises(DatabaseError) as e:
            conn.execute(sql)
        assert e.value.sqlstate == state, sql
    monkeypatch.setattr(env.catalog, "change", _fail)
    with pytest.raises(DatabaseError) as e:
        conn.execute("ALTER TABLE t ALTER COLUMN v TYPE int")
    assert e.value.sqlstate == "58030"
    monkeypatch.undo()
    assert env.storage.state(shard).schema == schema
    assert env.catalog.load().items == items
    assert sorted(conn.execute("SELECT * FROM t").fetchall()) == rows
    conn.execute("ALTER TABLE t ALTER COLUMN v TYPE int")
    conn.execute("INSERT INTO t VALUES (4, 7, 'd')")
    assert sorted(conn.execute("SELECT k, v FROM t").fetchall()) == [(1, 1), (2, 1), (3, 2), (4, 7)]
    with pytest.raises(DatabaseError) as e:
        conn.execute("INSERT INTO t VALUES (1, 0, 'dup')")
    assert e.value.sqlstate == "23505"
    conn.close()


def test_a_column_a_view_reads_keeps_its_type(tmp_path: Path) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE t (k int, v int)")
    conn.execute("CREATE MATERIALIZED VIEW m AS SELECT sum(v) AS s FROM t")
    with pytest.raises(DatabaseError) as e:
        conn.execute("ALTER TABLE t ALTER COLUMN k TYPE bigint")
    assert e.value.sqlstate == "0A000" and '"m"' in str(e.value)
    conn.close()
