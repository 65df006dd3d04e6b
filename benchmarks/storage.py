"""Benchmark: the storage layer against its targets, every case in one run.

Cases (sizes are multiplied by ``--scale``), each with its own data home under a temporary
folder that is deleted afterwards:

- append: 1M updates in Arrow tables of 10k updates (prepared in advance, not timed) on SQLite
  consensus; updates/s. The scale multiplies the number of tables (at least 3), not their size.
- snapshot: 10M updates in 100 appends (a history of inserts, updates as retraction plus
  insertion, and deletes, so consolidation matters), then ``storage.snapshot(...).count()`` at
  the last time against Spark reading the same Parquet blobs directly with the same filter,
  group-by and sum. A warm-up run of each side, then ``--repeats`` timed runs; the best counts.
  The scale multiplies the size of the 100 appends.
- compaction: the same shard after its read capability is downgraded to the upper, compacted
  on Spark into one batch at that since; seconds, rows before and after, updates/s.
- small appends: appends of 10 updates each for ``--seconds`` (scaled, at least 1 s) on SQLite
  and on a throwaway PostgreSQL server; appends/s.

Writes ``results/storage.json`` and ``results/storage.md`` and refreshes the README table
between the ``bench:storage`` markers (when they are there).

    python benchmarks/storage.py [--scale 1.0] [--master local[2]] [--repeats 2] [--seconds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from readme import publish

from changeflow.storage import Storage, WriteCapability
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCHEMA = pa.schema([("key", pa.int64()), ("value", pa.string()), ("amount", pa.int64())])
DATA = SCHEMA.names
STEP = 1_000  # the i-th append holds times in [i * STEP, (i + 1) * STEP)
LEASE = 24 * 3600.0  # read capabilities outlive the run
UPDATED, DELETED = 0.15, 0.10  # shares of an append's rows: each update is 2 rows
APPEND_UPDATES, APPEND_BATCH = 1_000_000, 10_000
SNAPSHOT_UPDATES, SNAPSHOT_BATCHES = 10_000_000, 100
SMALL_BATCH = 10
TARGETS = {
    "append": 1_000_000,  # updates/s at least
    "snapshot": 2.0,  # times the direct read at most
    "small-sqlite": 200,  # appends/s at least
    "small-postgres": 100,  # appends/s at least
}
_START = time.perf_counter()


def say(text: str) -> None:
    print(f"[{time.perf_counter() - _START:7.1f} s] {text}", file=sys.stderr, flush=True)


# -- data ---------------------------------------------------------------------------------------


def history(batches: int, rows: int, seed: int) -> list[pa.Table]:
    """``batches`` update frames of ``rows`` rows each, the i-th at times [i*STEP, (i+1)*STEP).

    Every frame inserts new keys and, among keys inserted by earlier frames, updates some (the
    old row retracted, the new one inserted, at one time) and deletes some (the row retracted).
    """
    rng = np.random.default_rng(seed)
    alive = np.zeros(batches * rows, dtype=bool)
    version = np.zeros(batches * rows, dtype=np.int64)  # the value of a key is item-<version>
    amount = np.zeros(batches * rows, dtype=np.int64)
    next_key, tables = 0, []
    for i in range(batches):
        want = int(rows * UPDATED) + int(rows * DELETED)
        chosen = _pick_alive(rng, alive, next_key, want)
        updated = chosen[: int(rows * UPDATED)]
        deleted = chosen[len(updated) :]
        inserted = np.arange(next_key, next_key + rows - 2 * len(updated) - len(deleted))
        next_key += len(inserted)
        old_keys = np.concatenate([updated, deleted])
        old_version, old_amount = version[old_keys], amount[old_keys]
        new_keys = np.concatenate([inserted, updated])
        new_version = rng.integers(0, 1 << 40, len(new_keys))
        new_amount = rng.integers(0, 10_000, len(new_keys))
        version[new_keys], amount[new_keys] = new_version, new_amount
        alive[inserted], alive[deleted] = True, False
        new_time = i * STEP + rng.integers(0, STEP, len(new_keys))
        # an update's retraction shares the time of the new row
        old_time = np.concatenate(
            [new_time[len(inserted) :], i * STEP + rng.integers(0, STEP, len(deleted))]
        )
        order = rng.permutation(rows)
        values = np.concatenate([new_version, old_version])[order]
        diff = np.concatenate(
            [np.ones(len(new_keys), np.int64), np.full(len(old_keys), -1, np.int64)]
        )
        tables.append(
            pa.table(
                {
                    "key": np.concatenate([new_keys, old_keys])[order],
                    "value": pc.binary_join_element_wise("item-", pc.cast(values, pa.string()), ""),
                    "amount": np.concatenate([new_amount, old_amount])[order],
                    "_time": np.concatenate([new_time, old_time])[order],
                    "_diff": diff[order],
                }
            )
        )
    return tables


def _pick_alive(rng: np.random.Generator, alive: np.ndarray, limit: int, want: int) -> np.ndarray:
    """Up to ``want`` distinct live keys below ``limit``, in random order."""
    picked = np.empty(0, dtype=np.int64)
    if not limit or not want:
        return picked
    for _ in range(8):
        draw = rng.integers(0, limit, 2 * want)
        picked = np.concatenate([picked, draw[alive[draw]]])
        _, first = np.unique(picked, return_index=True)
        picked = picked[np.sort(first)]
        if len(picked) >= want:
            break
    return picked[:want]


def small_frame(i: int) -> pa.Table:
    """``SMALL_BATCH`` inserts at time ``i``."""
    keys = np.arange(i * SMALL_BATCH, (i + 1) * SMALL_BATCH, dtype=np.int64)
    return pa.table(
        {
            "key": keys,
            "value": pc.binary_join_element_wise("item-", pc.cast(keys, pa.string()), ""),
            "amount": keys % 10_000,
            "_time": np.full(SMALL_BATCH, i, np.int64),
            "_diff": np.ones(SMALL_BATCH, np.int64),
        }
    )


# -- cases ---------------------------------------------------------------------------------------


def open_storage(home: Path, consensus: str | None = None, master: str | None = None) -> Storage:
    """A storage with its own consensus (SQLite under ``home`` unless given) and blob root."""
    location = consensus or f"sqlite:{home / 'consensus.sqlite'}"
    return Storage(open_consensus(location), Blob(str(home / "blob")), LEASE, master)


def append_all(storage: Storage, write: WriteCapability, tables: list[pa.Table]) -> float:
    """Append ``tables`` one after another, each up to the next step; seconds taken."""
    start = time.perf_counter()
    for i, table in enumerate(tables):
        storage.append(write, table, (i + 1) * STEP)
    return time.perf_counter() - start


def append_case(work: Path, scale: float) -> dict:
    """Append prepared 10k-update tables one after another; updates/s."""
    batches = max(3, round(APPEND_UPDATES * scale / APPEND_BATCH))
    n = batches * APPEND_BATCH
    say(f"append: preparing {n:,} updates in {batches} tables of {APPEND_BATCH:,}…")
    tables = history(batches, APPEND_BATCH, seed=1)
    storage = open_storage(work / "append")
    _, write = storage.create("append", SCHEMA)
    say(f"append: appending {n:,} updates on SQLite…")
    seconds = append_all(storage, write, tables)
    storage.close()
    rate = n / seconds
    say(f"append: {seconds:.2f} s, {rate:,.0f} updates/s, {batches / seconds:.1f} appends/s")
    return {
        "case": "append",
        "updates": n,
        "batches": batches,
        "batch_updates": APPEND_BATCH,
        "seconds": seconds,
        "updates_per_s": rate,
        "target_updates_per_s": TARGETS["append"],
        "met": rate >= TARGETS["append"],
    }


def snapshot_and_compaction_cases(
    work: Path, scale: float, master: str, repeats: int
) -> list[dict]:
    """Snapshot through storage against the direct Spark read; then compact the shard."""
    from pyspark.sql import functions as F

    from changeflow.spark import get_spark

    rows = max(100, round(SNAPSHOT_UPDATES * scale / SNAPSHOT_BATCHES))
    n = rows * SNAPSHOT_BATCHES
    say(f"snapshot: preparing {n:,} updates in {SNAPSHOT_BATCHES} tables of {rows:,}…")
    tables = history(SNAPSHOT_BATCHES, rows, seed=2)
    storage = open_storage(work / "snapshot", master=master)
    read, write = storage.create("history", SCHEMA)
    say(f"snapshot: appending {n:,} updates…")
    append_seconds = append_all(storage, write, tables)
    del tables
    say(f"snapshot: appended in {append_seconds:.2f} s ({n / append_seconds:,.0f} updates/s)")
    say(f"snapshot: starting Spark on {master}…")
    spark = get_spark(master)
    spark.range(1).count()  # the JVM's start-up is not part of any run
    state = storage.state("history")
    uris = [storage.blob.uri(k) for b in state.batches for k in b.keys]
    as_of = SNAPSHOT_BATCHES * STEP - 1

    def through_storage() -> int:
        return storage.snapshot(read, as_of, spark).count()

    def direct() -> int:
        frame = spark.read.parquet(*uris)
        return (
            frame.where(F.col("_time") <= as_of)
            .groupBy(*DATA)
            .agg(F.sum("_diff").alias("_diff"))
            .where(F.col("_diff") != 0)
            .count()
        )

    sides: dict[str, tuple[Callable[[], int], list[float]]] = {
        "storage": (through_storage, []),
        "direct": (direct, []),
    }
    counts = set()
    for run in range(1 + repeats):
        order = ["direct", "storage"] if run % 2 == 0 else ["storage", "direct"]
        for side in order:
            action, times = sides[side]
            start = time.perf_counter()
            counts.add(action())
            seconds = time.perf_counter() - start
            label = "warm-up" if run == 0 else f"run {run}"
            say(f"snapshot: {side:<7} {label:<7} {seconds:6.2f} s")
            if run:
                times.append(seconds)
    if len(counts) != 1:
        raise SystemExit(f"the snapshot and the direct read disagree: {counts}")
    (count,) = counts
    best = {side: min(times) for side, (_, times) in sides.items()}
    ratio = best["storage"] / best["direct"]
    say(f"snapshot: {count:,} rows; storage {ratio:.2f}x the direct read")
    bulk = {
        "case": "snapshot-append",
        "updates": n,
        "batches": SNAPSHOT_BATCHES,
        "batch_updates": rows,
        "seconds": append_seconds,
        "updates_per_s": n / append_seconds,
    }
    snapshot = {
        "case": "snapshot",
        "updates": n,
        "batches": SNAPSHOT_BATCHES,
        "as_of": as_of,
        "rows": count,
        "storage_seconds": sides["storage"][1],
        "direct_seconds": sides["direct"][1],
        "storage_best_s": best["storage"],
        "direct_best_s": best["direct"],
        "storage_median_s": statistics.median(sides["storage"][1]),
        "direct_median_s": statistics.median(sides["direct"][1]),
        "ratio": ratio,
        "target_ratio": TARGETS["snapshot"],
        "met": ratio <= TARGETS["snapshot"],
    }

    storage.downgrade(read, storage.state("history").upper)
    say(f"compaction: compacting {n:,} updates to since {read.frontier.to_json()} on Spark…")
    start = time.perf_counter()
    before, after = storage.compact("history", spark)
    seconds = time.perf_counter() - start
    batches = len(storage.state("history").batches)
    storage.close()
    spark.stop()  # the small appends run without the JVM's threads beside them
    if after != count:
        raise SystemExit(f"compaction left {after:,} rows, the snapshot has {count:,}")
    say(f"compaction: {seconds:.2f} s, {before:,} -> {after:,} rows in {batches} batch(es)")
    compaction = {
        "case": "compaction",
        "updates": n,
        "seconds": seconds,
        "rows_before": before,
        "rows_after": after,
        "batches_after": batches,
        "updates_per_s": before / seconds,
    }
    return [bulk, snapshot, compaction]


def small_appends_case(name: str, home: Path, consensus: str | None, seconds: float) -> dict:
    """Appends of ``SMALL_BATCH`` updates, one after another, for ``seconds``; appends/s."""
    storage = open_storage(home, consensus)
    _, write = storage.create("small", SCHEMA)
    storage.append(write, small_frame(0), 1)  # the first connection and files are set up
    spent: list[float] = []  # per append, the frame's construction excluded
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        i = len(spent) + 1
        frame = small_frame(i)
        start = time.perf_counter()
        storage.append(write, frame, i + 1)
        spent.append(time.perf_counter() - start)
    storage.close()
    rate = len(spent) / sum(spent)
    tenth = max(1, len(spent) // 10)
    first, last = tenth / sum(spent[:tenth]), tenth / sum(spent[-tenth:])
    say(
        f"{name}: {len(spent):,} appends, {rate:,.0f}/s "
        f"(first tenth {first:,.0f}/s, last tenth {last:,.0f}/s)"
    )
    return {
        "case": name,
        "appends": len(spent),
        "updates_per_append": SMALL_BATCH,
        "seconds": sum(spent),
        "appends_per_s": rate,
        "first_tenth_per_s": first,
        "last_tenth_per_s": last,
        "target_appends_per_s": TARGETS[name],
        "met": rate >= TARGETS[name],
    }


def small_postgres_case(work: Path, seconds: float) -> dict:
    """Small appends on a throwaway PostgreSQL server; skipped if none can be started."""
    sys.path.insert(0, str(ROOT / "tests"))
    with contextlib.ExitStack() as stack:
        try:
            from postgres_server import create_database, throwaway_postgres

            say("small-postgres: starting a throwaway PostgreSQL server…")
            url = stack.enter_context(throwaway_postgres())
        except (ImportError, RuntimeError) as e:
            say(f"small-postgres: skipped ({e})")
            return {"case": "small-postgres", "skipped": str(e).splitlines()[0], "met": None}
        database = create_database(url, "bench_storage")
        say(f"small-postgres: appends of {SMALL_BATCH} updates for {seconds:.0f} s…")
        return small_appends_case("small-postgres", work / "small-postgres", database, seconds)
    raise AssertionError("unreachable")


# -- the harness -------------------------------------------------------------------------------


def _met(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "**no**")


def markdown(results: list[dict]) -> str:
    """The results as a markdown table: case, measured, target, ratio to the target, met."""
    lines = ["| case | measured | target | vs target | met? |", "|---|---|---|---:|---|"]
    for r in results:
        case = r["case"]
        if r.get("skipped"):
            lines.append(f"| {case} | skipped: {r['skipped']} | - | - | - |")
        elif case == "append":
            lines.append(
                f"| append: {r['updates']:,} updates, {r['batches']} appends of "
                f"{r['batch_updates']:,} (SQLite) | {r['updates_per_s']:,.0f} updates/s | "
                f">= {r['target_updates_per_s']:,} updates/s | "
                f"{r['updates_per_s'] / r['target_updates_per_s']:.2f}x | {_met(r['met'])} |"
            )
        elif case == "snapshot":
            lines.append(
                f"| snapshot as of the last time: {r['updates']:,} updates in {r['batches']} "
                f"appends, {r['rows']:,} rows (Spark) | {r['storage_best_s']:.2f} s, "
                f"{r['ratio']:.2f}x the direct read ({r['direct_best_s']:.2f} s) | "
                f"<= {r['target_ratio']:g}x the direct read | "
                f"{r['ratio'] / r['target_ratio']:.2f}x | {_met(r['met'])} |"
            )
        elif case == "snapshot-append":
            lines.append(
                f"| append: {r['updates']:,} updates, {r['batches']} appends of "
                f"{r['batch_updates']:,} (SQLite) | {r['updates_per_s']:,.0f} updates/s "
                "| - | - | - |"
            )
        elif case == "compaction":
            lines.append(
                f"| compaction to one since: {r['updates']:,} updates (Spark) | "
                f"{r['seconds']:.2f} s, {r['rows_before']:,} -> {r['rows_after']:,} rows, "
                f"{r['updates_per_s']:,.0f} updates/s | - | - | - |"
            )
        else:
            where = "SQLite" if case == "small-sqlite" else "PostgreSQL"
            lines.append(
                f"| small appends: {r['updates_per_append']} updates each ({where}) | "
                f"{r['appends_per_s']:,.0f} appends/s | >= {r['target_appends_per_s']} appends/s "
                f"| {r['appends_per_s'] / r['target_appends_per_s']:.2f}x | {_met(r['met'])} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the sizes")
    parser.add_argument("--master", default="local[2]", help="the Spark master")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs after the warm-up")
    parser.add_argument("--seconds", type=float, default=5.0, help="small appends per backend")
    parser.add_argument("--work", default=None, help="where the data homes go (default: temp)")
    args = parser.parse_args()
    if args.scale <= 0 or args.repeats < 1:
        parser.error("--scale must be positive and --repeats at least 1")
    seconds = max(1.0, args.seconds * min(1.0, args.scale))
    if args.work:
        Path(args.work).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="changeflow-bench-storage-", dir=args.work))
    say(f"storage benchmark at scale {args.scale:g}, data homes under {work}")
    try:
        results = [append_case(work, args.scale)]
        results.extend(snapshot_and_compaction_cases(work, args.scale, args.master, args.repeats))
        say(f"small-sqlite: appends of {SMALL_BATCH} updates for {seconds:.0f} s…")
        results.append(small_appends_case("small-sqlite", work / "small-sqlite", None, seconds))
        results.append(small_postgres_case(work, seconds))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "when": time.strftime("%F %T"),
        "scale": args.scale,
        "master": args.master,
        "repeats": args.repeats,
        "small_append_seconds": seconds,
    }
    publish("storage", {"meta": meta, "results": results}, markdown(results))


if __name__ == "__main__":
    main()
