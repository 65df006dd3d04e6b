"""Benchmark: a temporal filter's far-future retractions cost a step nothing.

One shard of ``--rows`` rows ``(id bigint, ts bigint, v bigint)``, ``ts`` spread over the 30
days (epoch milliseconds) before ``T0``, all at time ``T0``. Two views over it, side by side:

- plain: ``Map(Filter(src, v < 900), w = v * 2)``;
- open: the same under ``TemporalFilter(lower=ts)``: bounds evaluated, no retractions;
- temporal: the same under ``TemporalFilter(lower=ts, upper=ts + WINDOW)`` with a window of
  100 years, so that every row is in the view at every step and its retraction lies in the far
  future, where it waits in the output sink's Correction buffer.

All hydrate as of ``T0`` (``--hydrate python``: the snapshot through the operators;
``spark``: in bulk on Spark), then ``--steps`` refresh steps, one second apart, each inserting
``--share`` of the rows (new ids) and deleting as many live ones. A step is timed from the
append to the view's output upper passing the step's time (the views take turns going
first); the report gives median and p90 of each view, the ratios temporal / plain (target
about 1x) and temporal / open (what the far-future retractions themselves cost), and the
Correction buffer's size. After hydration and on ``--checks`` steps every output is compared
with the reference evaluator (``compute.evaluate``) on all the live rows. A control run
takes a tenth of the rows with the same changes a step: does the buffer's size cost a step?

Python hydration is the default: measured here at 200k rows, it took 3.7 s (plain) and 5.0 s
(temporal) against 14.8 s and 11.3 s for bulk hydration on a warm ``local[2]`` session. These
views keep no arrangement, so Spark's part is only handing every row to Python, twice for the
temporal filter (its input, for the updates it owes, and the output).

Writes ``results/temporal.json`` and ``results/temporal.md`` and refreshes the README table
between the ``bench:temporal`` markers.

    python benchmarks/temporal.py [--rows 1000000] [--steps 20] [--hydrate python]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from readme import publish
from tpch import output_version

from changeflow.compute import plan as P
from changeflow.compute.dataflow import Dataflow, maintain_view
from changeflow.compute.evaluate import evaluate
from changeflow.compute.expr import Arith, Cmp, Lit
from changeflow.compute.types import INT8, arrow_schema, from_arrow_schema
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.updates import DIFF, TIME

HERE = Path(__file__).resolve().parent
LEASE = 24 * 3600.0
T0 = 1_735_689_600_000  # 2025-01-01 in epoch milliseconds
SPREAD_MS = 30 * 86_400_000  # ts lies in the 30 days before T0
WINDOW_MS = 100 * 365 * 86_400_000  # retractions a century after ts: the far future
STEP_MS = 1_000
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("v", pa.int64())])
VIEWS = ("plain", "open", "temporal")
TARGET = 1.2  # "about 1x": a median step within 1.2x of the one it is compared with
_START = time.perf_counter()


def say(text: str) -> None:
    print(f"[{time.perf_counter() - _START:7.1f} s] {text}", file=sys.stderr, flush=True)


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


# -- data ---------------------------------------------------------------------------------------


class Rows:
    """The live rows of the shard, as columns, with new rows and deletions drawn at random."""

    def __init__(self, n: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.next_id = 0
        self.table = self.fresh(n, T0)

    def fresh(self, n: int, now: int) -> pa.Table:
        """``n`` new rows with ids not used before, ``ts`` in the 30 days before ``now``."""
        ids = np.arange(self.next_id, self.next_id + n, dtype=np.int64)
        self.next_id += n
        ts = now - self.rng.integers(1, SPREAD_MS, n, dtype=np.int64)
        v = self.rng.integers(0, 1000, n, dtype=np.int64)
        return pa.table([ids, ts, v], schema=SCHEMA)

    def step(self, k: int, now: int) -> tuple[pa.Table, pa.Table]:
        """Insert ``k`` new rows and delete ``k`` live ones: (inserted, deleted)."""
        gone = self.rng.choice(self.table.num_rows, size=k, replace=False)
        keep = np.ones(self.table.num_rows, dtype=bool)
        keep[gone] = False
        deleted = self.table.take(pa.array(gone))
        inserted = self.fresh(k, now)
        self.table = pa.concat_tables([self.table.filter(pa.array(keep)), inserted])
        self.table = self.table.combine_chunks()
        return inserted, deleted

    def version(self) -> dict[tuple, int]:
        """The collection now, as the reference evaluator takes it."""
        columns = [self.table.column(n).to_pylist() for n in SCHEMA.names]
        return dict.fromkeys(zip(*columns, strict=True), 1)


def stamped(table: pa.Table, t: int, diff: int) -> pa.Table:
    n = table.num_rows
    table = table.append_column(TIME, pa.array(np.full(n, t, np.int64)))
    return table.append_column(DIFF, pa.array(np.full(n, diff, np.int64)))


# -- views --------------------------------------------------------------------------------------


def plans() -> dict[str, P.Plan]:
    """The plain view, and the same view under a temporal filter without and with a far-future
    end."""
    src = P.Get("src", from_arrow_schema(SCHEMA))
    ts, v = P.col(src.schema, 1), P.col(src.schema, 2)
    kept = P.Filter(src, (Cmp("<", v, Lit(900, INT8)),))
    plain = P.Map(kept, (("w", Arith("*", P.col(kept.schema, 2), Lit(2, INT8))),))
    start = (P.col(plain.schema, 1),)
    temporal = P.TemporalFilter(plain, start, (Arith("+", ts, Lit(WINDOW_MS, INT8)),))
    return {"plain": plain, "open": P.TemporalFilter(plain, start), "temporal": temporal}


def install_output(storage: Storage, output: str, plan: P.Plan) -> None:
    """An empty output for ``plan`` whose since and upper are both ``T0``."""
    read, write = storage.create(output, arrow_schema(plan.schema))
    storage.append(write, [], T0)
    storage.downgrade(read, T0)
    storage.drop(read)
    storage.drop(write)


def check(storage: Storage, flows: dict[str, Dataflow], rows: Rows, t: int) -> dict[str, Any]:
    """Each output at ``t`` against the reference evaluator on the live rows."""
    out: dict[str, Any] = {"time": t}
    source = rows.version()
    for view, flow in flows.items():
        secs, want = timed(lambda p=flow.plan: evaluate(p, {"src": source}, t))
        got = output_version(storage, flow.output, t)
        if got == want:
            out[view] = "ok"
        else:
            extra = sum(1 for r in got if got[r] != want.get(r, 0))
            missing = sum(1 for r in want if r not in got)
            out[view] = f"{extra} rows differ, {missing} missing ({len(got)} vs {len(want)})"
        out[f"{view}_reference_s"] = round(secs, 2)
    return out


# -- the run ------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="temporal-", dir=args.work))
    try:
        return _run(args, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _run(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    spark = None
    if args.hydrate == "spark":
        from changeflow.spark import get_spark

        spark = get_spark(args.master)
        spark.range(1).count()
    storage = Storage(
        open_consensus(f"sqlite:{home / 'consensus.sqlite'}"),
        Blob(str(home / "blob")),
        LEASE,
        args.master,
    )
    rows = Rows(args.rows, seed=17)
    read, write = storage.create("src", SCHEMA)
    secs, _ = timed(lambda: storage.append(write, stamped(rows.table, T0, 1), T0 + 1))
    storage.downgrade(read, T0)
    say(f"{args.rows:,} rows appended in {secs:.1f} s")
    result: dict[str, Any] = {"rows": args.rows, "load_s": secs, "views": {}, "checks": []}
    flows: dict[str, Dataflow] = {}
    for view, plan in plans().items():
        install_output(storage, view, plan)
        secs, flow = timed(lambda p=plan, v=view: maintain_view(storage, v, p, v, spark))
        more, _ = timed(lambda f=flow: f.run(until=T0 + 1))
        flows[view] = flow
        r = result["views"][view] = {
            "hydration_s": secs + more,
            "correction_after_hydration": len(flow.sink.correction),
        }
        say(
            f"{view}: hydrated ({args.hydrate}) in {secs + more:.1f} s; correction buffer "
            f"{r['correction_after_hydration']:,} updates"
        )
    result["checks"].append(check(storage, flows, rows, T0))
    say(f"check at T0: {result['checks'][-1]}")
    k = max(1, round(args.share * args.rows))
    spent: dict[str, list[float]] = {v: [] for v in VIEWS}
    checked = set(np.linspace(1, args.steps, args.checks, dtype=int).tolist())
    for i in range(1, args.steps + 1):
        t = T0 + i * STEP_MS
        inserted, deleted = rows.step(k, t)
        frame = pa.concat_tables([stamped(inserted, t, 1), stamped(deleted, t, -1)])
        appended, _ = timed(lambda f=frame, t=t: storage.append(write, f, t + 1))
        order = list(flows)[i % len(flows) :] + list(flows)[: i % len(flows)]  # none always first
        for view in order:
            secs, _ = timed(lambda f=flows[view], t=t: f.run(until=t + 1))
            spent[view].append(appended + secs)
        say(
            f"step {i}/{args.steps} ({2 * k:,} changes): "
            + ", ".join(f"{v} {spent[v][-1] * 1000:.0f} ms" for v in VIEWS)
        )
        if i in checked:
            result["checks"].append(check(storage, flows, rows, t))
            say(f"check at step {i}: {result['checks'][-1]}")
    if args.profile:
        profile_step(storage, write, rows, flows, k, T0 + (args.steps + 1) * STEP_MS, result)
    for view, flow in flows.items():
        r = result["views"][view]
        r["step_s"] = statistics.median(spent[view])
        r["step_p90_s"] = sorted(spent[view])[int(0.9 * (len(spent[view]) - 1))]
        r["steps_s"] = spent[view]
        flow.sink.correction.consolidate_at_since()
        r["correction_after_steps"] = len(flow.sink.correction)
        r["operator_rows"] = flow.state_size()
        flow.close()
    views = result["views"]
    for other in ("plain", "open"):
        result[f"ratio_{other}_median"] = views["temporal"]["step_s"] / views[other]["step_s"]
        result[f"ratio_{other}_p90"] = views["temporal"]["step_p90_s"] / views[other]["step_p90_s"]
    result["ratio_median"] = result["ratio_plain_median"]
    result["met"] = result["ratio_median"] <= TARGET
    result["far_future_held"] = views["temporal"]["correction_after_steps"]
    result["changes_per_step"] = 2 * k
    result["exact"] = all(c[v] == "ok" for c in result["checks"] for v in VIEWS)
    storage.close()
    return result


def profile_step(
    storage: Storage,
    write: Any,
    rows: Rows,
    flows: dict[str, Dataflow],
    k: int,
    t: int,
    result: dict[str, Any],
) -> None:
    """One more step (not among the timed ones), each view under cProfile: where it goes."""
    inserted, deleted = rows.step(k, t)
    frame = pa.concat_tables([stamped(inserted, t, 1), stamped(deleted, t, -1)])
    storage.append(write, frame, t + 1)
    for view, flow in flows.items():
        profile = cProfile.Profile()
        profile.enable()
        flow.run(until=t + 1)
        profile.disable()
        stats = pstats.Stats(profile)
        total = sum(entry[2] for entry in stats.stats.values())
        top = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:5]
        result["views"][view]["profile"] = {
            "total_s": round(total, 4),
            "top": [
                {"function": f"{Path(f).name}:{line}({fn})", "own_s": round(e[2], 4)}
                for (f, line, fn), e in top
            ],
        }


# -- the report ----------------------------------------------------------------------------------


def markdown(result: dict[str, Any], meta: dict[str, Any], control: dict | None) -> str:
    lines = [
        "Temporal filter cost (`benchmarks/temporal.py`, also in `make bench`): a plain "
        "Filter/Map view, the same under `TemporalFilter(lower=ts)` (open: no retractions) and "
        "under `TemporalFilter(lower=ts, upper=ts + 100 years)` (temporal: every retraction "
        "waits in the far future, in the output sink's Correction buffer), over one "
        f"shard of {result['rows']:,} rows `(id, ts, v)`, stepped side by side in one process. "
        f"{meta['steps']} steps of {result['changes_per_step']:,} "
        f"changes ({meta['share']:.1%} of the rows inserted, as many deleted); hydration: "
        f"{meta['hydrate']}; seconds from the append to the output's upper passing the step:",
        "",
        "| view | hydration s | step median | step p90 | correction buffer after hydration "
        "(as staged) | after the steps | operator rows |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for view in VIEWS:
        r = result["views"][view]
        lines.append(
            f"| {view} | {r['hydration_s']:.1f} | {r['step_s']:.3f} | {r['step_p90_s']:.3f} | "
            f"{r['correction_after_hydration']:,} | {r['correction_after_steps']:,} | "
            f"{r['operator_rows']:,} |"
        )
    met = "yes" if result["met"] else "**no**"
    times = ", ".join(
        "T0" if c["time"] == T0 else f"step {(c['time'] - T0) // STEP_MS}" for c in result["checks"]
    )
    verdict = "exact" if result["exact"] else "**not exact**: " + json.dumps(result["checks"])
    lines += [
        "",
        f"- temporal / plain: median {result['ratio_plain_median']:.2f}x, p90 "
        f"{result['ratio_plain_p90']:.2f}x (target about 1x, at most {TARGET}x): {met}",
        f"- temporal / open (the far-future retractions alone): median "
        f"{result['ratio_open_median']:.2f}x, p90 {result['ratio_open_p90']:.2f}x",
        f"- both outputs against the reference evaluator on all {result['rows']:,} rows at "
        f"{times}: {verdict}",
    ]
    profiled = [v for v in VIEWS if "profile" in result["views"][v]]
    if profiled:
        lines += ["", "One more step under cProfile (own time of the top functions):", ""]
        for view in profiled:
            p = result["views"][view]["profile"]
            top = ", ".join(f"{e['function']} {e['own_s'] * 1000:.0f} ms" for e in p["top"][:4])
            lines.append(f"- {view} ({p['total_s'] * 1000:.0f} ms profiled): {top}")
    if control is not None:
        lines += [
            "",
            f"The same steps ({result['changes_per_step']:,} changes each) over a tenth of the "
            "rows, so a tenth of the far-future retractions buffered (median step, seconds):",
            "",
            "| rows | buffer after the steps | plain | open | temporal | temporal / plain |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for r in (result, control):
            v = r["views"]
            lines.append(
                f"| {r['rows']:,} | {r['far_future_held']:,} | {v['plain']['step_s']:.3f} | "
                f"{v['open']['step_s']:.3f} | {v['temporal']['step_s']:.3f} | "
                f"{r['ratio_plain_median']:.2f}x |"
            )
        grown = "yes" if result["growth_met"] else "**no**"
        lines += [
            "",
            f"- temporal step at {result['rows']:,} rows / at {result['control_rows']:,}: "
            f"{result['growth']:.2f}x (target: the buffered retractions cost the step nothing, "
            f"at most {TARGET}x): {grown}",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the shard")
    parser.add_argument("--steps", type=int, default=40, help="timed refresh steps")
    parser.add_argument("--share", type=float, default=0.001, help="rows inserted (and deleted)")
    parser.add_argument("--checks", type=int, default=2, help="steps checked by the reference")
    parser.add_argument(
        "--hydrate", choices=("python", "spark"), default="python", help="how views hydrate"
    )
    parser.add_argument("--master", default="local[2]", help="the Spark master (--hydrate spark)")
    parser.add_argument("--work", default=".bench-work", help="where the data home goes")
    parser.add_argument(
        "--no-profile",
        dest="profile",
        action="store_false",
        help="skip the one profiled step after the timed ones",
    )
    parser.add_argument(
        "--no-control",
        dest="control",
        action="store_false",
        help="skip the run over a tenth of the rows with the same changes a step",
    )
    parser.add_argument(
        "--no-readme", dest="readme", action="store_false", help="leave results and README alone"
    )
    args = parser.parse_args()
    if args.steps < 2 or args.rows < 1000 or not 0 < args.share < 0.5:
        parser.error("--steps at least 2, --rows at least 1000, --share in (0, 0.5)")
    args.checks = max(0, min(args.checks, args.steps))
    args.work = Path(args.work).resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    say(f"temporal benchmark: {args.rows:,} rows, {args.steps} steps, hydrate {args.hydrate}")
    result = run(args)
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "when": time.strftime("%F %T"),
        "steps": args.steps,
        "share": args.share,
        "hydrate": args.hydrate,
        "master": args.master if args.hydrate == "spark" else None,
        "target": TARGET,
    }
    control = None
    if args.control:
        small = argparse.Namespace(
            **{**vars(args), "rows": args.rows // 10, "checks": 0, "profile": False}
        )
        small.share = args.share * args.rows / small.rows  # the same changes a step
        say(
            f"control: {small.rows:,} rows, the same {2 * round(small.share * small.rows):,} "
            "changes a step"
        )
        control = run(small)
        result["control_rows"] = small.rows
        result["growth"] = (
            result["views"]["temporal"]["step_s"] / control["views"]["temporal"]["step_s"]
        )
        result["growth_met"] = result["growth"] <= TARGET
    table = markdown(result, meta, control)
    print(table)
    if not args.readme:
        return
    publish("temporal", {"meta": meta, "result": result, "control": control}, table)


if __name__ == "__main__":
    main()
