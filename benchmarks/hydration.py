"""Benchmark: a new view hydrating in the process (no Spark), rows a second, and where the
time goes.

A table ``r`` of ``--rows`` random rows (the columnar benchmark's: ``k bigint, qty integer,
price numeric, disc numeric, ship date, ship_ms bigint``) and ``d`` (49 rows) are written to
shards at ``T0``; each view then hydrates as of ``T0``: its inputs' snapshots go through the
operators as one step, the output to its shard. Views: ``chain`` (Filter, Map, Project),
``reduce`` (the chain grouped by ``qty``: sum, count) and ``join`` (the chain joined with ``d``,
reduced by ``qty``), as in ``columnar.py``. With ``--tpch FOLDER`` (TPC-H Parquet, as
``compute.py`` generates), the views are instead TPC-H Q1 and Q3 (``tpch.plans``) over its
lineitem, orders and customer, rows counted over the tables a view reads. Times are wall clock and
CPU seconds. The hydration runs under cProfile (in CPU time) once more, its time split by where it
is spent (shard read, operators and frames, output write, the rest), and the functions with the
most own time are listed.

    python benchmarks/hydration.py [--rows 1000000] [--views chain reduce join]
    python benchmarks/hydration.py --tpch .bench-work/tpch-sf1 [--views q1 q3]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from columnar import DIMENSION, R, frame, plans
from compute import hydrate, profile_top
from tpch import load, load_shards
from tpch import plans as tpch_plans

from changeflow.updates import DIFF, TIME


def _cum(stats: dict, file: str, func: str, caller: tuple[str, str] | None = None) -> float:
    """Cumulative seconds in ``file``'s ``func`` (only its calls from ``caller`` if given)."""
    total = 0.0
    for (f, _, fn), entry in stats.items():
        if not (f.endswith(file) and fn == func):
            continue
        if caller is None:
            total += entry[3]
            continue
        for (cf, _, cfn), sub in entry[4].items():
            if cf.endswith(caller[0]) and cfn == caller[1]:
                total += sub[3]
    return total


def tables(rows: int) -> dict[str, pa.Table]:
    r = frame(rows, seed=rows).drop_columns([TIME, DIFF])
    return {"r": r, "d": DIMENSION.drop_columns([TIME, DIFF])}


def split(profile: cProfile.Profile, total: float) -> dict[str, float]:
    """Seconds by where they are spent (the rest of ``total`` is ``other``)."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    read_back = _cum(stats, "compute/sink.py", "_read_back")
    out = {
        "input shard read": _cum(stats, "storage/read.py", "next", ("compute/dataflow.py", "step")),
        "operators and frames": _cum(stats, "compute/dataflow.py", "_compute"),
        "output write (Correction buffer, shard)": _cum(stats, "compute/sink.py", "step")
        - _cum(stats, "compute/sink.py", "_read_back", ("compute/sink.py", "step")),
        "output read back": read_back,
    }
    out["other (view setup, consensus)"] = total - sum(out.values())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--views", nargs="+")
    parser.add_argument("--tpch", type=Path, help="a folder of TPC-H Parquet files")
    args = parser.parse_args()
    assert R.name == "r"
    data = tables(args.rows) if args.tpch is None else load(args.tpch)
    with tempfile.TemporaryDirectory() as home:
        shards = load_shards(Path(home), data, "local[1]")
        views = plans() if args.tpch is None else tpch_plans(shards.schemas)
        for view in args.views or [v for v in views if v != "window"]:
            plan = views[view]
            rows = sum(data[name].num_rows for name in plan.collections())
            started, cpu = time.perf_counter(), time.process_time()
            hydrate(shards, view, plan, None, "a").close()
            secs, cpu = time.perf_counter() - started, time.process_time() - cpu
            # CPU time, not the wall clock: on a shared machine the wall clock counts others' work.
            profile = cProfile.Profile(time.process_time)
            started = time.process_time()
            profile.enable()
            hydrate(shards, view, plan, None, "b").close()
            profile.disable()
            total = time.process_time() - started
            places = split(profile, total)
            shares = ", ".join(f"{p} {s / total:.0%}" for p, s in places.items())
            print(
                f"{view}: {rows:,} rows hydrated in {secs:.2f} s wall, {cpu:.2f} s CPU "
                f"({rows / secs / 1e6:.2f}M rows/s wall, {rows / cpu / 1e6:.2f}M rows/s CPU); "
                f"profiled: {total:.2f} s CPU, {shares}",
                flush=True,
            )
            for entry in profile_top(profile, 12)["top"]:
                print(f"    {entry['own_s']:7.3f} s {entry['share']:4.0%} {entry['function']}")


if __name__ == "__main__":
    main()
