"""The main job: a change history of orders goes through CDC v2, chaos and Spark, and comes back.

Generate orders created, updated and deleted over time; write the history as CDC v2 by two
redundant writers; duplicate, reorder and re-batch the files; decode them on Spark; print the
collection at the final frontier and check it against the original, exactly.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.table import Table

from changeflow.cdc.chaos import chaos_copy
from changeflow.cdc.files import write_messages
from changeflow.cdc.writer import write_history
from changeflow.collection import read
from changeflow.config import Config
from changeflow.time import Antichain

COLUMNS = ["order_id", "customer", "amount_cents", "status"]
Row = tuple[int, str, int, str]


def generate_orders(
    seed: int = 7, ticks: int = 1000, per_tick: int = 50
) -> list[tuple[list[tuple[Row, int, int]], Antichain]]:
    """A history of ``(updates, frontier)`` steps: orders created, updated and deleted."""
    rng = random.Random(seed)
    open_orders: dict[int, Row] = {}
    history, next_id = [], 0
    for t in range(ticks):
        updates: list[tuple[Row, int, int]] = []
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


@contextmanager
def _step(console: Console, what: str) -> Iterator[None]:
    start = time.perf_counter()
    with console.status(f"{what}…"):
        yield
    console.print(f"[green]✓[/green] {what} [dim]({time.perf_counter() - start:.1f} s)[/dim]")


def run_demo(config: Config, ticks: int = 1000, per_tick: int = 50, seed: int = 7) -> bool:
    """Run the example end to end; return whether the recovered collection is exact."""
    from changeflow.cdc.spark import read_cdc
    from changeflow.spark import get_spark

    console = Console()
    root = config.home / "demo"
    shutil.rmtree(root, ignore_errors=True)
    writers = [root / "cdc" / "writer-a", root / "cdc" / "writer-b"]
    chaos_dir = root / "cdc-chaos"

    with _step(console, f"generated {ticks} ticks of order changes"):
        history = generate_orders(seed, ticks, per_tick)
        original = [u for updates, _ in history for u in updates]
    with _step(console, f"wrote {len(original):,} updates as CDC v2 (Parquet) by two writers"):
        for folder, batch_size in zip(writers, (1_000, 5_000), strict=True):
            messages = write_history(history, batch_size)
            write_messages(folder, messages, "parquet", COLUMNS, files=4)
    with _step(console, "duplicated, reordered and re-batched them (chaos)"):
        files = chaos_copy(writers, chaos_dir, seed=seed, files=32, duplication=0.5)
    with _step(console, f"started Spark ({config.spark_master})"):
        spark = get_spark(config.spark_master)
    with _step(console, f"decoded {len(files)} files on Spark"):
        frame, frontier = read_cdc(spark, [str(chaos_dir)], "parquet")
        current = frame.groupBy(*COLUMNS).sum("_diff").withColumnRenamed("sum(_diff)", "count")
        recovered = {tuple(r[c] for c in COLUMNS): r["count"] for r in current.collect()}
        recovered = {row: n for row, n in recovered.items() if n}

    expected = read(original, ticks)
    _show(console, recovered, frontier)
    exact = recovered == expected
    if exact:
        console.print(
            f"[bold green]exact:[/bold green] the {len(expected):,} rows recovered at frontier "
            f"{frontier.to_json()} equal the original collection"
        )
    else:
        missing = len(expected.items() - recovered.items())
        extra = len(recovered.items() - expected.items())
        console.print(f"[bold red]mismatch:[/bold red] {missing} rows missing, {extra} extra")
    return exact


def _show(console: Console, rows: dict[Row, int], frontier: Antichain, limit: int = 10) -> None:
    table = Table(title=f"orders at frontier {frontier.to_json()} (first {limit} of {len(rows):,})")
    for c in (*COLUMNS, "count"):
        table.add_column(
            c, justify="right" if c in ("order_id", "amount_cents", "count") else "left"
        )
    for row, n in sorted(rows.items())[:limit]:
        table.add_row(*map(str, row), str(n))
    console.print(table)
    by_status: dict[str, int] = {}
    for row, n in rows.items():
        by_status[row[3]] = by_status.get(row[3], 0) + n
    console.print("by status: " + ", ".join(f"{s} {n:,}" for s, n in sorted(by_status.items())))
