"""Sinks: a table, source or materialized view kept in an external store exactly once.

A sink is a materialization (:mod:`changeflow.materialize.runtime`) named by the sink's
GlobalId, so a rename changes nothing outside. Creating a sink runs it once to catch up, so a
bad target or key fails at CREATE SINK; the host runs it again every tick.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from changeflow.adapter.catalog import Item
from changeflow.adapter.environment import EPOCH, Environment
from changeflow.adapter.typmods import pads
from changeflow.errors import ChangeflowError, PlanError, Timeout, with_context

WAIT_SECONDS = 5.0  # how long a host's run of a sink waits for its input to be complete
OPTIONS = {
    "delta": "a change table (_time, _diff) instead of current rows",
    "table": "the table (or file) name in the target; default: the sink's name",
}


def check_sink(
    env: Environment, name: str, source: Item, target: str, key: list[str], options: dict[str, str]
) -> dict[str, Any]:
    """A sink's options, checked against the item it reads; a table's columns are written
    under their SQL names, whatever their stored ones (:mod:`changeflow.adapter.alter`)."""
    from changeflow.materialize.runtime import driver_class

    unknown = sorted(options.keys() - OPTIONS.keys())
    if unknown:
        raise PlanError(
            f"unknown sink option {unknown[0].upper()}; the options are "
            + ", ".join(k.upper() for k in OPTIONS),
            sqlstate="42601",
        )
    columns = {c[0] for c in source.columns}
    missing = [k for k in key if k not in columns]
    if not key or missing:
        raise PlanError(
            f'KEY column "{missing[0]}" is not a column of {source.kind} "{source.name}"'
            if missing
            else "a sink needs KEY (columns)",
            sqlstate="42703",
        )
    driver_class(target)
    delta = options.get("delta", "false").lower() in ("true", "on", "1")
    table = options.get("table", name)
    out = {"from": source.id, "target": target, "key": key, "delta": delta, "table": table}
    if source.kind == "table":
        from changeflow.adapter.alter import layout

        names = [c[0] for c in source.columns]
        out["columns"] = [list(p) for p in zip(layout(env, source).names, names, strict=True)]
    return out


def _log(env: Environment) -> Path:
    return env.config.home / "materialize" / "recovery.sqlite"


def run_sink(env: Environment, item: Item, first: bool = False) -> None:
    """Bring the sink's target up to date with what its input holds now; the ``first`` time
    (CREATE SINK) a NULL in a key column is refused before anything is written."""
    from changeflow.materialize.runtime import Materialization, materialize

    if not first:  # as the catalog has it now: an ALTER TABLE may have pinned its columns
        item = env.catalog.load().items.get(item.id, item)
    o = item.options
    if item.timeline == EPOCH:
        # the host's run waits a little for its input, then leaves the sink to the next tick
        deadline = float("inf") if first else time.monotonic() + WAIT_SECONDS
        try:
            env.make_readable({o["from"]}, env.oracle(EPOCH).read_ts(), deadline)
        except Timeout:
            return
    if first:
        try:
            _start_now(env, item)
            _refuse_null_keys(env, item)
        except ChangeflowError as e:
            _release_start(env, item)
            raise with_context(e, f'sink "{item.name}"') from None
    spec = Materialization(
        item.id,
        o["from"],
        o["target"],
        tuple(o["key"]),
        {},
        o["delta"],
        resource=o["table"],
        columns=tuple((s, n) for s, n in o["columns"]) if "columns" in o else None,
        pads=tuple(pads(env.catalog.load().items[o["from"]]).items()),
    )
    _log(env).parent.mkdir(parents=True, exist_ok=True)
    try:
        materialize(env.storage, spec, _log(env))
    except ChangeflowError as e:
        if first:
            _release_start(env, item)
        raise with_context(e, f'sink "{item.name}"') from None


def _as_of(state: Any, since: int) -> int | None:
    """The latest complete time of a shard (its upper less one), not before ``since``; None
    while nothing is complete."""
    upper = state.upper.elements[0] if state.upper else None
    return None if upper is None or upper == 0 else max(upper - 1, since)


def _start_now(env: Environment, item: Item) -> None:
    """Place the new sink's hold on its input at the input's latest complete time, so that it
    starts from the input's contents now (as Materialize's sinks do), not from its history:
    a view's first times hold what it showed before it caught up with its inputs (an
    aggregate's NULL sum over no rows, refused as a NULL key)."""
    from changeflow.materialize.runtime import holder

    shard = env.catalog.load().items[item.options["from"]].shard
    read = env.storage.register_reader(shard, holder(item.id), "CREATE SINK starts from now")
    as_of = _as_of(env.storage.state(shard), read.frontier.elements[0]) if read.frontier else None
    if as_of is not None:
        env.storage.downgrade(read, as_of)


def _release_start(env: Environment, item: Item) -> None:
    """Release the hold :func:`_start_now` placed (a sink that could not start keeps none)."""
    from changeflow.materialize.runtime import holder

    shard = env.catalog.load().items[item.options["from"]].shard
    with contextlib.suppress(ChangeflowError):
        env.storage.release_reader(shard, holder(item.id))


def _refuse_null_keys(env: Environment, item: Item) -> None:
    """A NULL in a nullable key column of the input's contents now is an error (so no table
    or checkpoint is left behind by a sink that could not run)."""
    from changeflow.materialize.reductions import check_null_keys

    o = item.options
    shard = env.catalog.load().items[o["from"]].shard
    state = env.storage.state(shard)
    named = {s: n for s, n in o.get("columns") or []}  # a table's columns: their SQL names
    stored = {n: s for s, n in named.items()}
    key = [k for k in o["key"] if state.schema.field(stored.get(k, k)).nullable]
    if not key or _as_of(state, 0) is None:
        return
    read = env.storage.register_reader(shard, f"sink-check:{item.id}", "CREATE SINK checks keys")
    try:
        as_of = _as_of(state, read.frontier.elements[0]) if read.frontier else None
        if as_of is not None:
            rows = env.storage.snapshot_table(read, as_of)
            check_null_keys(rows.rename_columns([named.get(c, c) for c in rows.column_names]), key)
    finally:
        env.storage.release_reader(shard, f"sink-check:{item.id}")


def forget_sink(env: Environment, item: Item) -> None:
    """Release the sink's hold on its input and forget its checkpoint (the target keeps what
    was written)."""
    from changeflow.materialize.runtime import drop

    if _log(env).exists():
        with contextlib.suppress(ChangeflowError):  # it never ran far enough to record any
            drop(env.storage, item.id, _log(env))
