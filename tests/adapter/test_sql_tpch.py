"""TPC-H Q1 and Q3 written in SQL give the rows of the hand-built plans of
``benchmarks/compute.py``, on small random TPC-H-shaped data, after hydration and after a
refresh step; DuckDB running the same SQL agrees."""

from __future__ import annotations

import sys
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import changeflow
from changeflow.compute.evaluate import evaluate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from adapter_common import commit_frames, shard_of  # noqa: E402
from adapter_tpch import (  # noqa: E402
    Q1_CUTOFF_LITERAL,
    Q3_FROM_JOIN,
    multiset,
    q1_sql,
    q3_sql,
    renamed,
    sql_type,
)
from tpch import duck_apply, duck_tables, plans, refreshes, same_rows  # noqa: E402
from tpch import sql as duck_sql  # noqa: E402


def tpch_like(seed: int, orders: int = 120) -> dict[str, pa.Table]:
    """customer, orders and lineitem with the columns and types of compute.py's, lineitem
    ordered by orderkey; dates straddle the views' cut-offs."""
    rng = np.random.default_rng(seed)
    customers = 20
    segments = np.array(["BUILDING", "MACHINERY", "AUTOMOBILE"], dtype=object)
    first = date(1994, 6, 1)

    def dates(n: int) -> pa.Array:
        return pa.array([first + timedelta(days=int(d)) for d in rng.integers(0, 1600, n)])

    def money(n: int, low: int, high: int) -> pa.Array:
        cents = rng.integers(low, high, n)
        return pa.array([Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(15, 2))

    per_order = rng.integers(1, 5, orders)
    keys = np.repeat(np.arange(1, orders + 1, dtype=np.int64), per_order)
    n = len(keys)
    return {
        "customer": pa.table(
            {
                "c_custkey": pa.array(np.arange(1, customers + 1, dtype=np.int64)),
                "c_mktsegment": pa.array(segments[rng.integers(0, 3, customers)].tolist()),
            }
        ),
        "orders": pa.table(
            {
                "o_orderkey": pa.array(np.arange(1, orders + 1, dtype=np.int64)),
                "o_custkey": pa.array(rng.integers(1, customers + 1, orders).astype(np.int64)),
                "o_orderdate": dates(orders),
                "o_shippriority": pa.array(np.zeros(orders, np.int32)),
            }
        ),
        "lineitem": pa.table(
            {
                "l_orderkey": pa.array(keys),
                "l_linenumber": pa.array(
                    np.concatenate([np.arange(1, k + 1) for k in per_order]).astype(np.int32)
                ),
                "l_quantity": money(n, 100, 5000),
                "l_extendedprice": money(n, 1000, 10_000_000),
                "l_discount": money(n, 0, 11),
                "l_tax": money(n, 0, 9),
                "l_returnflag": pa.array(np.array(["A", "N", "R"])[rng.integers(0, 3, n)]),
                "l_linestatus": pa.array(np.array(["F", "O"])[rng.integers(0, 2, n)]),
                "l_shipdate": dates(n),
            }
        ),
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_q1_and_q3_in_sql_equal_the_hand_built_plans(tmp_path: Path, seed: int) -> None:
    tables = tpch_like(seed)
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    duck = duck_tables(tables)
    try:
        for name, table in tables.items():
            columns = ", ".join(f"{f.name} {sql_type(f.type)} NOT NULL" for f in table.schema)
            conn.execute(f"CREATE TABLE {name} ({columns})")
        commit_frames(conn, [(n, t, 1) for n, t in tables.items()])
        shards = {n: shard_of(conn, n) for n in tables}
        schemas = {n: conn.env.storage.state(s).schema for n, s in shards.items()}
        hand = {v: renamed(p, shards) for v, p in plans(schemas).items() if v in ("q1", "q3")}
        for view, query in (("q1", q1_sql(Q1_CUTOFF_LITERAL)), ("q3", q3_sql(Q3_FROM_JOIN))):
            conn.execute(f"CREATE MATERIALIZED VIEW {view} AS {query}")
        (step,) = refreshes(tables, 1, seed=seed)
        for when in ("hydrated", "after a refresh step"):
            if when != "hydrated":
                parts = [(n, t, 1) for n, t in step.inserted.items()]
                commit_frames(conn, parts + [(n, t, -1) for n, t in step.deleted.items()])
                duck_apply(duck, step)
            ts = conn.env.oracle("EpochMilliseconds").read_ts()
            for view, plan in hand.items():
                got = conn.execute(f"SELECT * FROM {view} AS OF {ts}").fetchall()
                inputs = {s: conn.env.snapshot(s, ts) for s in plan.collections()}
                want = [r for r, c in evaluate(plan, inputs, ts).items() for _ in range(c)]
                assert got, (view, when)
                assert multiset(got) == multiset(want), (view, when)
                expected = duck.execute(duck_sql(view, {n: n for n in tables}, 0)).fetchall()
                assert same_rows(got, expected) is None, (view, when)
    finally:
        duck.close()
        conn.close()
