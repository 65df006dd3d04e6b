"""Benchmark: maintaining window functions, a step against recomputing the whole input.

A ``Window`` (row_number, rank, a running sum and lag over ``PARTITION BY g ORDER BY v``) over
``--rows`` input rows in ``--partitions`` partitions, as the process tier's operator keeps it:
hydrated once, then steps of ``--changes`` row updates (an insertion and a retraction each)
that fall in one partition; each step's time is set beside evaluating the whole window from
scratch with the reference evaluator (what a system that recomputes would pay). The step's
output is checked against the difference of the reference's outputs before and after.

Writes ``results/windows.json`` and ``results/windows.md``.

    python benchmarks/windows.py [--rows 100000] [--partitions 10 1000] [--changes 10]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections import Counter
from pathlib import Path

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.evaluate import evaluate
from changeflow.compute.operators import Inputs, build, hydrate
from changeflow.compute.types import INT4, Column

RESULTS = Path(__file__).parent / "results"
SCHEMA = (Column("id", INT4), Column("g", INT4), Column("v", INT4))


def window_plan() -> W.Window:
    get = P.Get("t", SCHEMA)
    value = P.col(SCHEMA, 2)
    funcs = (
        W.WindowFunc("row_number"),
        W.WindowFunc("rank"),
        W.WindowFunc("sum", (value,)),
        W.WindowFunc("lag", (value,)),
    )
    return W.Window(get, (1,), (P.Order(2),), funcs)


def run(rows: int, partitions: int, changes: int, steps: int) -> dict:
    rng = random.Random(7)
    data = Counter((i, i % partitions, rng.randrange(1000)) for i in range(rows))
    plan = window_plan()
    inputs = Inputs()
    op = build(plan, inputs, 0)
    started = time.perf_counter()
    hydrate(op, lambda p: list(evaluate(p, {"t": dict(data)}, 0).items()), 0)
    hydration = time.perf_counter() - started
    step_times, full_times = [], []
    before = evaluate(plan, {"t": dict(data)}, 0)
    for t in range(1, steps + 1):
        g = rng.randrange(partitions)
        victims = [r for r in list(data)[:: max(1, rows // 5000)] if r[1] == g][:changes]
        updates = [(r, t, -1) for r in victims]
        fresh = [(rows + t * changes + j, g, rng.randrange(1000)) for j in range(changes)]
        updates += [(r, t, 1) for r in fresh]
        for row, _, d in updates:
            data[row] += d
            if not data[row]:
                del data[row]
        inputs.feed("t", updates)
        started = time.perf_counter()
        out = op.step(t + 1)
        step_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        after = evaluate(plan, {"t": dict(data)}, t)
        full_times.append(time.perf_counter() - started)
        expected = Counter(after)
        expected.subtract(before)
        got = Counter()
        for row, _, d in out:
            got[row] += d
        assert +got == +expected and -got == -expected, "the step differs from the reference"
        before = after
    step, full = statistics.median(step_times), statistics.median(full_times)
    return {
        "rows": rows,
        "partitions": partitions,
        "changes_per_step": 2 * changes,
        "hydration_s": round(hydration, 3),
        "step_ms_median": round(step * 1000, 2),
        "recompute_ms_median": round(full * 1000, 1),
        "speedup": round(full / step, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    results = [run(args.rows, p, args.changes, args.steps) for p in args.partitions]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "windows.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        "# Window functions: a maintained step against recomputing",
        "",
        "| rows | partitions | changes/step | hydration s | step ms | recompute ms | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['rows']} | {r['partitions']} | {r['changes_per_step']} | "
            f"{r['hydration_s']} | {r['step_ms_median']} | {r['recompute_ms_median']} | "
            f"{r['speedup']}x |"
        )
    (RESULTS / "windows.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
