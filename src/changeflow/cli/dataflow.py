"""``changeflow dataflow``: what the views' dataflows report (frontiers, lag, state, steps)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from changeflow.cli.common import friendly, reading_storage, show_utc
from changeflow.cli.output import emit, format_option, print_all
from changeflow.errors import InvalidInput

if TYPE_CHECKING:
    from changeflow.compute.status import DataflowStatus
    from changeflow.storage import Storage


@click.group()
def dataflow() -> None:
    """Inspect the dataflows that maintain views."""


def _row(s: DataflowStatus) -> tuple:
    median = s.median_step
    return (
        s.name,
        "running" if s.running else "stopped",
        ", ".join(s.inputs),
        s.output,
        "[]" if s.frontier is None else f"[{s.frontier}]",
        s.lag,
        s.arranged,
        s.steps,
        None if median is None else f"{median * 1000:.1f} ms",
    )


COLUMNS = ("name", "state", "inputs", "output", "frontier", "lag", "arranged", "steps", "step")


@dataflow.command("list")
@format_option
@friendly
@reading_storage
def dataflow_list(storage: Storage, fmt: str) -> None:
    """List the dataflows: inputs, output, frontier, lag behind the inputs, rows arranged,
    steps and the median step time (of the last 20).

    \b
    Example:
      changeflow dataflow list --format json
    """
    from changeflow.compute.status import statuses

    found = statuses(storage.consensus)
    if not found and fmt == "table":
        click.echo("no dataflows yet", err=True)
        return
    emit(COLUMNS, [_row(s) for s in found], fmt, right=("lag", "arranged", "steps", "step"))


@dataflow.command("show")
@click.argument("name")
@friendly
@reading_storage
def dataflow_show(storage: Storage, name: str) -> None:
    """Show dataflow NAME: its plan, frontiers, the inputs' uppers and recent step times.

    \b
    Example:
      changeflow dataflow show revenue
    """
    from changeflow.compute.status import statuses

    found = {s.name: s for s in statuses(storage.consensus)}
    if name not in found:
        known = ", ".join(found) or "none"
        raise InvalidInput(f"no dataflow named {name!r}; the dataflows are: {known}")
    s = found[name]
    emit(COLUMNS, [_row(s)], "table")
    uppers = [(shard, "[]" if u is None else f"[{u}]") for shard, u in s.input_uppers.items()]
    emit(("input", "upper"), uppers, "table")
    steps = ", ".join(f"{t * 1000:.1f}" for t in s.step_seconds) or "none"
    from rich.markup import escape

    print_all(
        f"as of {s.as_of}; {s.updates_in:,} updates in, {s.updates_out:,} out; "
        f"last report {show_utc(s.reported_ms)}",
        f"recent steps (ms): {steps}",
        "plan:",
        escape(s.plan),
    )
