"""The ``changeflow`` command line. A user's mistake prints one line and exits non-zero."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from changeflow.errors import ChangeflowError, FrontierViolation, InvalidInput
from changeflow.materialize.protocol import Acknowledge, Message, Opened
from changeflow.materialize.transport import Transport
from changeflow.time import MAX_TIME, Antichain, sort_key, time_from_json, time_to_json

if TYPE_CHECKING:
    from changeflow.config import Config
    from changeflow.materialize.runtime import Materialization, Progress
    from changeflow.storage import Storage

FORMAT = click.Choice(["jsonl", "avro", "parquet"])


def _friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn changeflow's errors into one line on stderr and exit status 1."""

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ChangeflowError as e:
            lines = (line.strip() for line in str(e).splitlines())
            click.echo(f"error: {' '.join(line for line in lines if line)}", err=True)
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
    """The main job: orders -> CDC v2 by two writers -> chaos -> Spark -> the exact collection
    -> durable shard 'orders' -> table 'orders' in <home>/orders.sqlite, exactly once."""
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


def _with_storage(fn: Callable[..., Any], with_config: bool = False) -> Callable[..., Any]:
    """Add --home, --consensus and --blob-root; pass the opened Storage as the first argument
    (and the Config as the second, ``with_config``)."""

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
            return fn(storage, config, **kwargs) if with_config else fn(storage, **kwargs)
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


TARGETS = "postgresql://…, sqlite:PATH, files:PATH, kv:PATH or jsonl:PATH"


@main.command("materialize")
@click.argument("shard_name", metavar="SHARD")
@click.option("--to", "target", required=True, help=f"The target: {TARGETS}.")
@click.option("--key", required=True, help="The key column(s), comma-separated: one row per key.")
@click.option(
    "--reduce",
    "reduce",
    multiple=True,
    metavar="COL=sum|merge",
    help="Reduce a column across a key's changes instead of keeping its one row (repeatable).",
)
@click.option(
    "--delta-updates", is_flag=True, help="Store each transaction's changes alone, never loading."
)
@click.option("--follow", is_flag=True, help="Keep up with the shard until Ctrl-C.")
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0),
    help="With --follow: stop after this many seconds without anything new.",
)
@click.option("--force", is_flag=True, help="Allow a sum through an at-least-once target (kv).")
@click.option("--name", help="The materialization's name (default: SHARD-to-SCHEME).")
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="A transaction closes at the next time boundary beyond this many updates.",
)
@click.option("--out-of-process", is_flag=True, help="Run the driver as a subprocess.")
@_friendly
@partial(_with_storage, with_config=True)
def materialize_command(
    storage: Storage,
    config: Config,
    shard_name: str,
    target: str,
    key: str,
    reduce: tuple[str, ...],
    delta_updates: bool,
    follow: bool,
    idle_timeout: float | None,
    force: bool,
    name: str | None,
    max_rows: int,
    out_of_process: bool,
) -> None:
    """Materialize shard SHARD into a target store, one row per --key, exactly once.

    Runs until the target holds what the shard holds now; with --follow, until Ctrl-C or
    --idle-timeout. A run goes on where the last one stopped (the recovery log is under the
    home; SQL targets keep their own checkpoint).
    """
    from rich.console import Console

    from changeflow.materialize.runtime import Materialization, driver_class, materialize

    if idle_timeout is not None and not follow:
        raise InvalidInput("--idle-timeout goes with --follow")
    kind = driver_class(target)  # an unknown target or shard fails before anything is opened
    storage.state(shard_name)
    keys = tuple(k.strip() for k in key.split(",") if k.strip())
    if not keys:
        raise InvalidInput(f"--key {key!r} names no column")
    scheme = target.split(":", 1)[0]
    spec = Materialization(
        name or f"{shard_name}-to-{scheme}",
        shard_name,
        target,
        keys,
        _reductions(reduce),
        delta_updates,
        force,
        max_rows,
    )
    targets = None if kind.authoritative else config.home / "materialize" / "targets.json"
    if targets is not None:
        _check_target(targets, spec.name, target)
    seen: list[Progress] = []
    transport = _Stoppable(target, out_of_process)
    console = Console(stderr=True)
    previous = signal.signal(signal.SIGINT, transport.interrupt)
    try:
        with console.status(f"materializing {shard_name!r} into {target}…") as status:

            def show(progress: Progress) -> None:
                if targets is not None and not seen:
                    _record_target(targets, spec.name, target)
                seen[:] = [replace(progress)]
                status.update(_progress_line(progress))
                transport.committed()

            try:
                done: Progress | None = materialize(
                    storage,
                    spec,
                    recovery_log=config.home / "materialize" / "recovery.sqlite",
                    transport=transport,
                    follow=follow,
                    idle_timeout=idle_timeout,
                    on_progress=show,
                )
            except KeyboardInterrupt:
                done = seen[0] if seen else None
    finally:
        signal.signal(signal.SIGINT, previous)
    click.echo(_summary(spec, done, transport.requested, storage.state(shard_name).upper))


class _Stoppable(Transport):
    """The driver's transport, stopped cleanly by Ctrl-C: while no transaction is open the
    interrupt is raised at once, else once the transaction has committed; either way the
    driver hears that its last commit went through before it closes. A second Ctrl-C stops at
    once (the recovery log still makes the next run go on exactly once)."""

    def __init__(self, target: str, out_of_process: bool) -> None:
        from changeflow.materialize.drivers import open_driver
        from changeflow.materialize.transport import InProcess, Subprocess

        command = [sys.executable, "-m", "changeflow.materialize.drivers", target]
        self.inner: Transport = (
            Subprocess(command) if out_of_process else InProcess(open_driver(target))
        )
        self.between = False  # the last transaction is committed, the next not yet begun
        self.requested = False

    def send(self, message: Message) -> None:
        self.between = False
        self.inner.send(message)

    def receive(self, timeout: float | None = None) -> Message:
        message = self.inner.receive(timeout)
        self.between = isinstance(message, Opened)
        return message

    def committed(self) -> None:
        """A transaction committed to the recovery log: stop here if asked to."""
        self.between = True
        if self.requested:
            raise KeyboardInterrupt

    def interrupt(self, signum: int, frame: Any) -> None:
        was, self.requested = self.requested, True
        if self.between or was:
            raise KeyboardInterrupt

    def close(self) -> None:
        try:
            if self.requested and self.between:
                self.inner.send(Acknowledge())
                self.inner.receive(timeout=600)
        except (ChangeflowError, TimeoutError):
            pass  # the next run acknowledges it
        finally:
            self.inner.close()


def _canonical(target: str) -> str:
    """A target URL with its path made absolute (``sqlite:a`` and ``sqlite:/…/a`` are one)."""
    scheme, _, rest = target.partition(":")
    if scheme in ("postgresql", "postgres") or not rest:
        return target
    return f"{scheme}:{Path(rest).expanduser().absolute()}"


def _check_target(path: Path, name: str, target: str) -> None:
    """Refuse a new target under the name of a materialization whose checkpoint is in the
    recovery log: the new target would be skipped up to where the old one got."""
    known = json.loads(path.read_text()) if path.exists() else {}
    before = known.get(name)
    if before is not None and before != _canonical(target):
        raise InvalidInput(
            f"materialization {name!r} writes to {before}, and the recovery log holds its "
            f"checkpoint there; pass another --name to materialize into {target}"
        )


def _record_target(path: Path, name: str, target: str) -> None:
    """Remember the target of ``name`` (see :func:`_check_target`)."""
    import os

    known = json.loads(path.read_text()) if path.exists() else {}
    known[name] = _canonical(target)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    os.replace(temp, path)


def _reductions(items: Iterable[str]) -> dict[str, str]:
    """``COL=sum|merge`` options as a dict."""
    out: dict[str, str] = {}
    for item in items:
        column, _, how = item.partition("=")
        if not column.strip() or not how.strip():
            raise InvalidInput(f"--reduce {item!r} is not COL=sum or COL=merge")
        out[column.strip()] = how.strip()
    return out


def _progress_line(p: Progress) -> str:
    """One line of a running materialization's progress."""
    rate = p.updates / p.seconds if p.seconds > 0 else 0.0
    lag = "?" if p.lag is None else f"{p.lag:,}"
    return (
        f"{_count(p.transactions, 'transaction')}, {_count(p.updates, 'row')}, "
        f"{rate:,.0f} rows/s, frontier {_frontier(p.frontier)}, lag {lag}"
    )


def _summary(spec: Materialization, p: Progress | None, stopped: bool, upper: Antichain) -> str:
    """The last line of a run: what it did and how far the target holds the shard (a run that
    ends without a transaction has found the target at the shard's ``upper``)."""
    head = "stopped (Ctrl-C)" if stopped else "done"
    if p is None:
        return (
            f"{head}: {spec.name!r} committed no new transaction; {spec.target} holds what "
            "earlier runs committed"
        )
    frontier = p.frontier if p.transactions else upper
    held = f"up to frontier {_frontier(frontier)}" if frontier else "to the end (closed)"
    if not p.transactions:
        return f"{head}: {spec.name!r} is up to date; {spec.target} holds {spec.shard!r} {held}"
    rate = p.updates / p.seconds if p.seconds > 0 else 0.0
    return (
        f"{head}: {spec.name!r} committed {_count(p.transactions, 'transaction')} "
        f"({_count(p.updates, 'row')} read, {_count(p.stores, 'store')}) in {p.seconds:.1f} s, "
        f"{rate:,.0f} rows/s; {spec.target} holds {spec.shard!r} {held}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 'es' if noun.endswith('ch') else 's'}"


if __name__ == "__main__":
    main()
