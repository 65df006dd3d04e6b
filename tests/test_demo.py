"""The main job, end to end on a small history."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from changeflow import demo
from changeflow.collection import consolidate, read
from changeflow.config import Config
from changeflow.demo import generate_orders, run_demo
from changeflow.errors import InvalidInput
from changeflow.materialize.runtime import Progress
from changeflow.storage import Storage
from changeflow.storage.state import ShardState
from changeflow.time import Antichain

SMALL = {"ticks": 60, "per_tick": 20, "seed": 3}


def test_generated_orders_are_a_valid_history() -> None:
    history = generate_orders(seed=1, ticks=50, per_tick=20)
    updates = [u for ups, _ in history for u in ups]
    assert all(t == i for i, (ups, _) in enumerate(history) for _, t, _ in ups)
    final = read(updates, 50)
    assert final and all(n == 1 for n in final.values())  # a set of orders, one row each
    assert len({row[0] for row in final}) == len(final)  # one version per order id
    assert any(r < 0 for _, _, r in consolidate(updates))  # updates and deletes happen


def test_advances_beyond_the_shard_upper_are_trimmed_and_grouped(monkeypatch) -> None:
    advances = [
        ([("a", 0, 1), ("b", 2, 1)], Antichain([3])),
        ([("c", 3, 1), ("d", 4, 1), ("e", 5, 1)], Antichain([6])),
        ([], Antichain([7])),
        ([("f", 8, 1)], Antichain()),
    ]
    assert list(demo._beyond(advances, Antichain([0]))) == advances
    assert list(demo._beyond(advances, Antichain([4]))) == [
        ([("d", 4, 1), ("e", 5, 1)], Antichain([6])),
        *advances[2:],
    ]
    assert list(demo._beyond(advances, Antichain([7]))) == advances[3:]
    assert list(demo._beyond(advances, Antichain())) == []
    monkeypatch.setattr(demo, "APPEND_UPDATES", 3)
    groups = list(demo._groups(advances))
    assert [(len(u), f, n) for u, f, n in groups] == [(5, Antichain([6]), 2), (1, Antichain(), 2)]


def test_an_orders_shard_of_another_schema_is_refused(tmp_path: Path) -> None:
    storage = Storage.open(Config.load(home=str(tmp_path)))
    storage.create("orders", pa.schema([("order_id", pa.string())]), "counter")
    with pytest.raises(InvalidInput, match="exists with columns \\(order_id string\\)"):
        demo._open_shard(storage)
    storage.close()


def orders(home: Path) -> ShardState:
    storage = Storage.open(Config.load(home=str(home)))
    try:
        return storage.state("orders")
    finally:
        storage.close()


def check_contiguous(state: ShardState) -> None:
    """Batches tile [0, upper) once: no time range was appended twice, none was skipped."""
    bounds = [(b.lower, b.upper) for b in state.batches]
    assert bounds[0][0] == Antichain([0]) and bounds[-1][1] == state.upper
    assert all(prev[1] == nxt[0] for prev, nxt in zip(bounds, bounds[1:], strict=False))


def sqlite_orders(home: Path) -> tuple[list[tuple], str]:
    """The rows of table ``orders`` in ``<home>/orders.sqlite`` and its checkpoint."""
    with closing(sqlite3.connect(home / "orders.sqlite")) as db:
        rows = db.execute("SELECT * FROM orders ORDER BY order_id").fetchall()
        (checkpoint,) = db.execute("SELECT checkpoint FROM changeflow_checkpoints").fetchone()
    return rows, checkpoint


@pytest.mark.spark
def test_demo_recovers_the_exact_collection(spark, tmp_path: Path, monkeypatch) -> None:
    runs: list[Progress] = []

    def materialize(*args: Any, **kwargs: Any) -> Progress:
        runs.append(demo_materialize(*args, **kwargs))
        return runs[-1]

    demo_materialize = demo.materialize
    monkeypatch.setattr(demo, "materialize", materialize)
    config = Config.load(home=str(tmp_path), spark_master="local[2]")
    assert run_demo(config, **SMALL)
    assert (tmp_path / "demo" / "cdc-chaos").is_dir()
    first = orders(tmp_path)
    assert first.upper == Antichain() and first.rows > 0  # the CDC stream was closed
    assert (first.readers, first.writers) == ({}, {})  # the job dropped its capabilities
    check_contiguous(first)
    history = [u for ups, _ in generate_orders(**SMALL) for u in ups]
    rows, checkpoint = sqlite_orders(tmp_path)
    assert dict.fromkeys(rows, 1) == read(history, SMALL["ticks"])
    assert json.loads(checkpoint)["frontier"] == []  # kept by the SQLite driver with its data
    assert runs[0].transactions > 0 and runs[0].frontier == Antichain()
    assert run_demo(config, **SMALL)  # again: everything is durable already, nothing appended
    again = orders(tmp_path)
    assert (again.upper, again.batches) == (first.upper, first.batches)
    assert runs[1].transactions == 0 and sqlite_orders(tmp_path) == (rows, checkpoint)


@pytest.mark.spark
def test_demo_resumes_after_an_interruption(spark, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(demo, "APPEND_ADVANCES", 1)  # one append per frontier advance
    config = Config.load(home=str(tmp_path), spark_master="local[2]")
    assert not run_demo(config, **SMALL, stop_after_appends=1)
    stopped = orders(tmp_path)
    assert len(stopped.batches) == 1 and stopped.upper not in (Antichain([0]), Antichain())
    assert not (tmp_path / "orders.sqlite").exists()  # materialized once the shard is complete
    assert run_demo(config, **SMALL)
    state = orders(tmp_path)
    assert state.batches[0] == stopped.batches[0] and len(state.batches) > 1
    check_contiguous(state)
    history = generate_orders(**SMALL)
    storage = Storage.open(config)
    read_cap, write_cap = storage.acquire_capabilities("orders")
    table = storage.snapshot_table(read_cap, SMALL["ticks"] - 1)
    expected = read([u for ups, _ in history for u in ups], SMALL["ticks"])
    assert demo._rows(table) == expected
    assert dict.fromkeys(sqlite_orders(tmp_path)[0], 1) == expected  # materialized once
    with pytest.raises(InvalidInput, match="holds a different history"):
        demo._check_held(storage, read_cap, state.upper, history[0][0], SMALL["ticks"])
    storage.close()
