"""``changeflow shard``: create, inspect, read, compact and drop durable shards."""

from __future__ import annotations

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
from changeflow.cli.output import FORMATS, emit, format_option, new_table, print_all
from changeflow.errors import FrontierViolation, InvalidInput
from changeflow.time import MAX_TIME, Antichain, check_int_time
from changeflow.updates import DIFF, data_columns

if TYPE_CHECKING:
    from changeflow.storage import Storage


TYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "string",
    "binary",
    "date32",
    "timestamp[ms]",
    "timestamp[us]",
)


@click.group()
def shard() -> None:
    """Create, inspect, read, compact and drop durable shards."""


@shard.command("create")
@click.argument("name")
@click.option(
    "--schema",
    "spec",
    required=True,
    help="Columns as NAME:TYPE[ not null], comma-separated; TYPE is one of: "
    + ", ".join(TYPES)
    + ".",
)
@click.option(
    "--timeline", default="epoch_ms", show_default=True, help="The timeline of its times."
)
@friendly
@with_storage
def shard_create(storage: Storage, name: str, spec: str, timeline: str) -> None:
    """Create an empty shard NAME with the given columns (since = upper = [0]).

    \b
    Example:
      changeflow shard create orders --schema "order_id:int64 not null, customer:string"
    """
    schema = parse_schema(spec)
    read_cap, write_cap = storage.create(name, schema, timeline)
    storage.drop(read_cap)
    storage.drop(write_cap)
    click.echo(f"created shard {name!r} ({storage.state(name).id}): {spec_of(schema)}")


@shard.command("drop")
@click.argument("name")
@click.option("--force", is_flag=True, help="Drop it even while registered readers hold it.")
@friendly
@with_storage
def shard_drop(storage: Storage, name: str, force: bool) -> None:
    """Drop shard NAME and delete its data; refused while registered readers (such as a
    materialization) hold it, unless --force.

    \b
    Example:
      changeflow shard drop orders
    """
    holders = sorted(storage.registered_readers(name))
    storage.drop_shard(name, force=force)
    forced = f" (it was held by {', '.join(holders)})" if holders else ""
    click.echo(f"dropped shard {name!r}{forced}")


@shard.command("list")
@format_option
@friendly
@reading_storage
def shard_list(storage: Storage, fmt: str) -> None:
    """List the shards: name, GlobalId, since, upper, batches and rows.

    \b
    Example:
      changeflow shard list --format csv
    """
    names = storage.shards()
    if not names and fmt == "table":
        click.echo("no shards yet", err=True)
        return
    rows = []
    for name in names:
        s = storage.state(name)
        rows.append((name, s.id, s.since.to_json(), s.upper.to_json(), len(s.batches), s.rows))
    columns = ("name", "id", "since", "upper", "batches", "rows")
    emit(columns, rows, fmt, right=("batches", "rows"))


@shard.command("show")
@click.argument("name")
@friendly
@reading_storage
def shard_show(storage: Storage, name: str) -> None:
    """Show shard NAME: frontiers, schema, batches, and every capability with who holds it
    and why (registered readers, leased readers, writers).

    \b
    Example:
      changeflow shard show orders
    """
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
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*FORMATS, "jsonl"]),
    default="table",
    show_default=True,
    help='table for people; json (one {"data": …, "count": …} a line; jsonl is the same) or '
    "csv for scripts.",
)
@click.option("--limit", type=click.IntRange(min=0), help="Print at most this many rows.")
@friendly
@reading_storage
def shard_read(storage: Storage, name: str, as_of: int | None, fmt: str, limit: int | None) -> None:
    """Print the rows of shard NAME at a time, with their counts.

    Reads under capabilities of its own, which it drops again before it exits.

    \b
    Example:
      changeflow shard read orders --as-of 1700000000000 --format json --limit 10
    """
    from rich.markup import escape

    if as_of is not None:
        check_int_time(as_of, "--as-of")
    read_cap, write_cap = storage.acquire_capabilities(name)
    try:
        if as_of is None:
            as_of = _latest_time(name, read_cap.frontier, write_cap.frontier)
        contents = storage.snapshot_table(read_cap, as_of)
    finally:
        storage.drop(read_cap)
        storage.drop(write_cap)
    columns = data_columns(contents.column_names)
    sortable = [(c, "ascending") for c in columns if not _nested(contents.schema.field(c).type)]
    rows = contents.sort_by(sortable) if sortable else contents
    total = rows.num_rows
    rows = rows.slice(0, limit) if limit is not None else rows
    data, counts = rows.select(columns).to_pylist(), rows.column(DIFF).to_pylist()
    if fmt in ("json", "jsonl"):
        emit(("data", "count"), zip(data, counts, strict=True), "json")
        return
    table = [(*(row[c] for c in columns), n) for row, n in zip(data, counts, strict=True)]
    numeric = [c for c in columns if _numeric(contents.schema.field(c).type)]
    if fmt == "table":
        when = "the end (closed)" if as_of == MAX_TIME else str(as_of)
        shown = f"first {len(data):,} of {total:,}" if len(data) < total else f"{total:,}"
        print_all(f"[bold]{escape(name)}[/bold] as of {when}: {shown} rows")
    emit((*columns, "count"), table, fmt, right=(*numeric, "count"))


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


def parse_schema(spec: str) -> Any:
    """A pyarrow schema from ``"name:type[ not null], …"``; one clear error for any mistake."""
    import pyarrow as pa

    from changeflow.storage.frames import check_data_schema

    fields = []
    for i, part in enumerate(spec.split(","), 1):
        name, colon, rest = part.strip().partition(":")
        words = rest.split()
        kind = words[0].lower() if words else ""
        if not colon or not name.strip() or not kind:
            raise InvalidInput(
                f"--schema column {i} is {part.strip()!r}; write NAME:TYPE or "
                "NAME:TYPE not null, comma-separated"
            )
        if kind not in TYPES:
            raise InvalidInput(
                f"--schema column {name.strip()!r} has unknown type {words[0]!r}; the types "
                f"are {', '.join(TYPES)}"
            )
        if [w.lower() for w in words[1:]] not in ([], ["not", "null"]):
            raise InvalidInput(
                f"--schema column {name.strip()!r}: {' '.join(words[1:])!r} after the type; "
                "only 'not null' may follow it"
            )
        fields.append(pa.field(name.strip(), pa.type_for_alias(kind), len(words) == 1))
    return check_data_schema(pa.schema(fields))


def spec_of(schema: Any) -> str:
    """The ``--schema`` text of ``schema``."""
    import pyarrow as pa

    names = {pa.type_for_alias(t): t for t in TYPES}
    return ", ".join(
        f"{f.name}:{names.get(f.type, f.type)}{'' if f.nullable else ' not null'}" for f in schema
    )


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
    """Merge the batches of shard NAME into one, then delete unreferenced blobs.

    \b
    Example:
      changeflow shard compact orders --grace 60
    """
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
