"""The main job's second half: the same orders, now through SQL.

Two CDC sources in one timeline (the chaos-mangled orders, fed file by file as if they were
arriving, and a closed feed of customers), a materialized view joining and aggregating them,
its changes printed as SUBSCRIBE rows while the files arrive, a sink into SQLite, a table in
wall-clock time, and the timeline error for a view that joins the two timelines. At the end the
view, the same query evaluated from scratch, and the SQLite table must be equal.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

from rich.console import Console

from changeflow.adapter.connection import Connection, DatabaseError, connect
from changeflow.cdc.files import write_messages
from changeflow.cdc.writer import write_history
from changeflow.config import Config
from changeflow.time import Antichain
from changeflow.updates import canonical_json

REGIONS = ("north", "south", "east", "west")
QUERY = (
    "SELECT c.region, o.status, count(*) AS orders, sum(o.amount_cents) AS amount "
    "FROM orders o JOIN customers c ON o.customer = c.customer GROUP BY c.region, o.status"
)
BATCHES = 4


def run_sql_demo(config: Config, console: Console) -> bool:
    """Run the SQL half on ``config``'s home (after the first half wrote its chaos files);
    return whether the view, the query from scratch and the sink's table agree."""
    root = config.home / "sql-demo"
    chaos = _groups(config.home / "demo" / "cdc-chaos")
    if not chaos:
        console.print("[red]no chaos files to feed the SQL half[/red]")
        return False
    with connect(config=config, host_seconds=0) as conn:
        console.print("[bold]SQL[/bold]: the same orders as CDC sources, a view, a sink")
        fresh = not _rows(conn, "SHOW SOURCES")
        live = root / "cdc-live"
        if fresh:
            shutil.rmtree(live, ignore_errors=True)
            _feed(live, chaos[: len(chaos) // BATCHES])
            _customers(root / "cdc-customers")
            _create(conn, root, live)
        subscription = conn.subscribe("SUBSCRIBE revenue")
        _print_changes(console, "as of now", subscription.poll(0.5))
        fed = len(list(live.iterdir()))
        for i in range(1, BATCHES + 1):
            todo = chaos[: len(chaos) * i // BATCHES]
            if sum(len(g) for g in todo) <= fed:
                continue
            _feed(live, todo)
            conn.env.tick()
            _print_changes(console, f"after batch {i} of {BATCHES}", subscription.poll(2.0))
        conn.env.tick()
        return _check(console, conn, root)


def _groups(folder: Path) -> list[list[Path]]:
    """The files of a CDC folder grouped by stem (a Parquet file and its progress file)."""
    by_stem: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(folder.glob("*")) if folder.exists() else []:
        by_stem[path.name.split(".")[0]].append(path)
    return list(by_stem.values())


def _feed(live: Path, groups: list[list[Path]]) -> None:
    """Copy the files of ``groups`` into the live folder (each under a temporary name first,
    so a reader never sees half a file)."""
    live.mkdir(parents=True, exist_ok=True)
    for group in groups:
        for path in group:
            target = live / path.name
            if not target.exists():
                shutil.copyfile(path, live / f".{path.name}.tmp")
                (live / f".{path.name}.tmp").rename(target)


def _customers(folder: Path) -> None:
    """The customers of the orders, each in a region, as a closed CDC feed."""
    rows = [
        (canonical_json({"customer": f"c{i:03d}", "region": REGIONS[i % 4]}), 0, 1)
        for i in range(500)
    ]
    shutil.rmtree(folder, ignore_errors=True)
    write_messages(folder, write_history([(rows, Antichain([1]))]), "jsonl")


def _create(conn: Connection, root: Path, live: Path) -> None:
    for sql in (
        f"CREATE SOURCE customers FROM CDC '{root / 'cdc-customers'}' FORMAT JSON "
        "(customer text NOT NULL, region text NOT NULL) WITH (TIMELINE = 'shop')",
        f"CREATE SOURCE orders FROM CDC '{live}' FORMAT PARQUET (order_id bigint NOT NULL, "
        "customer text NOT NULL, amount_cents bigint NOT NULL, status text NOT NULL) "
        "WITH (TIMELINE = 'shop')",
        f"CREATE MATERIALIZED VIEW revenue AS {QUERY}",
        f"CREATE SINK revenue_out FROM revenue INTO 'sqlite:{root / 'revenue.sqlite'}' "
        "KEY (region, status)",
        "CREATE TABLE region_goals (region text NOT NULL, goal bigint NOT NULL)",
        "INSERT INTO region_goals VALUES "
        + ", ".join(f"('{r}', {10_000_000 * (i + 1)})" for i, r in enumerate(REGIONS)),
    ):
        conn.execute(sql)


def _print_changes(console: Console, when: str, rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        console.print(f"  [dim]{when}: no changes[/dim]")
        return
    times = sorted({r[0] for r in rows})
    console.print(
        f"  {when}: {len(rows)} SUBSCRIBE rows at {len(times)} times "
        f"({times[0]}…{times[-1]}), for example:"
    )
    for t, diff, region, status, orders, amount in rows[:3]:
        console.print(f"    mz_timestamp={t} mz_diff={diff:+d} {region} {status} {orders} {amount}")


def _check(console: Console, conn: Connection, root: Path) -> bool:
    view = sorted(_rows(conn, "SELECT * FROM revenue"))
    scratch = sorted(_rows(conn, QUERY))
    with sqlite3.connect(root / "revenue.sqlite") as db:
        found = db.execute("SELECT region, status, orders, amount FROM revenue_out")
        sunk = sorted((r, s, n, Decimal(a)) for r, s, n, a in found)  # SQLite keeps it as text
    try:
        conn.execute(
            "CREATE VIEW goals_met AS SELECT r.*, g.goal FROM revenue r JOIN region_goals g "
            "ON r.region = g.region"
        )
        refused = False
    except DatabaseError as e:
        refused = e.sqlstate == "0A000"
        console.print(f"  a view joining timelines is refused: [yellow]{e}[/yellow]")
    exact = view == scratch == sunk and bool(view) and refused
    mark = "[green]✓[/green]" if exact else "[red]✗[/red]"
    console.print(
        f"{mark} view 'revenue' ({len(view)} rows), the query from scratch and the SQLite "
        f"table 'revenue_out' are {'equal' if view == scratch == sunk else 'NOT equal'}"
    )
    return exact


def _rows(conn: Connection, sql: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql).fetchall()
