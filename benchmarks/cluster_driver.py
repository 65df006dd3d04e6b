"""Benchmark: the driver's memory under a cluster-tier view whose arrangements hold more rows
than any TPC-H query of ``cluster.py`` does.

The view joins every order with every line item of TPC-H at ``--scale`` (default SF 10) and
sums the line items' prices per line number, so its join arranges both inputs whole (at SF 10,
15M orders and 60M line items: 75M rows). On the same two-worker standalone cluster as
``cluster.py``, with a 1 GiB driver: the view hydrates, its arrangements are written, and it
takes ``--steps`` refreshes (0.1% of the orders inserted and as many deleted); meanwhile the
driver's peak resident memory above its start is taken (the Python process, whose own TPC-H
tables do not count, and the driver JVM). The output is checked against DuckDB at the last
step.

Target (the cluster issue's): the driver's peak RSS at most 1 GiB for a view of 50M arranged
rows.

    python benchmarks/cluster_driver.py [--scale 10] [--steps 3] [--work .bench-work]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from cluster import driver_growth, executor_tasks, prepare, reset_peaks
from compute import install_output
from readme import publish
from tpch import (
    T0,
    duck_apply,
    duck_tables,
    generate,
    load,
    load_shards,
    output_rows,
    refreshes,
    same_rows,
    say,
    timed,
)

from changeflow.compute import plan as P
from changeflow.compute.dataflow import drop_view, maintain_view
from changeflow.compute.plan import Aggregate
from changeflow.compute.types import from_arrow_schema

TARGET_MIB = 1024
SQL = (
    "SELECT l_linenumber, sum(l_extendedprice), count(*) FROM orders, lineitem "
    "WHERE o_orderkey = l_orderkey GROUP BY l_linenumber"
)


def view(orders: P.Plan, lineitem: P.Plan) -> P.Plan:
    """Every order joined with its line items, the prices summed per line number."""
    ords = P.Project(orders, (0, 3))  # o_orderkey, o_shippriority
    lines = P.Project(lineitem, (0, 1, 3))  # l_orderkey, l_linenumber, l_extendedprice
    joined = P.Join((ords, lines), ((0, 2),))
    price = P.col(joined.schema, 4)
    return P.Reduce(
        joined, (3,), (Aggregate("sum", price), Aggregate("count", None)), ("revenue", "lines")
    )


def run(args: argparse.Namespace, spark: Any, steps: list, home: Path) -> tuple[dict, list]:
    """The view hydrated and stepped on the cluster; its figures and its last output rows. The
    TPC-H tables are loaded into shards and let go before the view starts."""
    tables = load(generate(args.scale, args.cache))
    steps += refreshes(tables, args.steps, seed=11)
    shards = load_shards(home, tables, args.master)
    del tables  # the DuckDB check reads them again once the cluster is gone
    gc.collect()
    inputs = (P.Get(n, from_arrow_schema(shards.schemas[n])) for n in ("orders", "lineitem"))
    plan = view(*inputs)
    install_output(shards.storage, "wide_out", plan)
    base = reset_peaks(spark)
    started = time.monotonic()
    flow = maintain_view(shards.storage, "wide", plan, "wide_out", spark, cluster=True)
    flow.run(until=T0 + 1)
    r: dict[str, Any] = {"scale": args.scale, "hydration_s": time.monotonic() - started}
    flow.arranging.wait()
    r["arranged_s"], r["state_rows"] = time.monotonic() - started, flow.state_size()
    say(
        f"SF {args.scale:g}: hydrated in {r['hydration_s']:.1f} s, arranged "
        f"{r['arranged_s']:.1f} s, {r['state_rows']:,} rows held"
    )
    spent, tasks = [], []
    for refresh in steps:
        before = executor_tasks(spark)
        appended, _ = timed(lambda f=refresh: shards.append(f))
        secs, _ = timed(lambda f=refresh: flow.run(until=f.time + 1))
        spent.append(appended + secs)
        tasks.append(executor_tasks(spark) - before)
        say(f"SF {args.scale:g}: step ({refresh.changes():,} changes) {spent[-1]:.2f} s")
    r["step_s"], r["tasks_per_step"] = statistics.median(spent), statistics.median(tasks)
    r["driver"] = driver_growth(spark, base)
    growth = (r["driver"].get("python_mib") or 0) + (r["driver"].get("jvm_mib") or 0)
    r["met"] = r["state_rows"] >= 50_000_000 and growth <= TARGET_MIB
    got = output_rows(shards.storage, "wide_out", steps[-1].time)
    flow.close()
    drop_view(shards.storage, flow.name, flow.plan)
    shards.storage.close()
    say(f"SF {args.scale:g}: driver {r['driver']}")
    return r, got


def check(args: argparse.Namespace, steps: list, got: list) -> str:
    """The view's last output against DuckDB's answer over the same tables and refreshes."""
    duck_file = Path(args.work) / f"duckdb-driver-sf{args.scale:g}.db"
    duck_file.unlink(missing_ok=True)
    duck = duck_tables(load(generate(args.scale, args.cache)), duck_file)
    try:
        for refresh in steps:
            duck_apply(duck, refresh)
        return same_rows(got, duck.execute(SQL).fetchall()) or "ok"
    finally:
        duck.close()
        duck_file.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--work", default=".bench-work", help="cached data and data homes")
    parser.add_argument("--executor-memory", default="4g", help="each of the two executors")
    args = parser.parse_args()
    prepare(args)
    from changeflow.spark import get_spark
    from changeflow.testing.cluster import standalone_cluster

    cluster_work = Path(tempfile.mkdtemp(prefix="cluster-", dir=args.work))
    home = Path(tempfile.mkdtemp(prefix=f"cluster-driver-sf{args.scale:g}-", dir=args.work))
    steps: list = []
    try:
        with standalone_cluster(cluster_work, 2, 120.0, worker_memory=args.executor_memory) as url:
            args.master = url
            spark = get_spark(url)
            spark.range(1).count()
            result, got = run(args, spark, steps, home)
            spark.stop()
        result["check"] = check(args, steps, got)
        result["driver_memory"] = os.environ["CHANGEFLOW_DRIVER_MEMORY"]
        result["load_average"] = os.getloadavg()
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(cluster_work, ignore_errors=True)
    publish("cluster_driver", result, markdown(result))


def markdown(r: dict) -> str:
    d = r["driver"]
    growth = (d.get("python_mib") or 0) + (d.get("jvm_mib") or 0)
    return "\n".join(
        [
            "| SF | rows held | hydration (arranged) | step p50 | tasks/step | driver peak RSS "
            "above its start: Python + JVM | target (≤1 GiB at 50M rows) | check |",
            "|---|---|---|---|---|---|---|---|",
            f"| {r['scale']:g} | {r['state_rows']:,} | {r['hydration_s']:.1f} s "
            f"({r['arranged_s']:.1f} s) | {r['step_s']:.2f} s | {r['tasks_per_step']:g} "
            f"| {d.get('python_mib') or 0:.0f} + {d.get('jvm_mib') or 0:.0f} = {growth:.0f} MiB "
            f"| {'yes' if r['met'] else '**no**'} | {r['check']} |",
        ]
    )


if __name__ == "__main__":
    main()
