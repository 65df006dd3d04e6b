"""``changeflow cdc``: write down and read back changes with the CDC v2 protocol."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from changeflow.cdc import formats
from changeflow.cli.common import count, friendly, show_frontier, with_storage
from changeflow.errors import ChangeflowError, InvalidInput, with_context
from changeflow.time import Antichain, sort_key, time_from_json, time_to_json
from changeflow.updates import DIFF, TIME, canonical_json, data_columns

FORMAT = click.Choice(formats.NAMES)


@click.group()
def cdc() -> None:
    """Write down and read back changes with the CDC v2 protocol."""


def _history_line(frontier: Antichain, updates: Iterable[tuple[Any, Any, int]]) -> str:
    """One decoded frontier advance as a JSON line, updates in (time, data) order."""
    rows = [(sort_key(t), canonical_json(d), d, t, r) for d, t, r in updates]
    rows.sort(key=lambda row: row[:2])
    body = [[d, time_to_json(t), r] for _, _, d, t, r in rows]
    return json.dumps({"frontier": frontier.to_json(), "updates": body}, ensure_ascii=False)


@cdc.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMAT, help="Default: from the file extensions.")
@click.option("--spark", is_flag=True, help="Decode data-parallel on Spark (one advance).")
@friendly
def decode(paths: tuple[str, ...], fmt: str | None, spark: bool) -> None:
    """Print the history that the CDC v2 files under PATHS recover, one frontier advance a line.

    Every file is read and checked before anything is printed.

    \b
    Example:
      changeflow cdc decode cdc/ mangled/
      changeflow cdc decode mangled/ --spark
    """
    if spark:
        frontier, updates = _decode_spark(paths, fmt)
        lines = [_history_line(frontier, updates)]
    else:
        from changeflow.cdc.columnar import ColumnarReader
        from changeflow.cdc.files import open_source

        source = open_source(paths, fmt)
        reader = ColumnarReader(audit=True)
        lines = [
            _history_line(frontier, _table_updates(table, source.codec.json_data))
            for message in source.tables()
            for table, frontier in reader.feed(message)
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


def _table_updates(table: Any, json_data: bool) -> list[tuple[Any, Any, int]]:
    """The updates of a decoded table as (JSON data, time, diff)."""
    columns = data_columns(table.column_names)
    if json_data:
        data = [json.loads(d) for d in table.column(columns[0]).to_pylist()]
    else:
        data = table.select(columns).to_pylist()
    times = table.column(TIME).to_pylist()
    if times and isinstance(times[0], list):
        times = [time_from_json(t) for t in times]
    return list(zip(data, times, table.column(DIFF).to_pylist(), strict=True))


def _decode_spark(paths: Iterable[str], fmt: str | None) -> tuple[Antichain, list]:
    from changeflow.cdc.spark import read_cdc
    from changeflow.spark import get_spark

    frame, frontier = read_cdc(get_spark(), list(paths), fmt)
    columns = data_columns(frame.columns)
    out = []
    for row in frame.toLocalIterator():
        values = row.asDict()
        data = (
            json.loads(values["data"]) if columns == ["data"] else {c: values[c] for c in columns}
        )
        out.append((data, values[TIME], values[DIFF]))
    return frontier, out


@cdc.command()
@click.argument("history", type=click.File("rb"), default="-")
@click.option("--out", "out", type=click.Path(file_okay=False), required=True)
@click.option("--format", "fmt", type=FORMAT, default="jsonl", show_default=True)
@click.option("--batch-size", default=1024, show_default=True, help="Updates per message.")
@click.option("--files", default=1, show_default=True, help="Spread messages over this many.")
@click.option("--close", is_flag=True, help="Close the stream at the end (frontier []).")
@click.option("--overwrite", is_flag=True, help="Replace the CDC files --out holds already.")
@friendly
def encode(
    history: Any, out: str, fmt: str, batch_size: int, files: int, close: bool, overwrite: bool
) -> None:
    """Turn a JSON-lines HISTORY (update and frontier lines) into CDC v2 files in --out.

    Lines are {"data": …, "time": …, "diff": …} or {"frontier": […]}; updates are written once
    a frontier passes their time. The whole history is read and checked before a file is
    written; --out must be new or empty unless --overwrite.

    \b
    Example:
      changeflow cdc encode history.jsonl --out cdc/ --format parquet --files 4 --close
    """
    from changeflow.cdc.files import json_data_as_rows, write_messages

    folder = Path(out)
    if not overwrite and folder.exists() and any(folder.iterdir()):
        raise InvalidInput(f"{out} is not empty; pass --overwrite to replace its CDC files")
    messages, pending = _history_messages(history, batch_size, close)
    if pending:
        click.echo(
            f"note: {pending} updates after the last frontier were not written; "
            "add a frontier line or --close",
            err=True,
        )
    columns = None
    if fmt != "jsonl":
        columns, messages = json_data_as_rows(messages)
    written = write_messages(folder, messages, fmt, columns, files, replace=overwrite)
    click.echo(f"wrote {len(messages)} messages to {len(written)} files in {out}", err=True)


def _history_messages(lines: Iterable[bytes], batch_size: int, close: bool) -> tuple[list, int]:
    """The CDC v2 messages of a history's lines, and how many updates were left after the
    last frontier (written when ``close``); an error names the line."""
    from changeflow.cdc.formats.base import INT64
    from changeflow.cdc.formats.jsonl import parse_line
    from changeflow.cdc.writer import CdcWriter

    writer, messages, pending = CdcWriter(batch_size), [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = parse_line(line)
            if isinstance(obj, dict) and obj.keys() == {"frontier"}:
                messages += writer.write(pending, Antichain.from_json(obj["frontier"]))
                pending = []
            elif isinstance(obj, dict) and {"data", "time", "diff"} <= obj.keys():
                diff = obj["diff"]
                if isinstance(diff, bool) or not isinstance(diff, int):
                    raise InvalidInput(f"diff must be an int, not {diff!r}")
                if diff not in INT64:
                    raise InvalidInput(f"diff {diff} is beyond 64 bits (-2^63 <= diff < 2^63)")
                pending.append((canonical_json(obj["data"]), time_from_json(obj["time"]), diff))
            else:
                raise InvalidInput('expected {"data", "time", "diff"} or {"frontier"}')
        except ChangeflowError as e:
            raise with_context(e, f"line {number}") from None
    if close:
        messages += writer.write(pending, Antichain()) if pending else writer.close()
        pending = []
    return messages, len(pending)


@cdc.command()
@click.argument("src", nargs=1)
@click.argument("dst", nargs=1)
@click.option("--seed", default=0, show_default=True)
@click.option("--files", default=8, show_default=True, help="Spread messages over this many.")
@click.option("--duplication", default=0.5, show_default=True, help="Chance to repeat each.")
@click.option("--format", "fmt", type=FORMAT, help="Default: from the file extensions.")
@friendly
def chaos(src: str, dst: str, seed: int, files: int, duplication: float, fmt: str | None) -> None:
    """Copy the CDC v2 folder SRC to DST, duplicated, reordered and re-batched (seeded).

    DST must be new or empty.

    \b
    Example:
      changeflow cdc chaos cdc/ mangled/ --seed 3 --files 32
    """
    from changeflow.cdc.chaos import chaos_copy

    if Path(dst).exists() and any(Path(dst).iterdir()):
        raise InvalidInput(f"{dst} is not empty; chaos writes into a new or empty folder")
    written = chaos_copy([src], Path(dst), seed, files, duplication, fmt)
    click.echo(f"wrote {len(written)} files to {dst}", err=True)


@cdc.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=FORMAT, help="Default: from the file extensions.")
@friendly
def stats(paths: tuple[str, ...], fmt: str | None) -> None:
    """Count the messages under PATHS and say what keeps the frontier from advancing.

    \b
    Example:
      changeflow cdc stats mangled/
    """
    from changeflow.cdc.files import open_source
    from changeflow.cdc.stats import cdc_stats

    for line in cdc_stats(open_source(paths, fmt).messages()).lines():
        click.echo(line)


@cdc.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--into", "shard", required=True, help="The shard to append to (it must exist).")
@click.option("--format", "fmt", type=FORMAT, help="Default: from the file extensions.")
@friendly
@with_storage
def ingest(storage: Any, paths: tuple[str, ...], shard: str, fmt: str | None) -> None:
    """Append the history that the CDC v2 files under PATHS recover to shard --into.

    The shard must exist (`changeflow shard create`). Every file is decoded and checked, and
    every update fitted to the shard's columns (by name), before anything is appended. The
    shard resumes at its upper: what it holds already is skipped, so a rerun appends nothing.

    \b
    Example:
      changeflow cdc ingest mangled/ --into orders
    """
    from rich.console import Console

    from changeflow.storage.ingest import IngestStats
    from changeflow.storage.ingest import ingest as run_ingest

    with Console(stderr=True).status(f"decoding {', '.join(paths)}…") as status:

        def show(s: IngestStats) -> None:
            status.update(
                f"appended {count(s.updates, 'update')} to {shard!r} in "
                f"{count(s.appends, 'append')}, up to {show_frontier(s.upper)}…"
            )

        stats = run_ingest(storage, shard, paths, fmt, on_progress=show)
    click.echo(_ingest_summary(stats))


def _ingest_summary(s: Any) -> str:
    if not s.appends:
        return f"shard {s.shard!r} holds this history already (upper {show_frontier(s.upper)})"
    return (
        f"appended {count(s.updates, 'update')} to shard {s.shard!r} in "
        f"{count(s.appends, 'append')} ({count(s.advances, 'frontier advance')}): upper "
        f"{show_frontier(s.start)} -> {show_frontier(s.upper)}"
    )
