"""Benchmark: TPC-H Q1 and Q3 on the cluster tier of a Spark standalone cluster, side by side
with Spark's batch query, Spark recomputing after each refresh, and DuckDB, in one run.

The data, views and refresh steps are those of ``compute.py`` (its plans are what the SQL
planner makes of the TPC-H text; the adapter's tests check that): TPC-H from ``tpchgen-cli`` in
shards at ``T0``, each refresh step inserting 0.1% new orders with their lineitems and deleting
0.1% of the original ones. A standalone master and two one-core workers (pyspark's own jars,
``changeflow.testing.cluster``) run every Spark job; the driver runs with
``CHANGEFLOW_DRIVER_MEMORY`` (default here 1g).

Per view and scale: the cluster tier's hydration (a new dataflow until its output passes
``T0``, after one untimed warm-up, as the batch has; and, beside it, until its arrangements,
written after the output, are written too) against Spark evaluating the plan on the
snapshots (the better of two after a warm-up) and DuckDB on the Parquet files; then the
refresh steps (median and p90 of ``--steps``, timed from the appends to the output passing the
step's time) against Spark recomputing the plan and DuckDB recomputing the SQL; the tasks the
executors completed per step; the rows the spines hold; how far the driver's resident memory
rose while the views hydrated and stepped (the Python process, whose own TPC-H tables are not
counted, and the driver JVM, which in standalone mode runs no tasks; Spark's and DuckDB's
recomputes run after, each at a step's time). Each view's output is checked against DuckDB.

Targets (the cluster issue's): hydration within 1.5x the batch; a step at least 20x faster than
the Spark recompute; the driver's RSS independent of the state.

Writes ``results/cluster.json``, ``results/cluster.md`` and ``results/cluster.png`` (step latency
and driver RSS against the rows held) and the README table between the ``bench:cluster``
markers.

    python benchmarks/cluster.py [--scale 0.1 1] [--steps 8] [--work .bench-work]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
from compute import _met, install_output
from readme import RESULTS, publish
from tpch import (
    T0,
    TABLES,
    duck_apply,
    duck_tables,
    generate,
    load,
    load_shards,
    output_rows,
    plans,
    refreshes,
    same_rows,
    say,
    sql,
    timed,
)

from changeflow.compute.dataflow import Dataflow, drop_view, maintain_view

VIEWS = ("q1", "q3")
TARGETS = {"hydration": 1.5, "step_speedup": 20.0}


def executor_tasks(spark: Any) -> int:
    """Tasks completed so far by the executors (not the driver)."""
    listed = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    entries = (listed.apply(i) for i in range(listed.size()))
    return sum(e.completedTasks() for e in entries if e.id() != "driver")


def _status(pid: int | str, field: str) -> float:
    """A process's ``Vm…`` figure from ``/proc``, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def _driver_pids(spark: Any) -> dict[str, int | str]:
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    return {"python": "self", **({"jvm": proc.pid} if proc is not None else {})}


def reset_peaks(spark: Any) -> dict[str, float]:
    """Reset the driver's peak-RSS marks (Linux ``clear_refs`` 5) and return its RSS now: the
    benchmark's own data (TPC-H tables, refreshes) is in this process and must not count."""
    base = {}
    for part, pid in _driver_pids(spark).items():
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        base[part] = _status(pid, "VmRSS")
    return base


def driver_growth(spark: Any, base: dict[str, float]) -> dict[str, float | None]:
    """How far the driver's resident memory rose above ``base`` at its peak since the reset,
    in MiB: the Python process and the driver JVM (None where it is not ours to read)."""
    pids = _driver_pids(spark)
    out: dict[str, float | None] = {"jvm_mib": None}
    for part, pid in pids.items():
        out[f"{part}_mib"] = max(0.0, _status(pid, "VmHWM") - base[part])
        out[f"{part}_base_mib"] = base[part]
    return out


def run_scale(scale: float, args: argparse.Namespace, spark: Any) -> dict:
    tables = load(generate(scale, args.cache))
    rows = {n: t.num_rows for n, t in tables.items()}
    say(f"SF {scale:g}: " + ", ".join(f"{n} {r:,}" for n, r in rows.items()))
    steps = refreshes(tables, args.steps, seed=11)
    home = Path(tempfile.mkdtemp(prefix=f"cluster-sf{scale:g}-", dir=args.work))
    try:
        seconds, shards = timed(lambda: load_shards(home, tables, args.master))
        say(f"SF {scale:g}: loaded the shards in {seconds:.1f} s")
        views = {v: p for v, p in plans(shards.schemas).items() if v in VIEWS}
        result: dict[str, Any] = {"scale": scale, "rows": rows, "load_s": seconds, "views": {}}

        def hydrate(view: str, label: str) -> Dataflow:
            plan = views[view]
            install_output(shards.storage, f"{view}_{label}", plan)
            flow = maintain_view(
                shards.storage, f"{view}-{label}", plan, f"{view}_{label}", spark, cluster=True
            )
            flow.run(until=T0 + 1)
            return flow

        base = reset_peaks(spark)  # the warm-ups count: the driver keeps what they grew
        for view in views:  # one untimed warm-up each, as the batch query has
            warm = hydrate(view, "warm")
            warm.close()
            drop_view(shards.storage, warm.name, warm.plan)
        flows: dict[str, Dataflow] = {}
        for view in views:
            r = result["views"][view] = {}
            tasks = executor_tasks(spark)
            r["hydration_s"], flows[view] = timed(lambda v=view: hydrate(v, "cluster"))
            r["arranged_s"] = r["hydration_s"] + timed(flows[view].arranging.wait)[0]
            r["hydration_tasks"] = executor_tasks(spark) - tasks
            r["state_rows"] = flows[view].state_size()
        run_steps(scale, spark, shards, flows, steps, result)
        result["driver"] = driver_growth(spark, base)
        say(f"SF {scale:g}: driver peak RSS above its start {result['driver']}")
        compare(scale, args, spark, shards, views, flows, steps, tables, result)
        for flow in flows.values():
            flow.close()
            drop_view(shards.storage, flow.name, flow.plan)
        shards.storage.close()
        return result
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run_steps(scale, spark, shards, flows, steps, result) -> None:  # noqa: ANN001
    """Each refresh appended, then each view stepped past its time."""
    spent: dict[str, list[float]] = {v: [] for v in flows}
    tasks: dict[str, list[int]] = {v: [] for v in flows}
    for i, refresh in enumerate(steps):
        appended, _ = timed(lambda r=refresh: shards.append(r))
        for view, flow in flows.items():
            before = executor_tasks(spark)
            secs, _ = timed(lambda f=flow, r=refresh: f.run(until=r.time + 1))
            spent[view].append(appended + secs)
            tasks[view].append(executor_tasks(spark) - before)
        say(
            f"SF {scale:g} step {i + 1}/{len(steps)} ({refresh.changes():,} changes): "
            + ", ".join(f"{v} {spent[v][-1]:.2f} s" for v in flows)
        )
    for view in flows:
        r = result["views"][view]
        r["step_s"] = statistics.median(spent[view])
        r["step_p90_s"] = sorted(spent[view])[int(0.9 * (len(spent[view]) - 1))]
        r["tasks_per_step"] = statistics.median(tasks[view])
        r["state_rows_after"] = flows[view].state_size()
    result["changes_per_step"] = statistics.median(s.changes() for s in steps)


def compare(scale, args, spark, shards, views, flows, steps, tables, result) -> None:  # noqa: ANN001
    """The same work by Spark and DuckDB, after the dataflows (so the driver's figure is
    theirs alone): the batch at ``T0``, then each step's time recomputed; the outputs checked."""
    parquet = {n: f"read_parquet('{generate(scale, args.cache) / n}.parquet')" for n in TABLES}
    for view, plan in views.items():
        r = result["views"][view]
        batch = [timed(lambda p=plan: shards.recompute(p, T0, spark))[0] for _ in range(3)]
        r["spark_batch_s"] = min(batch[1:])
        duck = duckdb.connect()
        duck.execute("SET threads TO 2")
        duck.execute(sql(view, parquet, T0)).fetchall()
        r["duckdb_s"] = timed(lambda d=duck, v=view: d.execute(sql(v, parquet, T0)).fetchall())[0]
        duck.close()
        r["hydration_ratio"] = r["hydration_s"] / r["spark_batch_s"]
        r["hydration_met"] = r["hydration_ratio"] <= TARGETS["hydration"]
        say(
            f"SF {scale:g} {view}: hydration {r['hydration_s']:.1f} s "
            f"({r['hydration_ratio']:.2f}x the batch {r['spark_batch_s']:.1f} s), "
            f"{r['state_rows']:,} rows held"
        )
    duck_file = Path(args.work) / f"duckdb-sf{scale:g}.db"  # the tables need not fit in memory
    duck_file.unlink(missing_ok=True)
    duck = duck_tables(tables, duck_file)
    names = {n: n for n in TABLES}
    spark_spent: dict[str, list[float]] = {v: [] for v in views}
    duck_spent: dict[str, list[float]] = {v: [] for v in views}
    for i, refresh in enumerate(steps):
        duck_apply(duck, refresh)
        for view, plan in views.items():
            duck_spent[view].append(
                timed(lambda v=view, t=refresh.time: duck.execute(sql(v, names, t)).fetchall())[0]
            )
            if i in (len(steps) // 2, len(steps) - 1):
                secs, _ = timed(lambda p=plan, t=refresh.time: shards.recompute(p, t, spark))
                spark_spent[view].append(secs)
    last = steps[-1].time
    for view in views:
        r = result["views"][view]
        r["spark_recompute_s"] = statistics.median(spark_spent[view])
        r["duckdb_recompute_s"] = statistics.median(duck_spent[view])
        r["step_speedup"] = r["spark_recompute_s"] / r["step_s"]
        r["step_met"] = r["step_speedup"] >= TARGETS["step_speedup"]
        want = duck.execute(sql(view, names, last)).fetchall()
        r["check"] = same_rows(output_rows(shards.storage, flows[view].output, last), want) or "ok"
        say(
            f"SF {scale:g} {view}: step {r['step_s']:.2f} s (p90 {r['step_p90_s']:.2f} s), "
            f"Spark recompute {r['spark_recompute_s']:.2f} s ({r['step_speedup']:.1f}x), DuckDB "
            f"{r['duckdb_recompute_s'] * 1000:.0f} ms; check: {r['check']}"
        )
    duck.close()
    duck_file.unlink()


def markdown(results: list[dict]) -> str:
    lines = [
        "| SF | view | rows held | hydration (arranged) | Spark batch | ratio (≤1.5x) "
        "| step p50 / p90 "
        "| Spark recompute | speedup (≥20x) | DuckDB recompute | tasks/step | check |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        for view, r in res["views"].items():
            lines.append(
                f"| {res['scale']:g} | {view} | {r['state_rows']:,} | {r['hydration_s']:.1f} s "
                f"({r['arranged_s']:.1f} s) | {r['spark_batch_s']:.1f} s "
                f"| {r['hydration_ratio']:.2f}x ({r['arranged_s'] / r['spark_batch_s']:.2f}x) "
                f"{_met(r['hydration_met'])} | {r['step_s']:.2f} / {r['step_p90_s']:.2f} s "
                f"| {r['spark_recompute_s']:.1f} s "
                f"| {r['step_speedup']:.1f}x {_met(r['step_met'])} "
                f"| {r['duckdb_recompute_s'] * 1000:.0f} ms | {r['tasks_per_step']:.0f} "
                f"| {r['check']} |"
            )
    lines += [
        "",
        "| SF | driver peak RSS above its start: Python | driver JVM | rows held (Q1 + Q3) |",
        "|---|---|---|---|",
    ]
    for res in results:
        d = res["driver"]
        held = sum(r["state_rows"] for r in res["views"].values())
        jvm = "-" if d["jvm_mib"] is None else f"{d['jvm_mib']:.0f} MiB"
        lines.append(f"| {res['scale']:g} | {d['python_mib']:.0f} MiB | {jvm} | {held:,} |")
    lines += [
        "",
        "Driver memory is the peak resident set while the views warm up, hydrate and step, above "
        "what the process held before (this process also holds the benchmark's TPC-H tables "
        "and refreshes, which are not the driver's); Spark's and DuckDB's recomputes run after. "
        "The driver JVM's heap is capped by CHANGEFLOW_DRIVER_MEMORY (1g here).",
    ]
    return "\n".join(lines)


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (steps, memory) = plt.subplots(1, 2, figsize=(10, 4))
    for view in VIEWS:
        held = [r["views"][view]["state_rows"] for r in results]
        steps.plot(held, [r["views"][view]["step_s"] for r in results], "o-", label=f"{view} step")
        steps.plot(
            held, [r["views"][view]["spark_recompute_s"] for r in results], "s--",
            label=f"{view} Spark recompute",
        )  # fmt: skip
    steps.set(xscale="log", yscale="log", xlabel="rows held", ylabel="seconds")
    steps.legend(fontsize=7)
    held = [sum(v["state_rows"] for v in r["views"].values()) for r in results]
    memory.plot(held, [r["driver"]["python_mib"] for r in results], "o-", label="Python")
    memory.plot(held, [r["driver"]["jvm_mib"] or 0 for r in results], "s-", label="driver JVM")
    memory.set(xscale="log", xlabel="rows held (both views)", ylabel="driver peak RSS growth, MiB")
    memory.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def prepare(args: argparse.Namespace) -> None:
    """The data folders (``args.work``, ``args.cache``) and the driver's and executors'
    memory for a run on the two-worker cluster (this module's and ``cluster_driver.py``'s)."""
    args.work = Path(args.work).resolve()
    args.cache = args.work / "tpch"
    args.cache.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CHANGEFLOW_DRIVER_MEMORY", "1g")
    os.environ["CHANGEFLOW_EXECUTOR_MEMORY"] = args.executor_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--steps", type=int, default=8, help="timed refresh steps per scale")
    parser.add_argument("--work", default=".bench-work", help="cached data and data homes")
    parser.add_argument("--executor-memory", default="4g", help="each of the two executors")
    args = parser.parse_args()
    if args.steps < 2 or any(s <= 0 for s in args.scale):
        parser.error("--steps must be at least 2, scales positive")
    prepare(args)
    from changeflow.spark import get_spark
    from changeflow.testing.cluster import standalone_cluster

    cluster_work = Path(tempfile.mkdtemp(prefix="cluster-", dir=args.work))
    with standalone_cluster(cluster_work, 2, 120.0, worker_memory=args.executor_memory) as url:
        args.master = url
        say(f"cluster benchmark at SF {', '.join(f'{s:g}' for s in args.scale)} on {url}")
        spark = get_spark(url)
        spark.range(1).count()
        results = [run_scale(s, args, spark) for s in sorted(args.scale)]
        spark.stop()
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "when": time.strftime("%F %T"),
        "scales": sorted(args.scale),
        "steps": args.steps,
        "driver_memory": os.environ["CHANGEFLOW_DRIVER_MEMORY"],
        "executor_memory": args.executor_memory,
        "python": sys.version.split()[0],
        "targets": TARGETS,
    }
    plot(results, RESULTS / "cluster.png")
    table = markdown(results) + "\n\n![Cluster tier](benchmarks/results/cluster.png)"
    publish("cluster", {"meta": meta, "results": results}, table)


if __name__ == "__main__":
    main()
