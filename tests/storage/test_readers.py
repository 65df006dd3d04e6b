"""Registered readers: durable read capabilities without a lease that hold ``since``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from changeflow.errors import CapabilityError, FrontierViolation
from changeflow.storage import Storage
from changeflow.time import Antichain

from .test_shard import Clock, contents, open_storage

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])
HOLDER = "materialization:t-to-sqlite"


def filled(storage: Storage) -> None:
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], 3)
    storage.append(write, [(("a", 1), 3, -1), (("b", 1), 3, 1)], 10)
    storage.drop(read)
    storage.drop(write)


def test_a_registered_reader_holds_since_against_other_readers_and_lapsed_leases(
    tmp_path: Path,
) -> None:
    clock = Clock()
    storage = open_storage(tmp_path, clock, lease=10)
    filled(storage)
    registered = storage.register_reader("t", HOLDER, "materializes t into out.sqlite")
    assert registered.frontier == Antichain([0]) and registered.holder == HOLDER
    storage.downgrade(registered, 2)
    other, write = storage.acquire_capabilities("t")
    storage.downgrade(other, 9)  # another reader moves on: since stays at the registered one
    assert storage.state("t").since == Antichain([2])
    clock.now += 1000  # every lease lapses; the registered reader never expires
    storage.heartbeat(registered)
    storage.compact("t")
    assert storage.state("t").since == Antichain([2])
    assert contents(storage.snapshot_table(registered, 2)) == {("a", 1): 1}
    assert storage.registered_readers("t") == {
        HOLDER: (Antichain([2]), "materializes t into out.sqlite")
    }
    with pytest.raises(FrontierViolation, match="back"):
        storage.downgrade(registered, 1)


def test_a_registered_reader_survives_reopening_and_resumes_where_it_was(tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    filled(storage)
    storage.downgrade(storage.register_reader("t", HOLDER, "first run"), 4)
    storage.close()

    storage = open_storage(tmp_path)
    read, _ = storage.acquire_capabilities("t")
    storage.downgrade(read, 9)
    assert storage.state("t").since == Antichain([4])
    resumed = storage.register_reader("t", HOLDER, "second run")
    assert resumed.frontier == Antichain([4])
    assert storage.registered_readers("t")[HOLDER].reason == "second run"
    assert contents(storage.snapshot_table(resumed, 4)) == {("b", 1): 1}


def test_release_lets_since_move_on(tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    filled(storage)
    registered = storage.register_reader("t", HOLDER, "why")
    read, _ = storage.acquire_capabilities("t")
    storage.downgrade(read, 7)
    assert storage.state("t").since == Antichain([0])
    assert storage.release_reader("t", HOLDER) is True
    assert storage.release_reader("t", HOLDER) is False
    assert storage.state("t").since == Antichain([7])
    assert storage.registered_readers("t") == {}
    with pytest.raises(CapabilityError, match="no longer registered"):
        storage.snapshot_table(registered, 7)
    # A new registration starts at the current since; dropping it releases it too.
    again = storage.register_reader("t", HOLDER, "why")
    assert again.frontier == Antichain([7])
    storage.drop(again)
    assert storage.registered_readers("t") == {}


def test_updates_after_a_time_are_those_of_the_whole_read_past_it(tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    read, write = storage.create("t", SCHEMA)
    for t in range(6):  # one batch per time: ("a", t) replaces ("a", t - 1)
        updates = [(("a", t), t, 1)] + ([(("a", t - 1), t, -1)] if t else [])
        storage.append(write, updates, t + 1)
    for as_of in range(6):
        every = read.updates_until(as_of)
        for after in range(-1, 7):
            got = read.updates_until(as_of, after=after)
            want = every.filter(pa.compute.greater(every.column("_time"), after))
            assert sorted(got.to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)
    assert read.updates_until(5, after=5).num_rows == 0
    assert read.updates_until(5, after=3).column("_time").to_pylist() == [4, 4, 5, 5]
