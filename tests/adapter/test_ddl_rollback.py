"""CREATE is all or nothing: a failure at its last step (the catalog write that records the
item, or the registration of a new shard's reader) leaves no shard, hold or checkpoint
behind, and the same statement then succeeds."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter import ddl
from changeflow.adapter.connection import DatabaseError
from changeflow.errors import PlanError
from changeflow.materialize.runtime import holder


def _fail(*args: object, **kwargs: object) -> None:
    raise PlanError("injected failure", sqlstate="58030")


@pytest.fixture
def conn(tmp_path: Path):
    c = changeflow.connect(tmp_path / "home", host_seconds=0)
    c.autocommit = True
    c.execute("CREATE TABLE t (k int NOT NULL, v int)")
    c.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
    yield c
    c.close()


def test_a_sink_the_catalog_refuses_leaves_no_hold_or_checkpoint(
    conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shard = conn.env.catalog.load().get("t").shard
    before = set(conn.env.storage.registered_readers(shard))
    monkeypatch.setattr(ddl, "_add", _fail)
    with pytest.raises(DatabaseError) as caught:
        conn.execute(f"CREATE SINK s FROM t INTO 'sqlite:{tmp_path / 'a.sqlite'}' KEY (k)")
    assert caught.value.sqlstate == "58030"
    monkeypatch.undo()
    assert set(conn.env.storage.registered_readers(shard)) == before
    assert not [h for h in conn.env.storage.registered_readers(shard) if "materialization" in h]
    log = conn.env.config.home / "materialize" / "recovery.sqlite"
    with closing(sqlite3.connect(log)) as db:  # no checkpoint names it
        assert db.execute("SELECT materialization FROM recovery_targets").fetchall() == []
    assert conn.execute("SHOW SINKS").fetchall() == []
    conn.execute(f"CREATE SINK s FROM t INTO 'sqlite:{tmp_path / 'b.sqlite'}' KEY (k)")
    held = conn.env.storage.registered_readers(shard)
    assert len([h for h in held if h.startswith(holder(""))]) == 1


def test_a_shard_whose_reader_is_not_registered_is_dropped(
    conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = set(conn.env.storage.shards())
    monkeypatch.setattr(conn.env.storage, "register_reader", _fail)
    for sql in ("CREATE TABLE u (a int)", "CREATE MATERIALIZED VIEW m AS SELECT sum(v) FROM t"):
        with pytest.raises(DatabaseError) as caught:
            conn.execute(sql)
        assert caught.value.sqlstate == "58030", sql
        assert set(conn.env.storage.shards()) == shards, sql
    monkeypatch.undo()
    conn.execute("CREATE TABLE u (a int)")
    conn.execute("INSERT INTO u VALUES (1)")
    assert conn.execute("SELECT * FROM u").fetchall() == [(1,)]
