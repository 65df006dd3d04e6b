"""``changeflow shard``: inspect, read and compact durable shards."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from changeflow.cli.common import (
    count,
    friendly,
    reading_storage,
    show_frontier,
    show_interval,
    show_utc,
    with_storage,
)
from changeflow.cli.output import new_table, print_all
from changeflow.errors import FrontierViolation
from changeflow.time import MAX_TIME, Antichain

if TYPE_CHECKING:
    from changeflow.storage import Storage


@click.group()
def shard() -> None:
    """Inspect, read and compact durable shards."""


@shard.command("list")
@friendly
@reading_storage
def shard_list(storage: Storage) -> None:
    """List the shards: name, GlobalId, since, upper, batches and rows."""
    from rich.markup import escape

    names = storage.shards()
    if not names:
        click.echo("no shards yet", err=True)
        return
    table = new_table(None, "name", "id", "since", "upper", ">batches", ">rows")
    for name in names:
        s = storage.state(name)
        row = (name, s.id, show_frontier(s.since), show_frontier(s.upper), f"{len(s.batches):,}")
        table.add_row(*map(escape, row), f"{s.rows:,}")
    print_all(table)


@shard.command("show")
@click.argument("name")
@friendly
@reading_storage
def shard_show(storage: Storage, name: str) -> None:
    """Show shard NAME: frontiers, schema, batches, and every capability with who holds it
    and why (registered readers, leased readers, writers)."""
    import time

    from rich.markup import escape

    s = storage.state(name)
    closed = " (closed)" if not s.upper else ""
    head = (
        f"[bold]{escape(name)}[/bold] ({s.id}), timeline {escape(s.timeline)}: "
        f"since {show_frontier(s.since)}, upper {show_frontier(s.upper)}{closed}, "
        f"{count(s.rows, 'row')} in {count(len(s.batches), 'batch')}"
    )
    schema = new_table("schema", "column", "type", "nullable")
    for f in s.schema:
        schema.add_row(escape(f.name), escape(str(f.type)), "yes" if f.nullable else "no")
    batches = new_table("batches", ">#", "times", "since", ">rows", ">blobs")
    for i, b in enumerate(s.batches):
        times = show_interval(b.lower, b.upper)
        batches.add_row(str(i), times, show_frontier(b.since), f"{b.rows:,}", str(len(b.keys)))
    caps = new_table("capabilities", "kind", "holder", "frontier", "lease expires", "why / state")
    for holder, r in sorted(s.registered.items()):
        caps.add_row(
            "registered",
            escape(holder),
            show_frontier(r.frontier),
            "never expires",
            escape(r.reason),
        )
    now_ms = int(time.time() * 1000)
    for i, hold in sorted(s.readers.items(), key=lambda r: r[1].expires_ms):
        live = "expired" if hold.expires_ms <= now_ms else "live"
        caps.add_row("read", i, show_frontier(hold.frontier), show_utc(hold.expires_ms), live)
    for i, frontier in s.writers.items():
        caps.add_row("write", i, show_frontier(frontier), "-", "live")
    print_all(
        head,
        schema,
        batches if s.batches else "batches: none",
        caps if s.readers or s.registered or s.writers else "capabilities: none",
    )


@shard.command("read")
@click.argument("name")
@click.option("--as-of", type=int, help="Default: upper - 1 (a closed shard: its final contents).")
@click.option("--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table")
@click.option("--limit", type=click.IntRange(min=0), help="Print at most this many rows.")
@friendly
@reading_storage
def shard_read(storage: Storage, name: str, as_of: int | None, fmt: str, limit: int | None) -> None:
    """Print the rows of shard NAME at a time, with their counts.

    Reads under capabilities of its own, which it drops again before it exits.
    """
    from rich.markup import escape

    read_cap, write_cap = storage.acquire_capabilities(name)
    try:
        if as_of is None:
            as_of = _latest_time(name, read_cap.frontier, write_cap.frontier)
        contents = storage.snapshot_table(read_cap, as_of)
    finally:
        storage.drop(read_cap)
        storage.drop(write_cap)
    columns = [c for c in contents.column_names if not c.startswith("_")]
    sortable = [(c, "ascending") for c in columns if not _nested(contents.schema.field(c).type)]
    rows = contents.sort_by(sortable) if sortable else contents
    total = rows.num_rows
    rows = rows.slice(0, limit) if limit is not None else rows
    data, counts = rows.select(columns).to_pylist(), rows.column("_diff").to_pylist()
    if fmt == "jsonl":
        for row, count in zip(data, counts, strict=True):
            click.echo(json.dumps({"data": row, "count": count}, default=str, ensure_ascii=False))
        return
    when = "the end (closed)" if as_of == MAX_TIME else str(as_of)
    shown = f"first {len(data):,} of {total:,}" if len(data) < total else f"{total:,}"
    numeric = {c for c in columns if _numeric(contents.schema.field(c).type)}
    table = new_table(None, *(f">{c}" if c in numeric else c for c in columns), ">count")
    for row, count in zip(data, counts, strict=True):
        table.add_row(*(escape(_cell(row[c])) for c in columns), f"{count:,}")
    print_all(f"[bold]{escape(name)}[/bold] as of {when}: {shown} rows", table)


def _latest_time(name: str, since: Antichain, upper: Antichain) -> int:
    """The latest readable time: ``upper - 1``, or every time's contents for a closed shard."""
    if not upper:
        return MAX_TIME
    last = upper.elements[0] - 1
    if not since.less_equal(last):
        why = "nothing was appended yet" if upper == since else "since has passed upper"
        raise FrontierViolation(
            f"shard {name!r} has nothing to read: readable times are "
            f"[since {show_frontier(since)}, upper {show_frontier(upper)}) ({why})"
        )
    return last


def _nested(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_nested(kind)


def _numeric(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


@shard.command("compact")
@click.argument("name")
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="Delete unreferenced blobs only after this many seconds (in-flight readers).",
)
@friendly
@with_storage
def shard_compact(storage: Storage, name: str, grace: float) -> None:
    """Merge the batches of shard NAME into one, then delete unreferenced blobs."""
    before = storage.state(name)
    rows_before, rows_after = storage.compact(name)
    deleted = storage.collect_garbage(name, grace)
    after = storage.state(name)
    click.echo(
        f"{name}: {count(rows_before, 'row')} in {count(len(before.batches), 'batch')} -> "
        f"{count(rows_after, 'row')} in {count(len(after.batches), 'batch')} (advanced to "
        f"since {show_frontier(after.since)}); deleted {count(deleted, 'unreferenced blob')} "
        f"older than {grace:g} s"
    )
