"""Benchmark: a step's cost per changed row, rows against columns, at growing change sizes.

The operators alone (no storage, no sink): a step takes one update frame of ``n`` changes
(``k bigint, qty integer, price numeric, disc numeric, ship date, ship_ms bigint``, random) and
returns the output's update frame, as a dataflow does. Two ways, side by side in one run:

- rows: the frame made into ``(row, time, diff)`` tuples, the operators' row form, the output
  made into a frame again (the dataflow before columnar operators);
- columns: the frame fed as it is, the operators' batch form (``pyarrow.compute`` kernels),
  the output frame cast to the view's schema.

Plans: ``chain`` = Project(Map(Filter(r, ship <= date AND qty > 5), price * (1 - disc),
qty + 1)); ``filter`` = Filter(r, ship_ms > c); ``temporal`` = TemporalFilter(r, ship_ms,
ship_ms + 90 days) (target: at most 1.2x the plain filter); ``reduce`` = Reduce(chain) grouped
by ``qty`` (sum, count), summed per group in Arrow; ``join`` = Reduce(Map(Join(chain, d on qty),
revenue * w)) by ``qty`` (sum, count), ``d`` 49 rows fed in a first step (target: at most 3 µs
a changed row); ``distinct`` = Distinct(Project(r, qty, ship)); ``left join`` = chain LEFT
JOIN (d where q <= 25) on qty (half the rows NULL-padded); ``top-k`` = the 3 highest prices
per qty. Each case is the best of
``--repeats`` steps, each on operators built (and fed ``d``) beforehand, untimed; both ways'
outputs are checked equal.

Writes ``results/columnar.json``, ``results/columnar.md`` and ``results/columnar.png`` (cost
per changed row against the change size) and refreshes the README table between the
``bench:columnar`` markers.

    python benchmarks/columnar.py [--sizes 1000 10000 100000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections import Counter
from datetime import date
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
from readme import RESULTS, publish

from changeflow.compute import plan as P
from changeflow.compute.dataflow import Dataflow, update_rows
from changeflow.compute.expr import And, Arith, Cmp, Lit, lit
from changeflow.compute.operators import Inputs, build
from changeflow.compute.operators.batch import Batch
from changeflow.compute.types import DATE, INT4, INT8, NUMERIC, Column, arrow_schema
from changeflow.updates import DIFF, TIME

R = P.Get(
    "r",
    (
        Column("k", INT8),
        Column("qty", INT4),
        Column("price", NUMERIC),
        Column("disc", NUMERIC),
        Column("ship", DATE),
        Column("ship_ms", INT8),
    ),
)
D = P.Get("d", (Column("q", INT4), Column("w", NUMERIC)))
DIMENSION = pa.table(
    {
        "q": pa.array(range(1, 50), pa.int32()),
        "w": pa.array([Decimal(q).scaleb(-1) for q in range(1, 50)], pa.decimal128(38, 10)),
        TIME: pa.array([0] * 49, pa.int64()),
        DIFF: pa.array([1] * 49, pa.int64()),
    }
)
INSERTS_ONLY = ("top-k",)
DAY_MS = 86_400_000
T0 = 10_000 * DAY_MS


def col(i: int) -> Any:
    return P.col(R.schema, i)


def plans() -> dict[str, P.Plan]:
    kept = P.Filter(R, (And((Cmp("<=", col(4), lit(date(1998, 9, 2))), Cmp(">", col(1), lit(5)))),))
    revenue = Arith("*", col(2), Arith("-", lit(1), col(3)))
    mapped = P.Map(kept, (("revenue", revenue), ("q1", Arith("+", col(1), lit(1)))))
    chain = P.Project(mapped, (0, 1, 6, 7))
    ship = col(5)
    joined = P.Join((chain, D), ((1, 4),))
    weighted = P.Map(joined, (("x", Arith("*", P.col(joined.schema, 2), P.col(joined.schema, 5))),))
    return {
        "chain": chain,
        "filter": P.Filter(R, (Cmp(">", ship, Lit(T0 - 45 * DAY_MS, INT8)),)),
        "temporal": P.TemporalFilter(R, (ship,), (Arith("+", ship, Lit(90 * DAY_MS, INT8)),)),
        "reduce": P.Reduce(
            chain, (1,), (P.Aggregate("sum", P.col(chain.schema, 2)), P.Aggregate("count"))
        ),
        "join": P.Reduce(
            weighted, (1,), (P.Aggregate("sum", P.col(weighted.schema, 6)), P.Aggregate("count"))
        ),
        "distinct": P.Distinct(P.Project(R, (1, 4))),
        "top-k": P.TopK(R, (1,), (P.Order(2, False),), 3, 0),
        "left join": P.Join(
            (chain, P.Filter(D, (Cmp("<=", P.col(D.schema, 0), lit(25)),))), ((1, 4),), "left"
        ),
    }


def frame(n: int, seed: int) -> pa.Table:
    """``n`` random changes at ``T0`` (a tenth of them deletions)."""
    g = np.random.default_rng(seed)
    cents = g.integers(100, 10_000_000, n)
    columns = [
        pa.array(g.integers(0, 2**40, n), pa.int64()),
        pa.array(g.integers(1, 50, n).astype(np.int32)),
        pa.array([Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(38, 10)),
        pa.array([Decimal(int(d)).scaleb(-2) for d in g.integers(0, 11, n)], pa.decimal128(38, 10)),
        pa.array(g.integers(8000, 10600, n).astype(np.int32), pa.int32()).cast(pa.date32()),
        pa.array(T0 - g.integers(0, 120, n) * DAY_MS, pa.int64()),
        pa.array(np.full(n, T0), pa.int64()),
        pa.array(np.where(g.random(n) < 0.1, -1, 1), pa.int64()),
    ]
    return pa.Table.from_arrays(columns, names=[*(c.name for c in R.schema), TIME, DIFF])


def dimension(root: Any, sources: Inputs, columns: bool) -> None:
    """``d``'s rows in a first step (before ``T0``), where the plan reads it."""
    if "d" in sources.names():
        rows = DIMENSION.set_column(2, TIME, pa.array([T0 - 1] * 49, pa.int64()))
        sources.feed_table("d", rows) if columns else sources.feed("d", update_rows(rows))
        root.step(T0)


def by_rows(plan: P.Plan, table: pa.Table, schema: pa.Schema) -> Any:
    """The step, its operators built and ``d`` fed beforehand (not timed)."""
    sources = Inputs()
    root = build(plan, sources, at=T0 - 1)
    dimension(root, sources, False)

    def step() -> pa.Table:
        sources.feed("r", Batch.of_table(table, tuple(c.type for c in R.schema)).updates())
        return Dataflow._frame(SimpleNamespace(schema=schema), root.step(T0 + 1))  # type: ignore[arg-type]

    return step


def by_columns(plan: P.Plan, table: pa.Table, schema: pa.Schema) -> Any:
    """The step, its operators built and ``d`` fed beforehand (not timed)."""
    sources = Inputs()
    root = build(plan, sources, at=T0 - 1)
    dimension(root, sources, True)

    def step() -> pa.Table:
        sources.feed_table("r", table)
        if not root.columnar:
            return Dataflow._frame(SimpleNamespace(schema=schema), root.step(T0 + 1))  # type: ignore[arg-type]
        out = root.step_batch(T0 + 1).table(schema)
        assert out is not None
        return out

    return step


def best(prepare: Any, repeats: int) -> tuple[float, pa.Table]:
    """The fastest of ``repeats`` steps, each on freshly built operators."""
    times, out = [], None
    for _ in range(repeats):
        step = prepare()
        started = time.perf_counter()
        out = step()
        times.append(time.perf_counter() - started)
    return min(times), out


def contents(table: pa.Table) -> Counter:
    rows = Counter()
    for row in table.to_pylist():
        rows[tuple(row.values())] += 1
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    results = []
    for n in args.sizes:
        for name, plan in plans().items():
            table = frame(n, seed=n)
            if name in INSERTS_ONLY:  # a top-k refuses rows whose count goes below zero
                table = table.set_column(7, DIFF, pa.array(np.ones(n, np.int64)))
            schema = arrow_schema(plan.schema)
            rows_s, rows_out = best(
                lambda p=plan, s=schema, t=table: by_rows(p, t, s), args.repeats
            )
            cols_s, cols_out = best(
                lambda p=plan, s=schema, t=table: by_columns(p, t, s), args.repeats
            )
            same = contents(rows_out) == contents(cols_out)
            results.append(
                {
                    "plan": name,
                    "changes": n,
                    "rows_s": rows_s,
                    "columns_s": cols_s,
                    "rows_us_per_change": rows_s / n * 1e6,
                    "columns_us_per_change": cols_s / n * 1e6,
                    "same_output": same,
                }
            )
            print(results[-1], flush=True)
    publish("columnar", {"machine": platform.processor(), "results": results}, report(results))
    plot(results)


def report(results: list[dict]) -> str:
    lines = [
        "A step's cost per changed row (µs), the operators alone, rows against columns:",
        "",
        "| plan | changes | rows | columns | rows / columns | same output |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        ratio = r["rows_us_per_change"] / r["columns_us_per_change"]
        same = "ok" if r["same_output"] else "**no**"
        lines.append(
            f"| {r['plan']} | {r['changes']:,} | {r['rows_us_per_change']:.2f} | "
            f"{r['columns_us_per_change']:.2f} | {ratio:.1f}x | {same} |"
        )
    largest = max(r["changes"] for r in results)
    at = {r["plan"]: r for r in results if r["changes"] == largest}
    if "temporal" in at and "filter" in at:
        ratio = at["temporal"]["columns_s"] / at["filter"]["columns_s"]
        lines += [
            "",
            f"Temporal filter / plain filter at {largest:,} changes (columns): {ratio:.2f}x "
            f"(target at most 1.2x: {'yes' if ratio <= 1.2 else '**no**'}).",
        ]
    for name in ("reduce", "join"):
        if name in at:
            us = at[name]["columns_us_per_change"]
            lines.append(
                f"{name.capitalize()} at {largest:,} changes: {us:.2f} µs per changed row "
                f"(target at most 3 µs through a join and a reduce: "
                f"{'yes' if us <= 3 else '**no**'})."
            )
    if "chain" in at:
        us = at["chain"]["columns_us_per_change"]
        lines.append(
            f"Filter/Map/Project chain at {largest:,} changes: {us:.2f} µs per changed row "
            f"(target at most 1 µs: {'yes' if us <= 1 else '**no**'})."
        )
    return "\n".join(lines)


def plot(results: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in dict.fromkeys(r["plan"] for r in results):
        mine = [r for r in results if r["plan"] == name]
        xs = [r["changes"] for r in mine]
        (line,) = ax.plot(xs, [r["rows_us_per_change"] for r in mine], "--o", label=f"{name} rows")
        ax.plot(
            xs,
            [r["columns_us_per_change"] for r in mine],
            "-o",
            color=line.get_color(),
            label=f"{name} columns",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("changes in the step")
    ax.set_ylabel("µs per changed row")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "columnar.png", dpi=120)


if __name__ == "__main__":
    main()
