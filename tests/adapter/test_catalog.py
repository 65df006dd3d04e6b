"""The catalog: ids never reused, names unique under racing processes, drop order."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from changeflow.adapter.catalog import Catalog, Item
from changeflow.errors import PlanError
from changeflow.storage.consensus import open_consensus


def create(location: str, name: str) -> str:
    consensus = open_consensus(location)
    catalog = Catalog(consensus)

    def add(state):
        gid, state = state.allocate()
        return state.with_item(Item(gid, name, "table", f"CREATE TABLE {name} ()")), gid

    try:
        return catalog.change(add)
    except PlanError as e:
        return e.fields.get("sqlstate") or e.sqlstate
    finally:
        consensus.close()


def test_racing_processes_creating_one_name_one_wins(tmp_path: Path) -> None:
    location = f"sqlite:{tmp_path / 'c.sqlite'}"
    open_consensus(location).close()
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.starmap(create, [(location, "t")] * 8)
    winners = [r for r in results if r.startswith("u")]
    assert len(winners) == 1 and results.count("42P07") == 7
    state = Catalog(open_consensus(location)).load()
    assert [i.name for i in state.items.values()] == ["t"]


def test_ids_are_never_reused_and_dependents_drop_first(tmp_path: Path) -> None:
    catalog = Catalog(open_consensus(f"sqlite:{tmp_path / 'c.sqlite'}"))

    def add(name, kind, depends=()):
        def change(state):
            gid, state = state.allocate()
            return state.with_item(Item(gid, name, kind, "", depends_on=depends)), gid

        return catalog.change(change)

    t = add("t", "table")
    v = add("v", "view", (t,))
    w = add("w", "view", (v,))
    state = catalog.load()
    assert [i.id for i in state.closure(t)] == [w, v, t]
    catalog.change(lambda s: (s.without([t, v, w]), None))
    assert add("t", "table") == "u4"


def test_a_failing_change_changes_nothing(tmp_path: Path) -> None:
    catalog = Catalog(open_consensus(f"sqlite:{tmp_path / 'c.sqlite'}"))

    def boom(state):
        raise PlanError("no", sqlstate="42000")

    with pytest.raises(PlanError):
        catalog.change(boom)
    assert catalog.load().next_id == 1
