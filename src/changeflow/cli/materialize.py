"""``changeflow materialize``: keep a table in an external store in step with a shard.

The command parses options and prints; the materialization itself (the clean stop on Ctrl-C,
the target guard, the durable hold on the shard) is ``changeflow.materialize``'s.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

import click

from changeflow.cli.common import INTERRUPTED, count, friendly, show_frontier, with_storage
from changeflow.errors import InvalidInput
from changeflow.time import Antichain

if TYPE_CHECKING:
    from changeflow.config import Config
    from changeflow.materialize.runtime import Materialization, Progress
    from changeflow.storage import Storage


TARGETS = "postgresql://…, sqlite:PATH, files:PATH, kv:PATH or jsonl:PATH"


@click.command("materialize")
@click.argument("shard_name", metavar="SHARD", required=False)
@click.option("--to", "target", help=f"The target: {TARGETS}.")
@click.option("--key", help="The key column(s), comma-separated: one row per key.")
@click.option(
    "--reduce",
    "reduce",
    multiple=True,
    metavar="COL=sum|merge",
    help="Reduce a column across a key's changes instead of keeping its one row (repeatable).",
)
@click.option(
    "--delta-updates",
    is_flag=True,
    help="Never load: a SQL target gets a change table, others each transaction's changes.",
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
@click.option(
    "--drop",
    "drop_name",
    metavar="NAME",
    help="Drop materialization NAME: release its hold on the shard, forget its checkpoint.",
)
@friendly
@partial(with_storage, with_config=True)
def materialize_command(
    storage: Storage,
    config: Config,
    shard_name: str | None,
    target: str | None,
    key: str | None,
    reduce: tuple[str, ...],
    delta_updates: bool,
    follow: bool,
    idle_timeout: float | None,
    force: bool,
    name: str | None,
    max_rows: int,
    out_of_process: bool,
    drop_name: str | None,
) -> None:
    """Materialize shard SHARD into a target store, one row per --key, exactly once.

    Runs until the target holds what the shard holds now; with --follow, until Ctrl-C (exit
    status 130) or --idle-timeout. A run goes on where the last one stopped (the recovery log
    is under the home; SQL targets keep their own checkpoint). --delta-updates into a SQL
    target writes a change table: the columns plus _time and _diff, a row per change.

    A materialization holds the shard's since at its checkpoint between runs, so it can
    always go on; --drop NAME lets go of it (and of the name).

    \b
    Example:
      changeflow materialize orders --to sqlite:orders.sqlite --key id
      changeflow materialize orders --to sqlite:sums.sqlite --key customer \\
          --reduce total=sum --name totals --follow
      changeflow materialize --drop totals
    """
    from changeflow.materialize.runtime import Materialization, driver_class

    if drop_name is not None:
        _drop(storage, config, drop_name, shard_name or target or key)
        return
    if shard_name is None or target is None or key is None:
        raise click.UsageError("materialize needs SHARD, --to and --key (or --drop NAME)")
    if idle_timeout is not None and not follow:
        raise InvalidInput("--idle-timeout goes with --follow")
    driver_class(target)  # an unknown target or shard fails before anything is opened
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
    done = _run(storage, config, spec, out_of_process, follow, idle_timeout)
    click.echo(_summary(spec, done, storage.state(shard_name).upper))
    if done.stopped:
        sys.exit(INTERRUPTED)


def _drop(storage: Storage, config: Config, name: str, other: str | None) -> None:
    """``--drop NAME``: release the hold and forget the checkpoint; say what was done."""
    from changeflow.materialize.runtime import drop

    if other is not None:
        raise click.UsageError("--drop NAME goes alone, without SHARD, --to or --key")
    shard = drop(storage, name, config.home / "materialize" / "recovery.sqlite")
    held = f"released its hold on shard {shard!r} and " if shard else ""
    click.echo(
        f"dropped materialization {name!r}: {held}forgot its checkpoint; its target keeps "
        "what was written"
    )


def _run(
    storage: Storage,
    config: Config,
    spec: Materialization,
    out_of_process: bool,
    follow: bool,
    idle_timeout: float | None,
) -> Progress:
    """Materialize, with a live progress line on stderr when it is a terminal."""
    from rich.console import Console

    from changeflow.materialize.runtime import materialize

    console = Console(stderr=True)
    with console.status(f"materializing {spec.shard!r} into {spec.target}…") as status:
        return materialize(
            storage,
            spec,
            recovery_log=config.home / "materialize" / "recovery.sqlite",
            out_of_process=out_of_process,
            follow=follow,
            idle_timeout=idle_timeout,
            on_progress=lambda p: status.update(_progress_line(p)),
            stop_on_interrupt=True,
        )


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
        f"{count(p.transactions, 'transaction')}, {count(p.updates, 'row')}, "
        f"{rate:,.0f} rows/s, frontier {show_frontier(p.frontier)}, lag {lag}"
    )


def _summary(spec: Materialization, p: Progress, upper: Antichain) -> str:
    """The last line of a run: what it did and how far the target holds the shard (a run that
    ends without a transaction has found the target at the shard's ``upper``)."""
    head = "stopped (Ctrl-C)" if p.stopped else "done"
    if p.stopped and not p.transactions:
        return (
            f"{head}: {spec.name!r} committed no new transaction; {spec.target} holds what "
            "earlier runs committed"
        )
    frontier = p.frontier if p.transactions else upper
    held = f"up to frontier {show_frontier(frontier)}" if frontier else "to the end (closed)"
    if not p.transactions:
        return f"{head}: {spec.name!r} is up to date; {spec.target} holds {spec.shard!r} {held}"
    rate = p.updates / p.seconds if p.seconds > 0 else 0.0
    return (
        f"{head}: {spec.name!r} committed {count(p.transactions, 'transaction')} "
        f"({count(p.updates, 'row')} read, {count(p.stores, 'store')}) in {p.seconds:.1f} s, "
        f"{rate:,.0f} rows/s; {spec.target} holds {spec.shard!r} {held}"
    )
