"""The main job, end to end on a small history."""

from __future__ import annotations

from pathlib import Path

import pytest

from changeflow.collection import consolidate, read
from changeflow.config import Config
from changeflow.demo import generate_orders, run_demo


def test_generated_orders_are_a_valid_history() -> None:
    history = generate_orders(seed=1, ticks=50, per_tick=20)
    updates = [u for ups, _ in history for u in ups]
    assert all(t == i for i, (ups, _) in enumerate(history) for _, t, _ in ups)
    final = read(updates, 50)
    assert final and all(n == 1 for n in final.values())  # a set of orders, one row each
    assert len({row[0] for row in final}) == len(final)  # one version per order id
    assert any(r < 0 for _, _, r in consolidate(updates))  # updates and deletes happen


@pytest.mark.spark
def test_demo_recovers_the_exact_collection(spark, tmp_path: Path) -> None:
    config = Config.load(home=str(tmp_path), spark_master="local[2]")
    assert run_demo(config, ticks=60, per_tick=20, seed=3)
    assert (tmp_path / "demo" / "cdc-chaos").is_dir()
