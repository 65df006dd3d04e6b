"""The materialize benchmark's runs of the driver: end to end (in one connection, or split by
key range over several), timed in parts (the shard's read, the runtime, the driver's side of
the transport), and under cProfile."""

from __future__ import annotations

import contextlib
import cProfile
import pstats
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from materialize_targets import PostgresTarget, SqliteTarget, Target

from changeflow.materialize.driver import Driver
from changeflow.materialize.drivers import open_driver
from changeflow.materialize.protocol import Message
from changeflow.materialize.runtime import Materialization, materialize
from changeflow.materialize.splits import materialize_split
from changeflow.materialize.transport import InProcess, Transport
from changeflow.storage import Storage

BATCH = 10_000  # upserts per append and per transaction


def run_driver(
    storage: Storage,
    work: Path,
    target: Target,
    table: str,
    transport: Transport | None = None,
    ranges: int = 1,
) -> tuple[float, int]:
    """``materialize`` the shard into ``table`` of ``target`` (split into ``ranges`` key
    ranges, a runtime and a connection each, when more than 1); seconds and transactions.

    The binding's resource is the shard's name, so each run has its own SQLite file or, on
    PostgreSQL, a table of the shard's name renamed to ``table`` afterwards.
    """
    # a name of its own per target: a materialization holds the shard where it stopped, and
    # another run under its name would start from that snapshot, not from every upsert
    name = f"{table}-{target.name.lower()}"
    spec = Materialization(name, "upserts", target.url(table), ("key",), max_rows=BATCH)
    start = time.perf_counter()
    log = work / f"{name}.recovery.sqlite"
    if ranges > 1:
        progress = materialize_split(storage, spec, log, ranges)
        transactions = sum(p.transactions for p in progress)
    else:
        transactions = materialize(storage, spec, log, transport=transport).transactions
    seconds = time.perf_counter() - start
    if isinstance(target, PostgresTarget):
        import psycopg

        with psycopg.connect(target.database) as conn:
            conn.execute(f"ALTER TABLE upserts RENAME TO {table}")
    elif isinstance(target, SqliteTarget):
        with contextlib.closing(sqlite3.connect(target.folder / f"{table}.sqlite")) as db:
            db.execute(f"ALTER TABLE upserts RENAME TO {table}")
    return seconds, transactions


def ranged(target: Target, storage: Storage, work: Path, table: str, ranges: int) -> dict:
    """One run split into ``ranges`` key ranges: wall, client and server CPU seconds."""
    server, client = target.server_cpu(), time.process_time()
    wall, transactions = run_driver(storage, work, target, table, ranges=ranges)
    return {
        "wall_s": wall,
        "client_cpu_s": time.process_time() - client,
        "server_cpu_s": target.server_cpu() - server,
        "transactions": transactions,
        "ranges": ranges,
    }


# -- the profile -------------------------------------------------------------------------------

# where a function's own time goes, by the file it is in (first match wins)
PARTS = [
    ("shard read", ("changeflow/storage/", "changeflow/time.py")),
    ("Arrow and numpy (any caller)", ("pyarrow", "numpy")),
    ("runtime", ("materialize/runtime.py",)),
    ("reductions", ("materialize/reductions.py",)),
    ("protocol", ("materialize/transport.py", "materialize/driver.py", "materialize/protocol.py")),
    ("driver", ("materialize/drivers/",)),
    ("database", ("sqlite3", "psycopg")),
]


def part_of(file: str, function: str) -> str:
    where = f"{file}:{function}"
    for part, marks in PARTS:
        if any(m in where for m in marks):
            return part
    if file == "<string>" and function == "__init__":
        return "protocol"  # the messages' dataclass constructors
    return "other"


class TimedInProcess(InProcess):
    """The in-process transport, timing the driver's side: an in-process driver handles each
    request as it is sent (the runner's checks, the driver, the database)."""

    def __init__(self, driver: Driver) -> None:
        super().__init__(driver)
        self.seconds = 0.0

    def send(self, message: Message) -> None:
        start = time.perf_counter()
        try:
            super().send(message)
        finally:
            self.seconds += time.perf_counter() - start


def split(target: Target, storage: Storage, work: Path, table: str) -> dict:
    """One timed run, without a profiler: seconds in the shard's subscription, on the driver's
    side of the transport, and in the runtime (the rest)."""
    transport = TimedInProcess(open_driver(target.url(table)))
    read = [0.0]
    subscribe = storage.subscribe_at

    def timed_subscribe(*args: Any, **kwargs: Any) -> Any:
        subscription = subscribe(*args, **kwargs)
        next_step = subscription.next

        def timed_next(timeout: float | None = None) -> Any:
            start = time.perf_counter()
            try:
                return next_step(timeout)
            finally:
                read[0] += time.perf_counter() - start

        subscription.next = timed_next  # type: ignore[method-assign]
        return subscription

    storage.subscribe_at = timed_subscribe  # type: ignore[method-assign]
    server, client = target.server_cpu(), time.process_time()
    try:
        wall, transactions = run_driver(storage, work, target, table, transport)
    finally:
        del storage.subscribe_at
    return {
        "wall_s": wall,
        "client_cpu_s": time.process_time() - client,
        "server_cpu_s": target.server_cpu() - server,
        "transactions": transactions,
        "shard_read_s": read[0],
        "driver_side_s": transport.seconds,
        "runtime_s": wall - read[0] - transport.seconds,
    }


def profile(target: Target, storage: Storage, work: Path, table: str) -> dict:
    """cProfile one ``materialize`` run: own time per part, and the top functions."""
    profiler = cProfile.Profile()
    profiler.enable()
    start = time.perf_counter()
    run_driver(storage, work, target, table)
    wall = time.perf_counter() - start
    profiler.disable()
    stats = pstats.Stats(profiler)
    parts: dict[str, float] = {}
    top = []
    for (file, line, function), (_, calls, own, cumulative, _) in stats.stats.items():
        part = part_of(file, function)
        parts[part] = parts.get(part, 0.0) + own
        name = f"{Path(file).name}:{line}({function})" if line else function
        top.append((own, cumulative, calls, name, part))
    top.sort(reverse=True)
    cumulative = {
        label: sum(ct for (f, _, fn), (_, _, _, ct, _) in stats.stats.items() if match(f, fn))
        for label, match in CUMULATIVE.items()
    }
    total = sum(parts.values())
    return {
        "target": target.name,
        "wall_s": wall,
        "profiled_s": total,
        "parts_s": dict(sorted(parts.items(), key=lambda kv: -kv[1])),
        "cumulative_s": cumulative,
        "top": [
            {"function": n, "part": p, "own_s": o, "cumulative_s": c, "calls": k}
            for o, c, k, n, p in top[:15]
        ],
    }


CUMULATIVE: dict[str, Callable[[str, str], bool]] = {
    "subscription (Subscription.next)": lambda f, fn: f.endswith("shard.py") and fn == "next",
    "driver side (Runner.handle)": lambda f, fn: f.endswith("driver.py") and fn == "handle",
    "consolidation (Reducer.changes)": lambda f, fn: (
        f.endswith("reductions.py") and fn == "changes"
    ),
    "reductions (Reducer.reduce)": lambda f, fn: f.endswith("reductions.py") and fn == "reduce",
    "COPY payload (pgcopy.copy_data)": lambda f, fn: f.endswith("pgcopy.py") and fn == "copy_data",
    "SQLite rows (sqlite._rows)": lambda f, fn: f.endswith("sqlite.py") and fn == "_rows",
}
