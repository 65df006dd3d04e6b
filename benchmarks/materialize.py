"""Benchmark: materializing upserts into PostgreSQL and SQLite, against a naive upsert loop.

A shard holds N upserts (default 1M) over K keys (default 100k) in appends of 10k, one time
each: an upsert retracts the key's previous row (if any) and inserts its new one. Generated
with numpy and appended untimed. Then, per target, side by side in one run:

- driver: ``materialize(...)`` end to end (the subscription's read of the shard, the runtime's
  transactions of 10k upserts reduced with Arrow, one Store batch each and, as lastWriteWins
  into SQL needs no load, no Load; the driver's commits), into a fresh table;
- on PostgreSQL, the driver split into ``--ranges`` key ranges (``materialize_split``: a
  runtime and a connection per range, side by side), with its client and server CPU seconds;
- naive: the same 10k new rows per transaction, prepared as Python tuples in advance
  (untimed), written by ``executemany`` of ``INSERT … ON CONFLICT DO UPDATE`` and one commit
  per transaction, on the same server (PostgreSQL) or the same kind of file (SQLite: WAL,
  ``synchronous=FULL``, like the driver's);
- the database alone: the same batches in key order, prepared in advance (untimed) and written
  as the driver writes them, without the runtime (PostgreSQL: binary COPY into a temporary
  table, one ``INSERT … SELECT … ON CONFLICT``, the commit; SQLite: ``executemany`` of the
  upsert with the driver's settings, the commit), each step timed.

They run in turn, ``--repeat`` rounds (default 2), and each keeps its best round: the
machine may be shared, and a round of one run beside a busy moment of another says little.
The driver's run is timed in parts (the shard's read, the runtime, the driver's side of the
transport). Every table must equal the final state. At a tenth of the size
(``--profile-scale``), a cProfile run names the functions.

Writes ``results/materialize.json`` and ``results/materialize.md`` and refreshes the README
block between the ``bench:materialize`` markers (when they are there).

    python benchmarks/materialize.py [--scale 1.0] [--profile-scale 0.1] [--repeat 2]
        [--ranges 2] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from materialize_runs import BATCH, PARTS, profile, ranged, split
from materialize_targets import SCHEMA, PostgresTarget, Row, SqliteTarget, Target, postgres, say
from readme import publish

from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

UPSERTS, KEYS = 1_000_000, 100_000
TARGET_RATE, TARGET_RATIO = 300_000, 3.0  # upserts/s at least; times the naive loop at least
RATIO_TARGETS = ("PostgreSQL",)  # the targets with a ratio to the naive loop to meet
LEASE = 24 * 3600.0
RANGES = 2  # key ranges of the split driver run (PostgreSQL: a connection each)


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


def compare(
    target: Target,
    n: int,
    transactions: int,
    work: Path,
    storage: Storage,
    rows: list[list[Row]],
    expected: list[Row],
    repeat: int,
    ranges: int,
) -> dict:
    """The driver in one connection (timed in parts, see :func:`split`) and, on PostgreSQL,
    split into ``ranges`` key ranges, the naive loop and the database's own share
    (:meth:`Target.bulk`) on ``target``, ``repeat`` rounds of them in turn (the machine may
    be shared: each keeps its best round), each table checked against ``expected``."""
    runs: dict[str, list[Any]] = {"driver": [], "naive": [], "bulk": []}
    if ranges > 1 and isinstance(target, PostgresTarget):
        runs["ranges"] = []
    for i in range(repeat):
        if "ranges" in runs:
            say(f"{target.name}: {n:,} upserts in {ranges} key ranges (round {i + 1})…")
            run = ranged(target, storage, work, f"ranges_{i}", ranges)
            runs["ranges"].append(run)
            say(f"{target.name}: {ranges} ranges {run['wall_s']:.2f} s {run}")
            target.settle(f"ranges_{i}")
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
    best = min(runs.get("ranges") or [None], key=lambda r: r["wall_s"] if r else 0.0)
    best_s = min(driver_s, best["wall_s"]) if best else driver_s
    rate, ratio = n / best_s, naive_s / best_s
    return {
        "target": target.name,
        "upserts": n,
        "keys": len(expected),
        "transactions": txns,
        "driver_s": driver_s,
        "naive_s": naive_s,
        "driver_upserts_per_s": n / driver_s,
        "naive_upserts_per_s": n / naive_s,
        "split": parts,
        "ranged": best,
        "best_upserts_per_s": rate,
        "bulk": bulk,
        "bulk_upserts_per_s": n / bulk["s"],
        "vs_naive": ratio,
        "rounds": {
            "driver_s": [p["wall_s"] for p in runs["driver"]],
            "naive_s": runs["naive"],
            "bulk_s": [b["s"] for b in runs["bulk"]],
            "ranges_s": [r["wall_s"] for r in runs.get("ranges", [])],
        },
        "rate_met": rate >= TARGET_RATE,
        "ratio_met": ratio >= TARGET_RATIO if target.name in RATIO_TARGETS else None,
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
            f"{r['naive_upserts_per_s']:,.0f} | {r['naive_s'] / r['driver_s']:.2f}x |"
        )
        if g := r.get("ranged"):
            lines.append(
                f"| {r['target']}, {g['ranges']} key ranges (a connection each) | "
                f"{r['upserts']:,} ({r['keys']:,}) | {g['transactions']} | {g['wall_s']:.2f} | "
                f"{r['upserts'] / g['wall_s']:,.0f} | {r['naive_s']:.2f} | "
                f"{r['naive_upserts_per_s']:,.0f} | {r['naive_s'] / g['wall_s']:.2f}x |"
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
        if g := r.get("ranged"):
            cpu = g["client_cpu_s"] + g["server_cpu_s"]
            lines.append(
                f"| {r['target']}, {g['ranges']} key ranges | {g['wall_s']:.2f} | "
                f"{g['client_cpu_s']:.2f} | {g['server_cpu_s']:.2f} | "
                f"{r['upserts'] / cpu:,.0f} | | |"
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
            f"- {r['target']} (its best run): at least {TARGET_RATE:,} upserts/s: "
            f"{_met(r['rate_met'])} ({r['best_upserts_per_s']:,.0f}, "
            f"{r['best_upserts_per_s'] / TARGET_RATE:.2f}x the target); {ratio}."
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
    parser.add_argument(
        "--ranges", type=int, default=RANGES, help="key ranges of the split run (PostgreSQL)"
    )
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
                            compare(
                                target,
                                n,
                                batches,
                                home,
                                storage,
                                rows,
                                expected,
                                args.repeat,
                                args.ranges,
                            )
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
        "ranges": args.ranges,
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
