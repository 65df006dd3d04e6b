"""``changeflow materialize``: keep a table in an external store in step with a shard."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from changeflow.cli.common import count, friendly, show_frontier, with_storage
from changeflow.errors import ChangeflowError, InvalidInput
from changeflow.materialize.protocol import Acknowledge, Message, Opened
from changeflow.materialize.transport import Transport
from changeflow.time import Antichain

if TYPE_CHECKING:
    from changeflow.config import Config
    from changeflow.materialize.runtime import Materialization, Progress
    from changeflow.storage import Storage


TARGETS = "postgresql://…, sqlite:PATH, files:PATH, kv:PATH or jsonl:PATH"


@click.command("materialize")
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
@friendly
@partial(with_storage, with_config=True)
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
        f"{count(p.transactions, 'transaction')}, {count(p.updates, 'row')}, "
        f"{rate:,.0f} rows/s, frontier {show_frontier(p.frontier)}, lag {lag}"
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
    held = f"up to frontier {show_frontier(frontier)}" if frontier else "to the end (closed)"
    if not p.transactions:
        return f"{head}: {spec.name!r} is up to date; {spec.target} holds {spec.shard!r} {held}"
    rate = p.updates / p.seconds if p.seconds > 0 else 0.0
    return (
        f"{head}: {spec.name!r} committed {count(p.transactions, 'transaction')} "
        f"({count(p.updates, 'row')} read, {count(p.stores, 'store')}) in {p.seconds:.1f} s, "
        f"{rate:,.0f} rows/s; {spec.target} holds {spec.shard!r} {held}"
    )
