"""Benchmark: the adapter from SQL — writes, INSERT … SELECT, SELECT latency, TPC-H views.

Every case opens its own home with ``changeflow.connect(home, host_seconds=0)`` (no host
thread: work happens in the statements), except one write case with the host thread on.

- writes: single-row ``INSERT`` transactions (autocommit) from one session, from 4 sessions
  on one environment (threads sharing group commit) and from 4 processes on one home (each its
  own connection); txns/s, p50/p99/max latency, log entries per transaction, the rate of the first
  and the last tenth (the write log keeps its pending entries until a read applies them), and
  the first read after the writes (it applies them). On SQLite consensus and, when a
  throwaway server starts, PostgreSQL consensus (``fsync=off``).
- insert-select: ``INSERT INTO dst SELECT * FROM src`` of ``--insert-rows`` rows in a child
  process (its peak RSS is the statement's); ``src`` is created in SQL and filled with one
  Arrow frame through the write log (checked against the shard's schema by storage's
  ``to_frame``, as ``TxnLog.frame`` does for rows; ``conn.env.committer.commit`` takes the
  oracle's write timestamp and commits it with ``TxnLog.commit``).
- select: a small result (one group) of a GROUP BY view over ``--select-rows`` rows, from a
  materialized view, from an index on a view and from a plain view (evaluated from scratch),
  interleaved; warm (no write between queries) and fresh (one INSERT before each query);
  and an ad hoc equi-join SELECT of two tables at ``--join-rows`` sizes.
- tpch: TPC-H Q1 and Q3 (``benchmarks/tpch.py``'s data and refresh steps at ``--scale``)
  as SQL ``CREATE MATERIALIZED VIEW`` over SQL tables, against the hand-built plans of
  ``tpch.plans()`` maintained over the same shards: rows compared (and against
  ``changeflow.compute.evaluate.evaluate`` of the hand plan), hydration and refresh steps
  timed side by side.

The cases live in ``adapter_writes.py`` (writes, insert-select), ``adapter_selects.py`` and
``adapter_tpch.py``, their shared helpers in ``adapter_common.py`` and the Markdown report in
``adapter_report.py``.

Writes ``results/adapter.json`` and ``results/adapter.md`` and refreshes the README table
between the ``bench:adapter`` markers.

    python benchmarks/adapter.py [--txns 600] [--insert-rows 1000000] [--select-rows 100000]
        [--scale 0.01] [--no-postgres] [--only writes insert_select select tpch]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

from adapter_report import markdown
from adapter_selects import selects
from adapter_tpch import tpch
from adapter_writes import insert_select, writes
from readme import publish
from tpch import (
    elapsed,
)

CASES = ("writes", "insert_select", "select", "tpch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--txns", type=int, default=600, help="INSERT transactions per case")
    parser.add_argument("--insert-rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument(
        "--profile-rows", type=int, default=100_000, help="profiled INSERT … SELECT"
    )
    parser.add_argument("--select-rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50, help="SELECTs per kind and mode")
    parser.add_argument("--join-rows", type=int, nargs="*", default=[250, 500, 1000])
    parser.add_argument("--scale", type=float, default=0.01, help="TPC-H scale")
    parser.add_argument("--tpch-steps", type=int, default=10, help="refresh steps")
    parser.add_argument("--no-postgres", dest="postgres", action="store_false")
    parser.add_argument("--only", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--work", default=".bench-work", help="cached data and data homes")
    args = parser.parse_args()
    if args.txns < 40 or args.queries < 1 or args.tpch_steps < 1:
        parser.error("--txns must be at least 40, --queries and --tpch-steps at least 1")
    args.work = Path(args.work).resolve()
    args.cache = args.work / "tpch"
    args.cache.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    load_at_start = os.getloadavg()
    if "writes" in args.only:
        results["writes"] = writes(args)
    if "insert_select" in args.only:
        results["insert_select"] = [insert_select(args, n) for n in args.insert_rows]
        if args.profile_rows:
            results["insert_select"].append(insert_select(args, args.profile_rows, profile=True))
    if "select" in args.only:
        results["select"] = selects(args)
    if "tpch" in args.only:
        results["tpch"] = tpch(args)
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_start": load_at_start,
        "load_average_end": os.getloadavg(),
        "when": time.strftime("%F %T"),
        "args": {k: v for k, v in vars(args).items() if k not in ("work", "cache")},
        "seconds": elapsed(),
    }
    table = markdown(results) + (
        f"\n\nLoad average (1 min) {load_at_start[0]:.1f} at the start, "
        f"{meta['load_average_end'][0]:.1f} at the end, on {os.cpu_count()} cores."
    )
    publish("adapter", {"meta": meta, **results}, table)


if __name__ == "__main__":
    main()
