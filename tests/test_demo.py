"""The main job, end to end on a small history."""

from __future__ import annotations

import json
import random
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from changeflow import demo
from changeflow.cli import main
from changeflow.collection import consolidate, read
from changeflow.config import Config
from changeflow.demo import generate_orders, run_demo
from changeflow.errors import InvalidInput
from changeflow.materialize.runtime import Progress
from changeflow.storage import Storage, ingest
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


def quadratic_orders(seed: int, ticks: int, per_tick: int) -> list:
    """The generator as first written (it lists the open orders for every pick): the oracle
    of the linear one's output."""
    rng = random.Random(seed)
    open_orders: dict[int, tuple] = {}
    history, next_id = [], 0
    for t in range(ticks):
        updates: list = []
        for _ in range(per_tick):
            roll = rng.random()
            if roll < 0.45 or len(open_orders) < 10:
                row = (next_id, f"c{rng.randrange(500):03d}", rng.randrange(100, 50_000), "new")
                open_orders[next_id] = row
                next_id += 1
                updates.append((row, t, 1))
                continue
            order_id = rng.choice(list(open_orders))
            old = open_orders[order_id]
            if roll < 0.85:
                status = rng.choice(["paid", "shipped", "returned"])
                new = (order_id, old[1], old[2] + rng.randrange(-50, 50), status)
                updates += [(old, t, -1), (new, t, 1)]
                open_orders[order_id] = new
            else:
                updates.append((old, t, -1))
                del open_orders[order_id]
        history.append((updates, Antichain([t + 1])))
    return history


@pytest.mark.parametrize("seed, ticks, per_tick", [(7, 200, 50), (3, 60, 20), (1, 5, 3)])
def test_the_linear_generator_makes_the_same_history(seed: int, ticks: int, per_tick: int) -> None:
    assert generate_orders(seed, ticks, per_tick) == quadratic_orders(seed, ticks, per_tick)


def test_open_orders_pick_by_rank_in_id_order_as_a_dict_lists_them() -> None:
    rng = random.Random(5)
    orders, oracle = demo._OpenOrders(2_000), {}
    for order_id in range(2_000):
        orders.add((order_id, "c", 1, "new"))
        oracle[order_id] = (order_id, "c", 1, "new")
        if oracle and rng.random() < 0.4:
            gone = rng.choice(list(oracle))
            orders.remove(gone)
            del oracle[gone]
        if oracle and rng.random() < 0.3:
            changed = (rng.choice(list(oracle)), "d", 2, "paid")
            orders.replace(changed)
            oracle[changed[0]] = changed
        assert len(orders) == len(oracle)
    listed = list(oracle.values())
    assert [orders.at(rank) for rank in range(len(listed))] == listed


def lines_run(ticks: int) -> int:
    """How many lines of ``changeflow.demo`` generating ``ticks * 20`` changes executes."""
    count = 0

    def trace(frame, event, arg):  # noqa: ANN001, ANN202
        nonlocal count
        if frame.f_code.co_filename == demo.__file__:
            count += event == "line"
            return trace
        return None

    sys.settrace(trace)
    try:
        generate_orders(seed=2, ticks=ticks, per_tick=20)
    finally:
        sys.settrace(None)
    return count


def test_the_generator_does_the_same_work_per_change_at_any_size() -> None:
    # Counted work, not time: 8x the changes may cost 8x the lines, and a little more for the
    # rank search (log n), never 8x times the growth in open orders.
    assert lines_run(800) < 8 * 1.5 * lines_run(100)


def test_advances_beyond_the_shard_upper_are_trimmed_and_grouped(monkeypatch) -> None:
    advances = [
        ([("a", 0, 1), ("b", 2, 1)], Antichain([3])),
        ([("c", 3, 1), ("d", 4, 1), ("e", 5, 1)], Antichain([6])),
        ([], Antichain([7])),
        ([("f", 8, 1)], Antichain()),
    ]
    assert list(ingest._beyond(advances, Antichain([0]))) == advances
    assert list(ingest._beyond(advances, Antichain([4]))) == [
        ([("d", 4, 1), ("e", 5, 1)], Antichain([6])),
        *advances[2:],
    ]
    assert list(ingest._beyond(advances, Antichain([7]))) == advances[3:]
    assert list(ingest._beyond(advances, Antichain())) == []
    monkeypatch.setattr(ingest, "APPEND_UPDATES", 3)
    groups = list(ingest._groups(advances))
    assert [(len(u), f, n) for u, f, n in groups] == [(5, Antichain([6]), 2), (1, Antichain(), 2)]


def test_an_orders_shard_of_another_schema_is_refused(tmp_path: Path) -> None:
    storage = Storage.open(Config.load(home=str(tmp_path)))
    storage.create("orders", pa.schema([("order_id", pa.string())]), "counter")
    with pytest.raises(InvalidInput, match="exists with columns \\(order_id string\\)"):
        demo._open_shard(storage)
    storage.close()


@pytest.mark.parametrize("flags", [["--ticks", "0"], ["--per-tick", "0"], ["--ticks", "-3"]])
def test_a_demo_without_changes_is_refused_in_one_line(tmp_path: Path, flags: list[str]) -> None:
    result = CliRunner().invoke(main, ["demo", "--home", str(tmp_path / "home"), *flags])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"Invalid value for '{flags[0]}': {flags[1]} is not in the range x>=1" in result.output
    with pytest.raises(InvalidInput, match="at least one tick and one change per tick"):
        run_demo(Config.load(home=str(tmp_path / "home")), ticks=5, per_tick=0)
    assert not (tmp_path / "home").exists()  # refused before anything was written


def test_a_manifest_reads_back_and_a_damaged_one_reads_as_none(tmp_path: Path) -> None:
    written = demo.Manifest(
        3, 4, 5, {"cdc/a.parquet": "ab"}, demo.fingerprint({(1, "c", 2, "new"): 1})
    )
    written.write(tmp_path)
    assert demo.Manifest.read(tmp_path) == written
    assert written.same_history(demo.Manifest(3, 4, 5)) and not written.same_history(
        demo.Manifest(3, 4, 6)
    )
    (tmp_path / demo.MANIFEST).write_text('{"ticks": 3')
    assert demo.Manifest.read(tmp_path) is None
    assert demo.Manifest.read(tmp_path / "missing") is None


def test_a_fingerprint_tells_collections_apart() -> None:
    a = {(1, "c001", 100, "new"): 1, (2, "c002", 200, "paid"): 1}
    assert demo.fingerprint(a) == demo.fingerprint(dict(reversed(a.items())))
    assert demo.fingerprint(a) != demo.fingerprint({**a, (2, "c002", 200, "paid"): 2})
    assert demo.fingerprint(a)[0] == 2


def files_of(root: Path) -> dict[str, int]:
    """Each file under ``root`` and when it was last written."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


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
    assert (tmp_path / "sql-demo" / "revenue.sqlite").is_file()  # the SQL half ran and agreed
    written = files_of(tmp_path / "demo")

    def generate(*args: Any) -> None:
        raise AssertionError("a rerun with nothing to do generated the history")

    monkeypatch.setattr(demo, "generate_orders", generate)
    assert run_demo(config, **SMALL)  # again: nothing generated, decoded or appended
    again = orders(tmp_path)
    assert (again.upper, again.batches) == (first.upper, first.batches)
    assert runs[1].transactions == 0 and sqlite_orders(tmp_path) == (rows, checkpoint)
    assert files_of(tmp_path / "demo") == written

    # Another history: refused before anything is written, whatever the files hold.
    with pytest.raises(
        InvalidInput,
        match="history of --ticks 60 --per-tick 20 --seed 3, not of .* --seed 4; .* new --home",
    ):
        run_demo(config, **{**SMALL, "seed": 4})
    assert files_of(tmp_path / "demo") == written and orders(tmp_path).batches == first.batches

    # A damaged file: everything is generated and decoded again, and nothing appended twice.
    monkeypatch.setattr(demo, "generate_orders", generate_orders)
    next((tmp_path / "demo" / "cdc-chaos").glob("*.parquet")).unlink()
    assert run_demo(config, **SMALL)
    assert files_of(tmp_path / "demo").keys() == written.keys()
    assert orders(tmp_path).batches == first.batches and len(runs) == 3
    assert runs[2].transactions == 0 and sqlite_orders(tmp_path) == (rows, checkpoint)


@pytest.mark.spark
def test_demo_resumes_after_an_interruption(spark, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ingest, "APPEND_ADVANCES", 1)  # one append per frontier advance
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
