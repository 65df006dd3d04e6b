"""The ``changeflow`` command line. A user's mistake prints one line and exits non-zero."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from changeflow.errors import ChangeflowError, FrontierViolation, InvalidInput
from changeflow.time import MAX_TIME, Antichain, sort_key, time_from_json, time_to_json

if TYPE_CHECKING:
    from changeflow.storage import Storage

FORMAT = click.Choice(["jsonl", "avro", "parquet"])


def _friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn changeflow's errors into one line on stderr and exit status 1."""

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ChangeflowError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
        except BrokenPipeError:
            sys.exit(0)

    return run


@click.group()
@click.version_option(package_name="changeflow")
def main() -> None:
    """changeflow: exact, consistent views of change streams on Spark."""


@main.command()
@click.option("--home", help="Data folder (default: $CHANGEFLOW_HOME or ./changeflow-data).")
@click.option("--master", help="Spark master (default: $CHANGEFLOW_SPARK_MASTER or local[*]).")
@click.option("--ticks", default=1000, show_default=True, help="Times in the generated history.")
@click.option("--per-tick", default=50, show_default=True, help="Order changes per time.")
@click.option("--seed", default=7, show_default=True)
@_friendly
def demo(home: str | None, master: str | None, ticks: int, per_tick: int, seed: int) -> None:
    """The main job: orders -> CDC v2 by two writers -> chaos -> Spark -> the exact collection."""
    from changeflow.config import Config
    from changeflow.demo import run_demo

    config = Config.load(home=home, spark_master=master)
    if not run_demo(config, ticks, per_tick, seed):
        sys.exit(1)


@main.group()
def cdc() -> None:
    """Write down and read back changes with the CDC v2 protocol."""


def _history_line(frontier: Antichain, updates: Iterable[tuple[Any, Any, int]]) -> str:
    """One decoded frontier advance as a JSON line, updates in (time, data) order."""
    rows = [(sort_key(t), json.dumps(d, sort_keys=True), d, t, r) for d, t, r in updates]
    rows.sort(key=lambda row: row[:2])
    body = [[d, time_to_json(t), r] for _, _, d, t, r in rows]
    return json.dumps({"frontier": frontier.to_json(), "updates": body}, ensure_ascii=False)


@cdc.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMAT, help="Default: from the file extensions.")
@click.option("--spark", is_flag=True, help="Decode data-parallel on Spark (one advance).")
@_friendly
def decode(paths: tuple[str, ...], fmt: str | None, spark: bool) -> None:
    """Print the history that the CDC v2 files under PATHS recover, one frontier advance a line.

    Every file is read and checked before anything is printed.
    """
    if spark:
        frontier, updates = _decode_spark(paths, fmt)
        lines = [_history_line(frontier, updates)]
    else:
        from changeflow.cdc.files import open_source
        from changeflow.cdc.reader import CdcReader

        source = open_source(paths, fmt)
        reader = CdcReader(audit=True)
        lines = [
            _history_line(frontier, [(source.data_to_json(d), t, r) for d, t, r in batch])
            for batch, frontier in reader.read(source.messages())
        ]
        frontier = reader.frontier
    # Printed only once every file was read and checked: a contradiction prints no history.
    for line in lines:
        click.echo(line)
    if frontier:
        click.echo(
            f"note: the history is complete only up to frontier {frontier.to_json()}; "
            "`changeflow cdc stats` shows what is missing",
            err=True,
        )


def _decode_spark(paths: Iterable[str], fmt: str | None) -> tuple[Antichain, list]:
    from changeflow.cdc.spark import read_cdc
    from changeflow.spark import get_spark

    frame, frontier = read_cdc(get_spark(), list(paths), fmt)
    columns = [c for c in frame.columns if c not in ("_time", "_diff")]
    out = []
    for row in frame.toLocalIterator():
        values = row.asDict()
        data = (
            json.loads(values["data"]) if columns == ["data"] else {c: values[c] for c in columns}
        )
        out.append((data, values["_time"], values["_diff"]))
    return frontier, out


@cdc.command()
@click.argument("history", type=click.File("r", encoding="utf-8"), default="-")
@click.option("--out", "out", type=click.Path(file_okay=False), required=True)
@click.option("--format", "fmt", type=FORMAT, default="jsonl", show_default=True)
@click.option("--batch-size", default=1024, show_default=True, help="Updates per message.")
@click.option("--files", default=1, show_default=True, help="Spread messages over this many.")
@click.option("--close", is_flag=True, help="Close the stream at the end (frontier []).")
@_friendly
def encode(history: Any, out: str, fmt: str, batch_size: int, files: int, close: bool) -> None:
    """Turn a JSON-lines HISTORY (update and frontier lines) into CDC v2 files in --out.

    Lines are {"data": …, "time": …, "diff": …} or {"frontier": […]}; updates are written once
    a frontier passes their time.
    """
    from changeflow.cdc.files import json_data_as_rows, write_messages
    from changeflow.cdc.jsonl import canonical_json
    from changeflow.cdc.writer import CdcWriter

    writer, messages, pending = CdcWriter(batch_size), [], []
    for number, line in enumerate(history, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if isinstance(obj, dict) and obj.keys() == {"frontier"}:
                messages += writer.write(pending, Antichain.from_json(obj["frontier"]))
                pending = []
            elif isinstance(obj, dict) and {"data", "time", "diff"} <= obj.keys():
                diff = obj["diff"]
                if isinstance(diff, bool) or not isinstance(diff, int):
                    raise InvalidInput(f"diff must be an int, not {diff!r}")
                pending.append((canonical_json(obj["data"]), time_from_json(obj["time"]), diff))
            else:
                raise InvalidInput('expected {"data", "time", "diff"} or {"frontier"}')
        except json.JSONDecodeError as e:
            raise InvalidInput(f"line {number}: not JSON: {e.msg}") from None
        except ChangeflowError as e:
            raise type(e)(f"line {number}: {e}") from None
    if close:
        messages += writer.write(pending, Antichain()) if pending else writer.close()
    elif pending:
        click.echo(
            f"note: {len(pending)} updates after the last frontier were not written; "
            "add a frontier line or --close",
            err=True,
        )
    columns = None
    if fmt != "jsonl":
        columns, messages = json_data_as_rows(messages)
    written = write_messages(Path(out), messages, fmt, columns, files)
    click.echo(f"wrote {len(messages)} messages to {len(written)} files in {out}", err=True)


@cdc.command()
@click.argument("src", nargs=1)
@click.argument("dst", nargs=1)
@click.option("--seed", default=0, show_default=True)
@click.option("--files", default=8, show_default=True, help="Spread messages over this many.")
@click.option("--duplication", default=0.5, show_default=True, help="Chance to repeat each.")
@click.option("--format", "fmt", type=FORMAT, help="Default: from the file extensions.")
@_friendly
def chaos(src: str, dst: str, seed: int, files: int, duplication: float, fmt: str | None) -> None:
    """Copy the CDC v2 folder SRC to DST, duplicated, reordered and re-batched (seeded)."""
    from changeflow.cdc.chaos import chaos_copy

    if Path(dst).exists() and any(Path(dst).iterdir()):
        raise InvalidInput(f"{dst} is not empty; chaos writes into a new or empty folder")
    written = chaos_copy([src], Path(dst), seed, files, duplication, fmt)
    click.echo(f"wrote {len(written)} files to {dst}", err=True)


@cdc.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMAT, help="Default: from the file extensions.")
@_friendly
def stats(paths: tuple[str, ...], fmt: str | None) -> None:
    """Count the messages under PATHS and say what keeps the frontier from advancing."""
    from changeflow.cdc.files import open_source
    from changeflow.cdc.stats import cdc_stats

    for line in cdc_stats(open_source(paths, fmt).messages()).lines():
        click.echo(line)


@main.group()
def shard() -> None:
    """Inspect, read and compact durable shards."""


def _with_storage(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add --home, --consensus and --blob-root; pass the opened Storage as the first argument."""

    @click.option("--home", help="Data folder (default: $CHANGEFLOW_HOME or ./changeflow-data).")
    @click.option("--consensus", help="sqlite:PATH or postgresql://… (default: under the home).")
    @click.option("--blob-root", help="Where shard data lives (default: a folder in the home).")
    @wraps(fn)
    def run(home: str | None, consensus: str | None, blob_root: str | None, **kwargs: Any) -> Any:
        from changeflow.config import Config
        from changeflow.storage import Storage

        config = Config.load(home=home, consensus=consensus, blob_root=blob_root)
        storage = Storage.open(config)
        try:
            return fn(storage, **kwargs)
        finally:
            storage.close()

    return run


def _frontier(frontier: Antichain) -> str:
    return json.dumps(frontier.to_json())


def _interval(lower: Antichain, upper: Antichain) -> str:
    """``[lower, upper)`` of int frontiers; the empty frontier shows as ∞."""
    low, high = (json.dumps(f.to_json()[0]) if f else "∞" for f in (lower, upper))
    return f"[{low}, {high})"


def _utc(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(title: str | None, *columns: str) -> Any:
    """A rich table; columns named ``>name`` are right-aligned."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for c in columns:
        table.add_column(c.lstrip(">"), justify="right" if c.startswith(">") else "left")
    return table


def _print(*renderables: Any) -> None:
    from rich.console import Console

    console = Console()
    for r in renderables:
        console.print(r)


@shard.command("list")
@_friendly
@_with_storage
def shard_list(storage: Storage) -> None:
    """List the shards: name, GlobalId, since, upper, batches and rows."""
    from rich.markup import escape

    names = storage.shards()
    if not names:
        click.echo("no shards yet", err=True)
        return
    table = _table(None, "name", "id", "since", "upper", ">batches", ">rows")
    for name in names:
        s = storage.state(name)
        row = (name, s.id, _frontier(s.since), _frontier(s.upper), f"{len(s.batches):,}")
        table.add_row(*map(escape, row), f"{s.rows:,}")
    _print(table)


@shard.command("show")
@click.argument("name")
@_friendly
@_with_storage
def shard_show(storage: Storage, name: str) -> None:
    """Show shard NAME: frontiers, schema, batches and capabilities."""
    import time

    from rich.markup import escape

    s = storage.state(name)
    closed = " (closed)" if not s.upper else ""
    head = (
        f"[bold]{escape(name)}[/bold] ({s.id}), timeline {escape(s.timeline)}: "
        f"since {_frontier(s.since)}, upper {_frontier(s.upper)}{closed}, "
        f"{_count(s.rows, 'row')} in {_count(len(s.batches), 'batch')}"
    )
    schema = _table("schema", "column", "type", "nullable")
    for f in s.schema:
        schema.add_row(escape(f.name), escape(str(f.type)), "yes" if f.nullable else "no")
    batches = _table("batches", ">#", "times", "since", ">rows", ">blobs")
    for i, b in enumerate(s.batches):
        times = _interval(b.lower, b.upper)
        batches.add_row(str(i), times, _frontier(b.since), f"{b.rows:,}", str(len(b.keys)))
    caps = _table("capabilities", "kind", "id", "frontier", "lease expires", "state")
    now_ms = int(time.time() * 1000)
    for i, hold in sorted(s.readers.items(), key=lambda r: r[1].expires_ms):
        live = "expired" if hold.expires_ms <= now_ms else "live"
        caps.add_row("read", i, _frontier(hold.frontier), _utc(hold.expires_ms), live)
    for i, frontier in s.writers.items():
        caps.add_row("write", i, _frontier(frontier), "-", "live")
    _print(
        head,
        schema,
        batches if s.batches else "batches: none",
        caps if s.readers or s.writers else "capabilities: none",
    )


@shard.command("read")
@click.argument("name")
@click.option("--as-of", type=int, help="Default: upper - 1 (a closed shard: its final contents).")
@click.option("--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table")
@click.option("--limit", type=click.IntRange(min=0), help="Print at most this many rows.")
@_friendly
@_with_storage
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
    table = _table(None, *(f">{c}" if c in numeric else c for c in columns), ">count")
    for row, count in zip(data, counts, strict=True):
        table.add_row(*(escape(_cell(row[c])) for c in columns), f"{count:,}")
    _print(f"[bold]{escape(name)}[/bold] as of {when}: {shown} rows", table)


def _latest_time(name: str, since: Antichain, upper: Antichain) -> int:
    """The latest readable time: ``upper - 1``, or every time's contents for a closed shard."""
    if not upper:
        return MAX_TIME
    last = upper.elements[0] - 1
    if not since.less_equal(last):
        why = "nothing was appended yet" if upper == since else "since has passed upper"
        raise FrontierViolation(
            f"shard {name!r} has nothing to read: readable times are "
            f"[since {_frontier(since)}, upper {_frontier(upper)}) ({why})"
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
@_friendly
@_with_storage
def shard_compact(storage: Storage, name: str, grace: float) -> None:
    """Merge the batches of shard NAME into one, then delete unreferenced blobs."""
    before = storage.state(name)
    rows_before, rows_after = storage.compact(name)
    deleted = storage.collect_garbage(name, grace)
    after = storage.state(name)
    click.echo(
        f"{name}: {_count(rows_before, 'row')} in {_count(len(before.batches), 'batch')} -> "
        f"{_count(rows_after, 'row')} in {_count(len(after.batches), 'batch')} (advanced to "
        f"since {_frontier(after.since)}); deleted {_count(deleted, 'unreferenced blob')} "
        f"older than {grace:g} s"
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 'es' if noun.endswith('ch') else 's'}"


if __name__ == "__main__":
    main()
