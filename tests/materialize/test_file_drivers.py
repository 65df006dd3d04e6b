"""The files, kv and jsonl drivers, driven by hand-written message sequences."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from changeflow.errors import InvalidInput, ProtocolViolation
from changeflow.materialize.drivers import open_driver
from changeflow.materialize.drivers.files import FilesDriver, Table
from changeflow.materialize.drivers.jsonl import JsonlDriver
from changeflow.materialize.drivers.kv import KvDriver
from changeflow.materialize.protocol import (
    Acknowledge,
    Acknowledged,
    Binding,
    DriverState,
    Flush,
    Flushed,
    Load,
    Loaded,
    Open,
    Opened,
    StartCommit,
    StartedCommit,
    Store,
)
from changeflow.materialize.transport import InProcess, Subprocess, Transport

ITEMS = Binding("items", ("id", "name", "qty"), ("int64", "string", "int64"), ("id",))


def put(id: int, name: str, qty: int, binding: int = 0) -> Store:
    return Store(binding, (id,), {"id": id, "name": name, "qty": qty}, exists=False)


def delete(id: int, binding: int = 0) -> Store:
    return Store(binding, (id,), None, exists=True, delete=True)


class Session:
    """The runtime's side of one driver session, one phase per method."""

    def __init__(self, transport: Transport, state: dict[str, Any] | None = None, **config: Any):
        self.t = transport
        self.t.send(Open("m", (ITEMS,), config, state=state or {}))
        assert isinstance(self.t.receive(60), Opened)

    def ack(self) -> None:
        self.t.send(Acknowledge())
        assert isinstance(self.t.receive(300), Acknowledged)

    def load(self, *ids: int) -> dict[Any, dict]:
        for id in ids:
            self.t.send(Load(0, (id,)))
        self.t.send(Flush())
        out = {}
        while not isinstance(response := self.t.receive(60), Flushed):
            assert isinstance(response, Loaded)
            out[response.key] = response.doc
        return out

    def commit(self, *stores: Store, frontier: int = 1) -> DriverState | None:
        for s in stores:
            self.t.send(s)
        self.t.send(StartCommit({"frontier": [frontier]}))
        response = self.t.receive(60)
        assert isinstance(response, StartedCommit)
        return response.state

    def txn(self, *stores: Store, frontier: int = 1) -> DriverState | None:
        """Acknowledge the previous transaction, load nothing, store and start to commit."""
        self.ack()
        self.load()
        return self.commit(*stores, frontier=frontier)

    def close(self) -> None:
        self.t.close()


def session(url: str, state: dict[str, Any] | None = None, **config: Any) -> Session:
    return Session(InProcess(open_driver(url)), state, **config)


def table(root: Path, resource: str = "items") -> dict[int, dict]:
    return {row["id"]: row for row in FilesDriver.read_table(root, resource).to_pylist()}


# -- files ---------------------------------------------------------------------------------------


def test_files_stores_become_visible_after_commit_and_the_next_acknowledge(tmp_path: Path):
    s = session(f"files:{tmp_path}")
    s.ack()
    assert s.load(1) == {}
    state = s.commit(put(1, "a", 1), put(2, "b", 2))
    (name,) = state.updated["staged"].values()
    assert (tmp_path / "items" / "_staged" / name).exists()
    assert table(tmp_path) == {}  # staged, not applied: the recovery log has yet to commit
    s.ack()
    assert table(tmp_path) == {
        1: {"id": 1, "name": "a", "qty": 1},
        2: {"id": 2, "name": "b", "qty": 2},
    }
    assert s.load(1, 2, 3) == {
        (1,): {"id": 1, "name": "a", "qty": 1},
        (2,): {"id": 2, "name": "b", "qty": 2},
    }
    s.commit(put(1, "a2", 10), delete(2), put(3, "c", 3), delete(4), frontier=2)
    s.ack()
    assert table(tmp_path) == {
        1: {"id": 1, "name": "a2", "qty": 10},
        3: {"id": 3, "name": "c", "qty": 3},
    }
    s.load()
    assert s.commit(frontier=3) == DriverState({"staged": {}})  # nothing stored: nothing staged
    s.close()
    # applied staged files and old versions are deleted; the previous version stays for readers
    assert list((tmp_path / "items" / "_staged").iterdir()) == []
    assert len([p for p in (tmp_path / "items").iterdir() if p.name.startswith("v")]) == 2


def test_files_a_new_session_reapplies_an_interrupted_apply_once(tmp_path: Path):
    url = f"files:{tmp_path}"
    s = session(url)
    s.txn(put(1, "a", 1))
    state = s.txn(put(1, "a2", 2), put(2, "b", 2), frontier=2).updated
    s.close()  # crashed after the recovery log committed `state`, before the Acknowledge
    assert table(tmp_path) == {1: {"id": 1, "name": "a", "qty": 1}}

    driver = open_driver(url)  # Loads wait for the staged effects: the runner acknowledges first
    driver.open(Open("m", (ITEMS,), {}, state=state))
    with pytest.raises(ProtocolViolation, match="Acknowledge must come first"):
        driver.load_batch(0, pa.table({"id": [1]}))

    expected = {1: {"id": 1, "name": "a2", "qty": 2}, 2: {"id": 2, "name": "b", "qty": 2}}
    s = session(url, state)
    s.ack()
    assert table(tmp_path) == expected
    assert s.load(1, 2) == {(k,): v for k, v in expected.items()}
    s.close()
    manifest = Table(tmp_path / "items").manifest()
    s = session(url, state)  # told of the same file again: nothing changes
    s.ack()
    s.close()
    assert table(tmp_path) == expected
    assert Table(tmp_path / "items").manifest() == manifest


def test_files_reopen_checks_the_table_and_refuses_bad_targets(tmp_path: Path):
    s = session(f"files:{tmp_path}")
    s.txn(put(1, "a", 1))
    s.ack()
    s.close()
    other = Binding("items", ("id", "name"), ("int64", "string"), ("id",))
    with pytest.raises(InvalidInput, match="has columns"):
        open_driver(f"files:{tmp_path}").open(Open("m", (other,), {}))
    with pytest.raises(InvalidInput, match="files:PATH"):
        open_driver("files:")
    (tmp_path / "plain").write_text("")
    with pytest.raises(InvalidInput, match="not a folder"):
        open_driver(f"files:{tmp_path / 'plain'}").open(Open("m", (ITEMS,), {}))
    bad = Binding("../x", ("id",), ("int64",), ("id",))
    with pytest.raises(InvalidInput, match="plain folder name"):
        open_driver(f"files:{tmp_path}").open(Open("m", (bad,), {}))
    t = InProcess(open_driver(f"files:{tmp_path / 'new'}"))
    t.send(Open("m", (ITEMS,), {}))
    t.receive(10)
    t.send(Acknowledge())
    t.receive(10)
    t.send(Flush())
    t.receive(10)
    t.send(Store(0, (1,), {"id": 1, "name": "a", "qty": "many"}, exists=False))
    with pytest.raises(InvalidInput, match="does not fit"):  # raised by send or by receive
        t.send(StartCommit({"frontier": [1]}))
        t.receive(10)


@pytest.mark.spark
def test_files_spark_apply_gives_the_same_table(tmp_path: Path, spark):
    n = 2000
    txns = [
        [put(i, f"n{i}", i) for i in range(n)],
        [put(i, f"m{i}", -i) for i in range(0, n, 3)]
        + [delete(i) for i in range(1, n, 5)]
        + [put(i, "new", 0) for i in range(n, n + 50)],
        [delete(i) for i in range(0, n, 7)] + [put(5, "five", 5)],
    ]
    expected: dict[int, dict] = {}
    for stores in txns:
        for st in stores:
            if st.delete:
                expected.pop(st.key[0], None)
            else:
                expected[st.key[0]] = st.doc
    tables = []
    for root, options in [(tmp_path / "arrow", ""), (tmp_path / "spark", "?spark_rows=2500")]:
        # the first apply is small (pyarrow); the second goes over 2500 rows (Spark with "?")
        s = session(f"files:{root}{options}", spark_master="local[2]")
        s.txn(*txns[0], frontier=1)
        state = s.txn(*txns[1], frontier=2).updated
        s.ack()
        s.close()
        version = Table(root / "items").manifest()["version"]
        assert (root / "items" / version / "_SUCCESS").exists() == bool(options)
        s = session(f"files:{root}", state)  # a re-apply, then pyarrow over Spark's output
        s.txn(*txns[2], frontier=3)
        s.ack()
        s.close()
        assert table(root) == expected
        tables.append(FilesDriver.read_table(root, "items").sort_by("id"))
    assert tables[0].equals(tables[1])


def test_files_through_a_subprocess(tmp_path: Path):
    command = [sys.executable, "-m", "changeflow.materialize.drivers", f"files:{tmp_path}"]
    s = Session(Subprocess(command))
    state = s.txn(put(1, "a", 1), put(2, "b", 2))
    assert set(state.updated["staged"]) == {"items"}
    s.ack()
    assert s.load(2) == {(2,): {"id": 2, "name": "b", "qty": 2}}
    s.close()
    assert set(table(tmp_path)) == {1, 2}


# -- kv ------------------------------------------------------------------------------------------


def test_kv_stores_are_visible_at_once_and_loads_return_them(tmp_path: Path):
    driver = open_driver(f"kv:{tmp_path}")
    assert isinstance(driver, KvDriver) and driver.at_least_once
    driver.open(Open("m", (ITEMS,), {}))
    driver.store(put(1, "a", 1))
    assert KvDriver.read_docs(tmp_path, "items") == {(1,): {"id": 1, "name": "a", "qty": 1}}

    s = session(f"kv:{tmp_path}")
    assert s.txn(put(2, "b", 2), put(3, "c", 3)) is None
    s.ack()
    assert s.load(1, 2, 4) == {
        (1,): {"id": 1, "name": "a", "qty": 1},
        (2,): {"id": 2, "name": "b", "qty": 2},
    }
    s.commit(delete(1), put(2, "b2", 20), frontier=2)
    s.close()
    assert KvDriver.read_docs(tmp_path, "items") == {
        (2,): {"id": 2, "name": "b2", "qty": 20},
        (3,): {"id": 3, "name": "c", "qty": 3},
    }


def test_kv_a_replayed_transaction_leaves_the_same_result(tmp_path: Path):
    stores = [put(1, "a", 1), put(2, "b", 2), delete(3), put(4, "d", 4)]
    s = session(f"kv:{tmp_path}")
    s.txn(put(3, "c", 3))
    s.ack()
    s.load()
    for store in stores[:2]:  # the transaction fails part-way: no StartCommit
        s.t.send(store)
    s.close()
    s = session(f"kv:{tmp_path}")  # replayed from the last checkpoint, then once more
    s.txn(*stores, frontier=2)
    once = KvDriver.read_docs(tmp_path, "items")
    s.txn(*stores, frontier=2)
    s.close()
    assert (
        KvDriver.read_docs(tmp_path, "items")
        == once
        == {
            (1,): {"id": 1, "name": "a", "qty": 1},
            (2,): {"id": 2, "name": "b", "qty": 2},
            (4,): {"id": 4, "name": "d", "qty": 4},
        }
    )


# -- jsonl ---------------------------------------------------------------------------------------


def test_jsonl_one_file_per_transaction_and_a_replay_rewrites_it(tmp_path: Path):
    driver = open_driver(f"jsonl:{tmp_path}")
    assert isinstance(driver, JsonlDriver) and driver.delta_only
    s = session(f"jsonl:{tmp_path}")
    s.txn(put(1, "a", 1), put(2, "b", 2), frontier=10)
    s.txn(put(1, "a", 5), delete(2), frontier=20)
    s.close()
    files = sorted(p.name for p in (tmp_path / "items").iterdir())
    assert files == [f"{10:020d}.jsonl", f"{20:020d}.jsonl"]
    second = (tmp_path / "items" / files[1]).read_text()
    assert [json.loads(line) for line in second.splitlines()] == [
        {"id": 1, "name": "a", "qty": 5},
        {"id": 2, "_deleted": True},
    ]
    s = session(f"jsonl:{tmp_path}")  # the second transaction again, after a crash
    s.txn(put(1, "a", 5), delete(2), frontier=20)
    s.close()
    assert sorted(p.name for p in (tmp_path / "items").iterdir()) == files
    assert (tmp_path / "items" / files[1]).read_text() == second
    assert len(JsonlDriver.read_docs(tmp_path, "items")) == 4


def test_jsonl_refuses_load(tmp_path: Path):
    s = session(f"jsonl:{tmp_path}")
    s.ack()
    assert s.load() == {}  # a Flush still answers Flushed
    s.commit(frontier=1)
    s.ack()
    with pytest.raises(ProtocolViolation, match="never load"):
        s.load(1)
    s.close()
    with pytest.raises(InvalidInput, match="no frontier"):
        open_driver(f"jsonl:{tmp_path}").start_commit({"offset": 3})
