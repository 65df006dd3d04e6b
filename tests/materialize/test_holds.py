"""A materialization holds its shard's since at its checkpoint between runs, until dropped."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pyarrow as pa
import pytest

from changeflow.errors import InvalidInput
from changeflow.materialize.recovery import RecoveryLog
from changeflow.materialize.runtime import Materialization, drop, holder, materialize
from changeflow.materialize.targets import claim
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import SqliteConsensus
from changeflow.time import Antichain

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def table(path: Path) -> set[tuple]:
    with closing(sqlite3.connect(path)) as db:
        return set(db.execute('SELECT "k", "v" FROM "t"').fetchall())


def test_a_stopped_materialization_resumes_after_others_moved_and_compacted(
    tmp_path: Path,
) -> None:
    storage = Storage(SqliteConsensus(tmp_path / "c.sqlite"), Blob(str(tmp_path / "blob")))
    log = tmp_path / "recovery.sqlite"
    read, write = storage.create("t", SCHEMA)
    storage.drop(read)
    storage.append(write, [((1, "a"), 0, 1), ((2, "b"), 0, 1)], 1)
    storage.append(write, [((1, "a"), 1, -1), ((1, "z"), 1, 1)], 3)
    a = Materialization("a", "t", f"sqlite:{tmp_path / 'a.sqlite'}", ("k",))
    b = Materialization("b", "t", f"sqlite:{tmp_path / 'b.sqlite'}", ("k",))
    materialize(storage, a, log)  # A runs and stops at [3]
    assert storage.registered_readers("t")[holder("a")].frontier == Antichain([2])

    storage.append(write, [((2, "b"), 3, -1), ((3, "c"), 4, 1)], 5)
    storage.append(write, [((3, "c"), 5, -1), ((3, "d"), 5, 1)], 7)
    materialize(storage, b, log)  # B runs further, to [7]
    other, other_write = storage.acquire_capabilities("t")  # another reader moves on
    storage.drop(other_write)
    storage.downgrade(other, Antichain([6]))
    storage.drop(other)
    storage.compact("t")
    assert storage.state("t").since == Antichain([2])  # A's checkpoint is still readable

    progress = materialize(storage, a, log)  # A resumes and ends exact
    assert progress.frontier == Antichain([7])
    assert table(tmp_path / "a.sqlite") == table(tmp_path / "b.sqlite") == {(1, "z"), (3, "d")}
    assert storage.state("t").since == Antichain([6])

    assert drop(storage, "a", log) == "t"  # dropped, A no longer holds the since back ...
    assert set(storage.registered_readers("t")) == {holder("b")}
    recovery = RecoveryLog(log)
    assert recovery.load("a") == (None, {}) and recovery.target("a") is None
    recovery.close()
    storage.append(write, [((4, "e"), 7, 1)], 9)
    materialize(storage, b, log)
    assert storage.state("t").since == Antichain([8])  # ... and since moves on with B
    with pytest.raises(InvalidInput, match="no materialization named 'a'"):
        drop(storage, "a", log)
    storage.close()


def test_only_a_materialization_that_committed_owns_its_table(tmp_path: Path) -> None:
    log = RecoveryLog(tmp_path / "recovery.sqlite")
    target = f"sqlite:{tmp_path / 'x.sqlite'}"
    claim(log, "a", "t", target, authoritative=True)  # a run that then could not connect
    claim(log, "b", "t", target, authoritative=True)
    log.commit("b", {"frontier": [1]}, None)
    with pytest.raises(InvalidInput, match=f"table 't' in {target} is owned by .* 'b'"):
        claim(log, "a", "t", target, authoritative=True)
    claim(log, "a", "other", target, authoritative=True)  # another table in it is free
    log.close()
