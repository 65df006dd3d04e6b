"""``changeflow demo``: the main job on embedded defaults."""

from __future__ import annotations

import sys

import click

from changeflow.cli.common import friendly

AT_LEAST_ONE = click.IntRange(min=1)


@click.command()
@click.option("--home", help="Data folder (default: $CHANGEFLOW_HOME or ./changeflow-data).")
@click.option("--master", help="Spark master (default: $CHANGEFLOW_SPARK_MASTER or local[*]).")
@click.option(
    "--ticks", type=AT_LEAST_ONE, default=1000, show_default=True, help="Times in the history."
)
@click.option(
    "--per-tick", type=AT_LEAST_ONE, default=50, show_default=True, help="Order changes per time."
)
@click.option("--seed", default=7, show_default=True, help="Seed of the generated history.")
@friendly
def demo(home: str | None, master: str | None, ticks: int, per_tick: int, seed: int) -> None:
    """The main job: orders -> CDC v2 by two writers -> chaos -> Spark -> the exact collection
    -> durable shard 'orders' -> table 'orders' in <home>/orders.sqlite, exactly once.

    A rerun with the same --ticks, --per-tick and --seed, whose files are unchanged and whose
    shard holds the whole history, generates and decodes nothing: it checks the shard and the
    table and says so. A home holds one history: for another seed or size, use a new --home.

    \b
    Example:
      changeflow demo --home /tmp/shop --ticks 200 --per-tick 20 --master 'local[2]'
    """
    from changeflow.config import Config
    from changeflow.demo import run_demo

    config = Config.load(home=home, spark_master=master)
    if not run_demo(config, ticks, per_tick, seed):
        sys.exit(1)
