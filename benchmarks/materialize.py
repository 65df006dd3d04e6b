"""Benchmark: materializing upserts into PostgreSQL and SQLite, against a naive upsert loop.

A shard holds N upserts (default 1M) over K keys (default 100k) in appends of 10k, one time
each: an upsert retracts the key's previous row (if any) and inserts its new one. Generated
with numpy and appended untimed. Then, per target, side by side in one run:

- driver: ``materialize(...)`` end to end (the subscription's read of the shard, the runtime's
  transactions of 10k upserts reduced with Arrow, one Store batch each and, as lastWriteWins
  into SQL needs no load, no Load; the driver's commits), into a fresh table;
- naive: the same 10k new rows per transaction, prepared as Python tuples in advance
  (untimed), written by ``executemany`` of ``INSERT … ON CONFLICT DO UPDATE`` and one commit
  per transaction, on the same server (PostgreSQL) or the same kind of file (SQLite: WAL,
  ``synchronous=FULL``, like the driver's);
- the database alone: the same batches in key order, prepared in advance (untimed) and written
  as the driver writes them, without the runtime (PostgreSQL: binary COPY into a temporary
  table, one ``INSERT … SELECT … ON CONFLICT``, the commit; SQLite: ``executemany`` of the
  upsert with the driver's settings, the commit), each step timed.

The three run in turn, ``--repeat`` rounds (default 2), and each keeps its best round: the
machine may be shared, and a round of one run beside a busy moment of another says little.
The driver's run is timed in parts (the shard's read, the runtime, the driver's side of the
transport). Every table must equal the final state. At a tenth of the size
(``--profile-scale``), a cProfile run names the functions.

Writes ``results/materialize.json`` and ``results/materialize.md`` and refreshes the README
block between the ``bench:materialize`` markers (when they are there).

    python benchmarks/materialize.py [--scale 1.0] [--profile-scale 0.1] [--repeat 2] [--work DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import platform
import pstats
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from cpu import server_of, tree_cpu
from readme import publish

from changeflow.materialize.driver import Driver
from changeflow.materialize.drivers import open_driver
from changeflow.materialize.protocol import Message
from changeflow.materialize.runtime import Materialization, materialize
from changeflow.materialize.transport import InProcess, Transport
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCHEMA = pa.schema([("key", pa.int64()), ("value", pa.string()), ("amount", pa.int64())])
UPSERTS, KEYS, BATCH = 1_000_000, 100_000, 10_000
TARGET_RATE, TARGET_RATIO = 300_000, 3.0  # upserts/s at least; times the naive loop at least
RATIO_TARGETS = ("PostgreSQL",)  # the targets with a ratio to the naive loop to meet
LEASE = 24 * 3600.0
_START = time.perf_counter()

Row = tuple[int, str, int]


def say(text: str) -> None:
    print(f"[{time.perf_counter() - _START:7.1f} s] {text}", file=sys.stderr, flush=True)


# -- data ---------------------------------------------------------------------------------------


def upserts(batches: int, keys: int, seed: int = 1) -> tuple[list[pa.Table], list[list[Row]]]:
    """``batches`` update frames of ``BATCH`` upserts of distinct keys, the i-th at time i, and
    the new rows of each as tuples (the naive loop's input)."""
    rng = np.random.default_rng(seed)
    alive = np.zeros(keys, dtype=bool)
    value = np.zeros(keys, dtype=np.int64)  # a key's value is v-<value>
    amount = np.zeros(keys, dtype=np.int64)
    frames, rows = [], []
    for i in range(batches):
        new = rng.permutation(keys)[:BATCH]
        old = new[alive[new]]
        old_value, old_amount = value[old], amount[old]
        value[new] = rng.integers(0, 1 << 40, len(new))
        amount[new] = rng.integers(0, 10_000, len(new))
        alive[new] = True
        values = np.concatenate([value[new], old_value])
        text = pc.binary_join_element_wise("v-", pc.cast(pa.array(values), pa.string()), "")
        n = len(values)
        frames.append(
            pa.table(
                {
                    "key": np.concatenate([new, old]),
                    "value": text,
                    "amount": np.concatenate([amount[new], old_amount]),
                    "_time": np.full(n, i, np.int64),
                    "_diff": np.concatenate(
                        [np.ones(len(new), np.int64), -np.ones(len(old), np.int64)]
                    ),
                }
            )
        )
        new_rows = zip(
            new.tolist(), text[: len(new)].to_pylist(), amount[new].tolist(), strict=True
        )
        rows.append(list(new_rows))
    return frames, rows


def final_state(rows: list[list[Row]]) -> list[Row]:
    """The table after every upsert, ordered by key."""
    last: dict[int, Row] = {}
    for batch in rows:
        last.update((r[0], r) for r in batch)
    return sorted(last.values())


def build_shard(work: Path, frames: list[pa.Table]) -> Storage:
    """A storage under ``work`` whose shard ``upserts`` holds ``frames`` (upper = their count)."""
    work.mkdir(parents=True, exist_ok=True)  # a consensus is created only in a folder that is
    storage = Storage(
        open_consensus(f"sqlite:{work / 'consensus.sqlite'}"), Blob(str(work / "blob")), LEASE
    )
    read, write = storage.create("upserts", SCHEMA, "counter")
    for i, frame in enumerate(frames):
        storage.append(write, frame, i + 1)
    storage.drop(write)  # the read capability holds since at [0] for the whole run: each
    # fresh materialization reads every upsert, not a compacted snapshot
    subscription, upper = storage.subscribe_at(read, timeout=None), Antichain([len(frames)])
    while not upper <= subscription.next(timeout=10)[1]:  # type: ignore[index]
        pass  # one read, untimed, so the first target timed does not pay for a cold start
    return storage


# -- targets -------------------------------------------------------------------------------------


class Target:
    """One database: its URL for the driver, and the naive loop's connection to it."""

    name = ""

    def url(self, table: str) -> str:
        raise NotImplementedError

    def naive(self, table: str, rows: list[list[Row]]) -> float:
        """Write each batch by ``executemany`` of an upsert and a commit; seconds."""
        raise NotImplementedError

    def bulk(self, table: str, rows: list[list[Row]]) -> dict[str, float]:
        """The database's own share: the same batches in key order, prepared in advance
        (untimed), written the way the driver writes them, with no runtime. Seconds in all,
        and in each step (``write``: the rows sent, ``upsert``: the set-based upsert,
        ``commit``)."""
        raise NotImplementedError

    def read(self, table: str) -> list[Row]:
        raise NotImplementedError

    def settle(self, table: str) -> None:
        """Untimed, after a run: clean up what it left (PostgreSQL: its dead rows), so the
        server's background work does not run into the next run's time."""

    def server_cpu(self) -> float:
        """CPU seconds of the database server so far (0: the database runs in this process)."""
        return 0.0


def _sqlite_table(db: sqlite3.Connection, table: str) -> str:
    """Create ``table`` (the benchmark's schema) and return its upsert statement."""
    db.execute(
        f"CREATE TABLE {table} (key BIGINT NOT NULL PRIMARY KEY, value TEXT, amount BIGINT)"
        " WITHOUT ROWID"
    )
    return (
        f"INSERT INTO {table} VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
        "value = excluded.value, amount = excluded.amount"
    )


class SqliteTarget(Target):
    name = "SQLite"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def url(self, table: str) -> str:
        return f"sqlite:{self.folder / table}.sqlite"

    def naive(self, table: str, rows: list[list[Row]]) -> float:
        db = sqlite3.connect(self.folder / f"{table}.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        upsert = _sqlite_table(db, table)
        start = time.perf_counter()
        for batch in rows:
            db.execute("BEGIN")
            db.executemany(upsert, batch)
            db.execute("COMMIT")
        seconds = time.perf_counter() - start
        db.close()
        return seconds

    def bulk(self, table: str, rows: list[list[Row]]) -> dict[str, float]:
        """``executemany`` of the upsert over each batch in key order, with the driver's
        settings (WAL, ``synchronous=FULL``, its page cache and checkpoint interval)."""
        from changeflow.materialize.drivers.sqlite import CACHE_KIB, CHECKPOINT_PAGES

        db = sqlite3.connect(self.folder / f"{table}.sqlite", isolation_level=None)
        for pragma in (
            "journal_mode=WAL",
            "synchronous=FULL",
            f"cache_size=-{CACHE_KIB}",
            f"wal_autocheckpoint={CHECKPOINT_PAGES}",
        ):
            db.execute(f"PRAGMA {pragma}")
        upsert = _sqlite_table(db, table)
        ordered = [sorted(batch) for batch in rows]
        steps = {"upsert": 0.0, "commit": 0.0}
        start = time.perf_counter()
        for batch in ordered:
            t0 = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.executemany(upsert, batch)
            t1 = time.perf_counter()
            db.execute("COMMIT")
            steps["upsert"] += t1 - t0
            steps["commit"] += time.perf_counter() - t1
        seconds = time.perf_counter() - start
        db.close()
        return {"s": seconds, **steps}

    def read(self, table: str) -> list[Row]:
        with contextlib.closing(sqlite3.connect(self.folder / f"{table}.sqlite")) as db:
            return db.execute(f"SELECT key, value, amount FROM {table} ORDER BY key").fetchall()


class PostgresTarget(Target):
    name = "PostgreSQL"

    def __init__(self, url: str) -> None:
        import psycopg

        self.database = url
        with psycopg.connect(url) as conn:
            self.server = server_of(conn)

    def url(self, table: str) -> str:
        return self.database

    def server_cpu(self) -> float:
        return tree_cpu(self.server)

    def naive(self, table: str, rows: list[list[Row]]) -> float:
        import psycopg

        with psycopg.connect(self.database) as conn:
            conn.execute(
                f"CREATE TABLE {table} (key BIGINT NOT NULL PRIMARY KEY, value TEXT, amount BIGINT)"
            )
            conn.commit()
            upsert = (
                f"INSERT INTO {table} VALUES (%s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
                "value = excluded.value, amount = excluded.amount"
            )
            start = time.perf_counter()
            for batch in rows:
                with conn.cursor() as cur:
                    cur.executemany(upsert, batch)
                conn.commit()
            return time.perf_counter() - start

    def bulk(self, table: str, rows: list[list[Row]]) -> dict[str, float]:
        """Binary COPY of each batch (in key order) into a temporary table, then one
        ``INSERT … SELECT … ON CONFLICT DO UPDATE`` and the commit."""
        import psycopg

        from changeflow.materialize.drivers.pgcopy import copy_data

        columns = [list(zip(*sorted(batch), strict=True)) for batch in rows]
        payloads = [
            copy_data(pa.table(dict(zip(SCHEMA.names, c, strict=True)), SCHEMA)) for c in columns
        ]
        with psycopg.connect(self.database) as conn:
            conn.execute(
                f"CREATE TABLE {table} (key BIGINT NOT NULL PRIMARY KEY, value TEXT, amount BIGINT)"
            )
            conn.execute(
                "CREATE TEMP TABLE staged (key BIGINT, value TEXT, amount BIGINT) "
                "ON COMMIT DELETE ROWS"
            )
            conn.commit()
            upsert = (
                f"INSERT INTO {table} SELECT * FROM staged ON CONFLICT (key) DO UPDATE SET "
                "value = excluded.value, amount = excluded.amount"
            )
            steps = {"write": 0.0, "upsert": 0.0, "commit": 0.0}
            server, start = self.server_cpu(), time.perf_counter()
            for payload in payloads:
                t0 = time.perf_counter()
                with conn.cursor() as cur:
                    with cur.copy("COPY staged FROM STDIN (FORMAT BINARY)") as copy:
                        copy.write(payload)
                    t1 = time.perf_counter()
                    cur.execute(upsert)
                t2 = time.perf_counter()
                conn.commit()
                steps["write"] += t1 - t0
                steps["upsert"] += t2 - t1
                steps["commit"] += time.perf_counter() - t2
            seconds = time.perf_counter() - start
            return {"s": seconds, **steps, "server_cpu_s": self.server_cpu() - server}

    def read(self, table: str) -> list[Row]:
        import psycopg

        with psycopg.connect(self.database) as conn:
            return conn.execute(f"SELECT key, value, amount FROM {table} ORDER BY key").fetchall()

    def settle(self, table: str) -> None:
        import psycopg

        with psycopg.connect(self.database, autocommit=True) as conn:
            conn.execute(f"VACUUM {table}")
            conn.execute("CHECKPOINT")


@contextlib.contextmanager
def postgres() -> Iterator[PostgresTarget | None]:
    """A database on a throwaway PostgreSQL server; None if no server can be started."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from postgres_server import create_database, throwaway_postgres

        with throwaway_postgres() as url:
            yield PostgresTarget(create_database(url, "bench_materialize"))
    except (ImportError, RuntimeError) as e:
        say(f"PostgreSQL skipped: {e}")
        yield None


# -- runs ----------------------------------------------------------------------------------------


def run_driver(
    storage: Storage, work: Path, target: Target, table: str, transport: Transport | None = None
) -> tuple[float, int]:
    """``materialize`` the shard into ``table`` of ``target``; seconds and transactions.

    The binding's resource is the shard's name, so each run has its own SQLite file or, on
    PostgreSQL, a table of the shard's name renamed to ``table`` afterwards.
    """
    # a name of its own per target: a materialization holds the shard where it stopped, and
    # another run under its name would start from that snapshot, not from every upsert
    name = f"{table}-{target.name.lower()}"
    spec = Materialization(name, "upserts", target.url(table), ("key",), max_rows=BATCH)
    start = time.perf_counter()
    log = work / f"{name}.recovery.sqlite"
    progress = materialize(storage, spec, recovery_log=log, transport=transport)
    seconds = time.perf_counter() - start
    if isinstance(target, PostgresTarget):
        import psycopg

        with psycopg.connect(target.database) as conn:
            conn.execute(f"ALTER TABLE upserts RENAME TO {table}")
    elif isinstance(target, SqliteTarget):
        with contextlib.closing(sqlite3.connect(target.folder / f"{table}.sqlite")) as db:
            db.execute(f"ALTER TABLE upserts RENAME TO {table}")
    return seconds, progress.transactions


def compare(
    target: Target,
    n: int,
    transactions: int,
    work: Path,
    storage: Storage,
    rows: list[list[Row]],
    expected: list[Row],
    repeat: int,
) -> dict:
    """The driver (timed in parts, see :func:`split`), the naive loop and the database's own
    share (:meth:`Target.bulk`) on ``target``, ``repeat`` rounds of the three in turn (the
    machine may be shared: each keeps its best round), each table checked against
    ``expected``."""
    runs: dict[str, list[Any]] = {"driver": [], "naive": [], "bulk": []}
    for i in range(repeat):
        say(f"{target.name}: materializing {n:,} upserts through the driver (round {i + 1})…")
        parts = split(target, storage, work, f"driver_{i}")
        runs["driver"].append(parts)
        say(f"{target.name}: driver {parts['wall_s']:.2f} s, {n / parts['wall_s']:,.0f} upserts/s")
        target.settle(f"driver_{i}")
        naive = target.naive(f"naive_{i}", rows)
        runs["naive"].append(naive)
        say(f"{target.name}: naive {naive:.2f} s, {n / naive:,.0f} upserts/s")
        target.settle(f"naive_{i}")
        bulk = target.bulk(f"bulk_{i}", rows)
        runs["bulk"].append(bulk)
        say(f"{target.name}: the database alone {bulk['s']:.2f} s {bulk}")
        target.settle(f"bulk_{i}")
        for kind in runs:
            if target.read(f"{kind}_{i}") != expected:
                raise SystemExit(f"{target.name}: table {kind}_{i} differs from the final state")
    parts = min(runs["driver"], key=lambda p: p["wall_s"])
    driver_s, txns, naive_s = parts["wall_s"], parts["transactions"], min(runs["naive"])
    bulk = min(runs["bulk"], key=lambda b: b["s"])
    rate, ratio = n / driver_s, naive_s / driver_s
    return {
        "target": target.name,
        "upserts": n,
        "keys": len(expected),
        "transactions": txns,
        "driver_s": driver_s,
        "naive_s": naive_s,
        "driver_upserts_per_s": rate,
        "naive_upserts_per_s": n / naive_s,
        "split": parts,
        "bulk": bulk,
        "bulk_upserts_per_s": n / bulk["s"],
        "vs_naive": ratio,
        "rounds": {
            "driver_s": [p["wall_s"] for p in runs["driver"]],
            "naive_s": runs["naive"],
            "bulk_s": [b["s"] for b in runs["bulk"]],
        },
        "rate_met": rate >= TARGET_RATE,
        "ratio_met": ratio >= TARGET_RATIO if target.name in RATIO_TARGETS else None,
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


# -- the harness -------------------------------------------------------------------------------


def _met(value: bool) -> str:
    return "yes" if value else "**no**"


def markdown(results: list[dict], profiles: list[dict]) -> str:
    rounds = len(results[0]["rounds"]["driver_s"]) if results else 0
    lines = [
        f"Best of {rounds} rounds each, run in turn:",
        "",
        "| target | upserts (keys) | transactions | driver s | driver upserts/s | naive s "
        "| naive upserts/s | driver vs naive |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['target']} | {r['upserts']:,} ({r['keys']:,}) | {r['transactions']} | "
            f"{r['driver_s']:.2f} | {r['driver_upserts_per_s']:,.0f} | {r['naive_s']:.2f} | "
            f"{r['naive_upserts_per_s']:,.0f} | {r['vs_naive']:.2f}x |"
        )
    lines += [
        "",
        "What limits the driver, in the same run: its time split between the shard's read, the "
        "runtime and the driver's side of the transport (the runner, the driver's Python and the "
        "database), next to the database's own share: the same batches in key order, prepared "
        "in advance and written as the driver writes them, without the runtime (PostgreSQL: "
        "binary COPY into a temporary table, one upsert, the commit; SQLite: `executemany` of "
        "the upsert, the commit, with the driver's settings). The last column is the rate if "
        "the shard's read and the database were all there was:",
        "",
        "| target | driver s | shard read s | runtime s | driver side s | database alone s "
        "(rows sent + upsert + commit) | shard read + database alone: upserts/s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        t, b = r["split"], r["bulk"]
        floor = t["shard_read_s"] + b["s"]
        steps = " + ".join(f"{b[k]:.2f}" for k in ("write", "upsert", "commit") if k in b)
        lines.append(
            f"| {r['target']} | {r['driver_s']:.2f} | {t['shard_read_s']:.2f} | "
            f"{t['runtime_s']:.2f} | {t['driver_side_s']:.2f} | {b['s']:.2f} ({steps}) | "
            f"{r['upserts'] / floor:,.0f} |"
        )
    lines += [
        "",
        "CPU seconds of the same runs (the machine is shared: wall time depends on the load, "
        "CPU time much less); the client is this process (the runtime, the driver and, for "
        "SQLite, the database), the server PostgreSQL's processes:",
        "",
        "| target | driver wall s | client CPU s | server CPU s | upserts per CPU s "
        "| database alone: wall s | server CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        t, b = r["split"], r["bulk"]
        cpu = t.get("client_cpu_s", 0.0) + t.get("server_cpu_s", 0.0)
        lines.append(
            f"| {r['target']} | {r['driver_s']:.2f} | {t.get('client_cpu_s', 0.0):.2f} | "
            f"{t.get('server_cpu_s', 0.0):.2f} | {r['upserts'] / cpu:,.0f} | {b['s']:.2f} | "
            f"{b.get('server_cpu_s', 0.0):.2f} |"
        )
    lines.append("")
    for r in results:
        ratio = (
            f"at least {TARGET_RATIO:g}x the naive loop: {_met(r['ratio_met'])} "
            f"({r['vs_naive']:.2f}x)"
            if r["target"] in RATIO_TARGETS
            else f"the naive loop, no target: {r['vs_naive']:.2f}x"
        )
        lines.append(
            f"- {r['target']}: at least {TARGET_RATE:,} upserts/s: {_met(r['rate_met'])} "
            f"({r['driver_upserts_per_s']:,.0f}, {r['driver_upserts_per_s'] / TARGET_RATE:.2f}x "
            f"the target); {ratio}."
        )
    if profiles:
        lines += [
            "",
            f"Where the time goes at {profiles[0]['upserts']:,} upserts, timed without a profiler "
            "(driver side: the runner, the driver's Python and the database):",
            "",
            "| target | seconds | upserts/s | shard read | runtime | driver side |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for p in profiles:
            t = p["split"]
            wall = t["wall_s"]
            lines.append(
                f"| {p['target']} | {wall:.2f} | {p['upserts'] / wall:,.0f} | "
                f"{t['shard_read_s'] / wall:.0%} | {t['runtime_s'] / wall:.0%} | "
                f"{t['driver_side_s'] / wall:.0%} |"
            )
        parts = [p for p, _ in PARTS] + ["other"]
        lines += [
            "",
            "The same under cProfile, own time by the file of each function:",
            "",
            "| target | " + " | ".join(parts) + " | profiled s |",
            "|---|" + "---:|" * (len(parts) + 1),
        ]
        for p in profiles:
            total = p["profiled_s"]
            cells = [f"{p['parts_s'].get(x, 0.0) / total:.0%}" for x in parts]
            lines.append(f"| {p['target']} | " + " | ".join(cells) + f" | {total:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies upserts and keys")
    parser.add_argument("--profile-scale", type=float, default=0.1, help="of the profiled run")
    parser.add_argument("--work", default=None, help="where the data goes (default: temp)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; each run keeps its best")
    args = parser.parse_args()
    if args.scale <= 0 or args.profile_scale < 0 or args.repeat < 1:
        parser.error("--scale and --repeat must be positive and --profile-scale not negative")
    if args.work:
        Path(args.work).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="changeflow-bench-materialize-", dir=args.work))
    load = os.getloadavg()[0]
    say(f"materialize benchmark at scale {args.scale:g}, data under {work}")
    results, profiles = [], []
    try:
        with postgres() as pg:
            targets: list[Target] = [SqliteTarget(work)] + ([pg] if pg else [])
            for scale, profiled in ((args.scale, False), (args.profile_scale, True)):
                if not scale:
                    continue
                batches = max(3, round(UPSERTS * scale / BATCH))
                keys = max(BATCH, round(KEYS * scale))
                n = batches * BATCH
                home = work / ("profile" if profiled else "run")
                say(f"preparing {n:,} upserts over {keys:,} keys in {batches} appends…")
                frames, rows = upserts(batches, keys)
                expected = final_state(rows)
                storage = build_shard(home, frames)
                say(f"appended {sum(f.num_rows for f in frames):,} updates to shard 'upserts'")
                del frames
                for target in targets:
                    if isinstance(target, SqliteTarget):
                        target = SqliteTarget(home)
                    if profiled:
                        say(f"{target.name}: timing the parts of {n:,} upserts…")
                        parts = split(target, storage, home, f"split_{len(profiles)}")
                        say(f"{target.name}: {parts}")
                        say(f"{target.name}: profiling {n:,} upserts through the driver…")
                        prof = profile(target, storage, home, f"profiled_{len(profiles)}")
                        profiles.append({**prof, "upserts": n, "split": parts})
                        say(f"{target.name}: {prof['parts_s']}")
                    else:
                        results.append(
                            compare(target, n, batches, home, storage, rows, expected, args.repeat)
                        )
                storage.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "when": time.strftime("%F %T"),
        "load_average": (load, os.getloadavg()[0]),
        "scale": args.scale,
        "profile_scale": args.profile_scale,
        "batch": BATCH,
        "targets": {"upserts_per_s": TARGET_RATE, "vs_naive": TARGET_RATIO},
    }
    table = markdown(results, profiles)
    publish("materialize", {"meta": meta, "results": results, "profiles": profiles}, table)
    for p in profiles:
        print(f"\n{p['target']}: cumulative {json.dumps(p['cumulative_s'])}")
        for t in p["top"][:10]:
            print(
                f"  {t['own_s']:7.2f} s own {t['cumulative_s']:7.2f} s cum {t['calls']:>9,} "
                f"{t['part']:<10} {t['function']}"
            )


if __name__ == "__main__":
    main()
