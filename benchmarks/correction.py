"""Benchmark: the Correction buffer against its plain-dict reference, side by side in one run.

The buffer holds what a sink still has to write: the desired updates, minus the negation of
what it has written (read back from the shard). Patterns, over T timestamps with the same
number of updates at every timestamp (data ``(key int64, value int64)``):

- append: inserts of new keys only, at increasing times;
- upsert: each step replaces earlier keys: the old value retracted and the new one inserted,
  both at the step's time (a key is replaced every 4 steps);
- temporal-filter: half of a step inserts new keys at t, the other half retracts the same
  rows at t + 2**40, so far-future retractions pile up in the buffer.

Routines, each run on a fresh buffer and a fresh reference:

- drain_stepwise: per timestamp t, insert the step's updates, read ``updates_before(t + 1)``,
  insert the negation of what was read (as the sink's read-back would) and advance the since
  to t + 1;
- advance_jump: insert every step, then advance the since in one jump past all of them and
  read once (catch-up after a restart); the jump and read are also timed on their own;
- insert: insert every step, no reads (the buffer keeps less than a chunk staged, unmerged).

The buffer gets Arrow update frames and the reference Python triples, both prepared before any
timing. After each run both sides must agree on the total count written by the routine and on
the final ``updates_before(None)`` (compared in full, outside the timing), so both did the same
work. Each timing is the best of ``--repeats`` runs, the two sides alternating.

Targets:

1. catch-up work is linear: ``drain_stepwise`` and ``advance_jump`` over 2048 timestamps cost
   at most 8x what 512 cost, at 128 updates per timestamp (every pattern);
2. reads are not slowed by future updates: ``drain_stepwise`` (upsert, 64k updates over 512
   timestamps) with 256k far-future retractions already buffered is within 1.5x of the same
   drain without them;
3. at least 10x the reference's throughput (updates/s) at 256k updates.

Writes ``results/correction.json`` and ``results/correction.md`` and refreshes the README table
between the ``bench:correction`` markers (when they are there).

    python benchmarks/correction.py [--quick] [--repeats 5] [--timestamps 256]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from readme import publish

from changeflow.compute.correction import Correction
from changeflow.storage.frames import frame_schema
from changeflow.testing.correction import CorrectionReference

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCHEMA = pa.schema([("key", pa.int64()), ("value", pa.int64())])
FRAME = frame_schema(SCHEMA)
FAR = 2**40  # how far ahead a temporal filter's retraction lies
UPSERT_CYCLE = 4  # an upserted key is replaced every this many steps
PATTERNS = ["append", "upsert", "temporal-filter"]
ROUTINES = ["drain_stepwise", "advance_jump", "insert"]
SIZES = [1_024, 16_384, 262_144]
QUICK_SIZES = [1_024, 16_384]
LINEAR_STEPS, LINEAR_PER_STEP = (512, 2048), 128
QUICK_LINEAR_STEPS, QUICK_LINEAR_PER_STEP = (64, 256), 32
FUTURE, FUTURE_TIMES, FUTURE_DRAIN = 262_144, 2048, (512, 128)  # target 2's case
QUICK_FUTURE, QUICK_FUTURE_DRAIN = 16_384, (64, 32)
TARGETS = {
    "linear": 2.0,  # times the growth in timestamps at most: 8x for 4x the timestamps
    "future": 1.5,  # times the drain without far-future updates at most
    "throughput": 10.0,  # times the reference's updates/s at least
}
_START = time.perf_counter()


def say(text: str) -> None:
    print(f"[{time.perf_counter() - _START:7.1f} s] {text}", file=sys.stderr, flush=True)


# -- data ---------------------------------------------------------------------------------------


@dataclass
class Workload:
    """The same updates, per step, as Arrow frames (for the buffer) and triples (reference)."""

    pattern: str
    steps: int
    frames: list[pa.Table]
    triples: list[list[tuple[tuple[int, int], int, int]]]

    @property
    def updates(self) -> int:
        return sum(f.num_rows for f in self.frames)


def frame(key: np.ndarray, value: np.ndarray, times: np.ndarray, diff: np.ndarray) -> pa.Table:
    return pa.table({"key": key, "value": value, "_time": times, "_diff": diff}).cast(FRAME)


def as_triples(table: pa.Table) -> list[tuple[tuple[int, int], int, int]]:
    key, value, times, diff = (table.column(c).to_pylist() for c in FRAME.names)
    return list(zip(zip(key, value, strict=True), times, diff, strict=True))


def workload(pattern: str, steps: int, per_step: int, seed: int = 0) -> Workload:
    """``steps`` steps of ``per_step`` updates each, step t at time t; rows shuffled per step."""
    if per_step < 2 or per_step % 2:
        raise ValueError(f"{per_step} updates per step: an even number of at least 2")
    rng = np.random.default_rng(seed)
    half = per_step // 2
    ones = np.ones(per_step, np.int64)
    frames = []
    for t in range(steps):
        now = np.full(per_step, t, np.int64)
        if pattern == "append":
            key = np.arange(t * per_step, (t + 1) * per_step, dtype=np.int64)
            value, times, diff = key % 1_000, now, ones
        elif pattern == "upsert":
            touch = t * half + np.arange(half, dtype=np.int64)  # the how-many-th replacement
            keys = touch % (UPSERT_CYCLE * half)
            version = touch // (UPSERT_CYCLE * half)  # the value before the run is version -1
            key = np.concatenate([keys, keys])
            value = np.concatenate([version - 1, version])
            times = now
            diff = np.concatenate([-ones[:half], ones[:half]])
        elif pattern == "temporal-filter":
            keys = np.arange(t * half, (t + 1) * half, dtype=np.int64)
            key, value = np.concatenate([keys, keys]), np.concatenate([keys, keys]) % 1_000
            times = np.concatenate([now[:half], now[:half] + FAR])
            diff = np.concatenate([ones[:half], -ones[:half]])
        else:
            raise ValueError(f"unknown pattern {pattern!r}")
        order = rng.permutation(per_step)
        frames.append(frame(key[order], value[order], times[order], diff[order]))
    return Workload(pattern, steps, frames, [as_triples(f) for f in frames])


def future_retractions(n: int) -> tuple[pa.Table, list]:
    """``n`` retractions of keys no workload uses, spread over ``FUTURE_TIMES`` times near FAR."""
    key = np.arange(n, dtype=np.int64) + 2**50
    times = FAR + np.arange(n, dtype=np.int64) % FUTURE_TIMES
    table = frame(key, key % 1_000, times, np.full(n, -1, np.int64))
    return table, as_triples(table)


# -- routines (the same code drives both sides: they share the operations) ------------------


def drain_stepwise(side: Any, steps: list) -> dict:
    written = 0
    for t, updates in enumerate(steps):
        side.insert(updates)
        out = side.updates_before(t + 1)
        side.insert_negated(out)
        side.advance_since(t + 1)
        written += len(out)
    return {"written": written}


def advance_jump(side: Any, steps: list) -> dict:
    for updates in steps:
        side.insert(updates)
    start = time.perf_counter()
    side.advance_since(len(steps))
    out = side.updates_before(len(steps) + 1)
    return {"written": len(out), "jump_s": time.perf_counter() - start}


def insert(side: Any, steps: list) -> dict:
    for updates in steps:
        side.insert(updates)
    return {"written": 0}


ROUTINE: dict[str, Callable[[Any, list], dict]] = {
    "drain_stepwise": drain_stepwise,
    "advance_jump": advance_jump,
    "insert": insert,
}


def run_once(side: str, routine: str, load: Workload, preload: tuple | None) -> dict:
    """One timed run on a fresh side; its final contents are returned for the comparison."""
    box: Any = Correction(SCHEMA) if side == "buffer" else CorrectionReference()
    if preload is not None:  # buffered before the run, not timed
        box.insert(preload[0] if side == "buffer" else preload[1])
        box.updates_before(0)
    steps = load.frames if side == "buffer" else load.triples
    gc.collect()
    start = time.perf_counter()
    out = ROUTINE[routine](box, steps)
    out["seconds"] = time.perf_counter() - start
    final = box.updates_before(None)
    out["final"] = as_triples(final) if side == "buffer" else final
    return out


def measure(
    routine: str, load: Workload, repeats: int, preload: tuple | None = None, label: str = ""
) -> dict:
    """Best of ``repeats`` runs of each side; both sides must end with the same updates."""
    runs: dict[str, list[dict]] = {"buffer": [], "reference": []}
    for run in range(repeats):
        for side in ("buffer", "reference") if run % 2 == 0 else ("reference", "buffer"):
            runs[side].append(run_once(side, routine, load, preload))
    seen = {(r["written"], len(r["final"])) for rs in runs.values() for r in rs}
    finals = [r["final"] for rs in runs.values() for r in rs]
    if len(seen) != 1 or any(f != finals[0] for f in finals):
        raise SystemExit(f"{load.pattern} {routine}: the buffer and the reference disagree: {seen}")
    best = {side: min(rs, key=lambda r: r["seconds"]) for side, rs in runs.items()}
    n = load.updates
    result = {
        "pattern": label or load.pattern,
        "updates": n,
        "timestamps": load.steps,
        "routine": routine,
        "buffer_s": best["buffer"]["seconds"],
        "reference_s": best["reference"]["seconds"],
        "buffer_runs_s": [r["seconds"] for r in runs["buffer"]],
        "reference_runs_s": [r["seconds"] for r in runs["reference"]],
        "buffer_updates_per_s": n / best["buffer"]["seconds"],
        "reference_updates_per_s": n / best["reference"]["seconds"],
        "speedup": best["reference"]["seconds"] / best["buffer"]["seconds"],
        "written": best["buffer"]["written"],
        "final_updates": len(finals[0]),
    }
    if preload is not None:
        result["preloaded"] = preload[0].num_rows
    if routine == "advance_jump":
        result["buffer_jump_s"] = min(r["jump_s"] for r in runs["buffer"])
        result["reference_jump_s"] = min(r["jump_s"] for r in runs["reference"])
    say(
        f"{result['pattern']:<24} {n:>9,} updates {load.steps:>5} steps {routine:<14} "
        f"buffer {result['buffer_s']:7.3f} s  reference {result['reference_s']:7.3f} s  "
        f"speed-up {result['speedup']:6.2f}x"
    )
    return result


# -- the targets -------------------------------------------------------------------------------


def linear_target(results: list[dict], steps: tuple[int, int]) -> dict:
    """Each pattern and catch-up routine: time at the larger step count over the smaller."""
    few, many = steps
    pairs = []
    for r in results:
        if r["timestamps"] != few or r.get("case") != "linear":
            continue
        big = next(
            x
            for x in results
            if x.get("case") == "linear"
            and x["timestamps"] == many
            and (x["pattern"], x["routine"]) == (r["pattern"], r["routine"])
        )
        pair = {
            "pattern": r["pattern"],
            "routine": r["routine"],
            "few_s": r["buffer_s"],
            "many_s": big["buffer_s"],
            "ratio": big["buffer_s"] / r["buffer_s"],
        }
        if r["routine"] == "advance_jump":
            pair["jump_ratio"] = big["buffer_jump_s"] / r["buffer_jump_s"]
        pairs.append(pair)
    worst = max(pairs, key=lambda p: p["ratio"])
    return {
        "target": "linear",
        "steps": list(steps),
        "pairs": pairs,
        "worst": worst,
        "limit": TARGETS["linear"] * many / few,
        "met": all(p["ratio"] <= TARGETS["linear"] * many / few for p in pairs),
    }


def future_target(without: dict, with_future: dict) -> dict:
    ratio = with_future["buffer_s"] / without["buffer_s"]
    return {
        "target": "future",
        "without_s": without["buffer_s"],
        "with_s": with_future["buffer_s"],
        "ratio": ratio,
        "reference_ratio": with_future["reference_s"] / without["reference_s"],
        "preloaded": with_future["preloaded"],
        "limit": TARGETS["future"],
        "met": ratio <= TARGETS["future"],
    }


def throughput_target(results: list[dict], size: int) -> dict:
    rows = [r for r in results if r.get("case") == "main" and r["updates"] == size]
    best = max(rows, key=lambda r: r["speedup"])
    return {
        "target": "throughput",
        "updates": size,
        "speedups": {f"{r['pattern']}/{r['routine']}": r["speedup"] for r in rows},
        "best": f"{best['pattern']}/{best['routine']}",
        "best_speedup": best["speedup"],
        "met_for": [f"{r['pattern']}/{r['routine']}" for r in rows if r["speedup"] >= 10],
        "limit": TARGETS["throughput"],
        "met": best["speedup"] >= TARGETS["throughput"],
    }


# -- the harness -------------------------------------------------------------------------------


def _met(value: bool) -> str:
    return "**met**" if value else "**not met**"


def markdown(results: list[dict], targets: list[dict]) -> str:
    """The results as a markdown table, then the three targets."""
    lines = [
        "| pattern | updates | timestamps | routine | buffer s | reference s | "
        "buffer updates/s | speed-up (reference s / buffer s) |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['pattern']} | {r['updates']:,} | {r['timestamps']:,} | {r['routine']} | "
            f"{r['buffer_s']:.3f} | {r['reference_s']:.3f} | "
            f"{r['buffer_updates_per_s']:,.0f} | {r['speedup']:.2f}x |"
        )
    linear, future, throughput = targets
    few, many = linear["steps"]
    ratios = ", ".join(
        f"{p['pattern']}/{p['routine']} {p['ratio']:.2f}x"
        + (f" (jump and read alone {p['jump_ratio']:.2f}x)" if "jump_ratio" in p else "")
        for p in linear["pairs"]
    )
    speedups = ", ".join(f"{k} {v:.2f}x" for k, v in throughput["speedups"].items())
    met_for = ", ".join(throughput["met_for"]) or "none"
    lines += [
        "",
        f"1. Catch-up work is linear ({many} timestamps cost at most {linear['limit']:g}x what "
        f"{few} cost): {_met(linear['met'])}. Buffer time {many}/{few}: {ratios}.",
        f"2. Reads are not slowed by future updates (at most {future['limit']:g}x with "
        f"{future['preloaded']:,} far-future retractions buffered): {_met(future['met'])}, "
        f"{future['ratio']:.2f}x ({future['with_s']:.3f} s against {future['without_s']:.3f} s; "
        f"the reference: {future['reference_ratio']:.2f}x).",
        f"3. At least {throughput['limit']:g}x the reference's throughput at "
        f"{throughput['updates']:,} updates: {_met(throughput['met'])}; best "
        f"{throughput['best']} at {throughput['best_speedup']:.2f}x; met for: {met_for}. "
        f"Speed-ups: {speedups}.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (development)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per side, best counts")
    parser.add_argument("--timestamps", type=int, default=256, help="steps of the main cases")
    args = parser.parse_args()
    if args.repeats < 1 or args.timestamps < 1:
        parser.error("--repeats and --timestamps must be at least 1")
    sizes = QUICK_SIZES if args.quick else SIZES
    linear_steps = QUICK_LINEAR_STEPS if args.quick else LINEAR_STEPS
    linear_per_step = QUICK_LINEAR_PER_STEP if args.quick else LINEAR_PER_STEP
    future_n = QUICK_FUTURE if args.quick else FUTURE
    drain_steps, drain_per_step = QUICK_FUTURE_DRAIN if args.quick else FUTURE_DRAIN
    say(f"correction benchmark{' (quick)' if args.quick else ''}, best of {args.repeats} runs")

    results = []
    for size in sizes:
        steps = args.timestamps
        while size // steps < 2:
            steps //= 2
        for pattern in PATTERNS:
            load = workload(pattern, steps, size // steps)
            for routine in ROUTINES:
                results.append({"case": "main", **measure(routine, load, args.repeats)})
    for steps in linear_steps:
        for pattern in PATTERNS:
            load = workload(pattern, steps, linear_per_step)
            for routine in ("drain_stepwise", "advance_jump"):
                results.append({"case": "linear", **measure(routine, load, args.repeats)})
    load = workload("upsert", drain_steps, drain_per_step)
    without = {"case": "future", **measure("drain_stepwise", load, args.repeats)}
    preload = future_retractions(future_n)
    label = f"upsert + {future_n // 1024}k far-future"
    with_future = {
        "case": "future",
        **measure("drain_stepwise", load, args.repeats, preload, label),
    }
    results += [without, with_future]
    targets = [
        linear_target(results, linear_steps),
        future_target(without, with_future),
        throughput_target(results, sizes[-1]),
    ]
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "when": time.strftime("%F %T"),
        "quick": args.quick,
        "repeats": args.repeats,
        "timestamps": args.timestamps,
        "chunk_rows": Correction(SCHEMA).chunk_rows,
    }
    table = markdown(results, targets)
    if args.quick:  # development runs leave the results and the README alone
        print(table)
        return
    publish("correction", {"meta": meta, "results": results, "targets": targets}, table)


if __name__ == "__main__":
    main()
