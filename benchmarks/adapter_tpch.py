"""The adapter benchmark's TPC-H case: Q1 and Q3 as SQL views against the hand-built
plans over the same shards (see ``adapter.py``)."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
from collections import Counter
from decimal import Decimal
from typing import Any

import pyarrow as pa
from adapter_common import commit_frames, open_home, shard_of
from tpch import (
    TABLES,
    duck_apply,
    duck_tables,
    generate,
    load,
    output_rows,
    plans,
    refreshes,
    same_rows,
    say,
    timed,
)
from tpch import sql as duck_sql

import changeflow
from changeflow.adapter.connection import Connection
from changeflow.compute import plan as P
from changeflow.compute.dataflow import Dataflow, maintain_view
from changeflow.compute.evaluate import evaluate

# -- TPC-H views in SQL ---------------------------------------------------------------------------

Q1_CUTOFF = "DATE '1998-12-01' - INTERVAL '90' DAY"
Q1_CUTOFF_LITERAL = "DATE '1998-09-02'"


def q1_sql(cutoff: str) -> str:
    return f"""
        SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
            sum(l_extendedprice) AS sum_base_price,
            sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
            sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
            avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price,
            avg(l_discount) AS avg_disc, count(*) AS count_order
        FROM lineitem WHERE l_shipdate <= {cutoff}
        GROUP BY l_returnflag, l_linestatus"""


Q3_FROM_COMMA = """FROM customer, orders, lineitem
    WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey
        AND"""
Q3_FROM_JOIN = """FROM customer JOIN orders ON c_custkey = o_custkey
        JOIN lineitem ON l_orderkey = o_orderkey
    WHERE c_mktsegment = 'BUILDING' AND"""


def q3_sql(joins: str) -> str:
    return f"""
    SELECT l_orderkey, o_orderdate, o_shippriority,
        sum(l_extendedprice * (1 - l_discount)) AS revenue
    {joins} o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'
    GROUP BY l_orderkey, o_orderdate, o_shippriority
    ORDER BY revenue DESC, o_orderdate, l_orderkey LIMIT 10"""


def cross_joins(conn: Connection, query: str) -> list[str]:
    """The joins without equalities in the plan of ``query`` (from EXPLAIN)."""
    lines = [r[0] for r in conn.execute(f"EXPLAIN {query}").fetchall()]
    return [line.strip() for line in lines if line.strip() == "Join inner"]


def sql_type(t: pa.DataType) -> str:
    """The SQL column type of a TPC-H Parquet column."""
    if pa.types.is_decimal(t):
        return f"numeric({t.precision}, {t.scale})"
    names = {pa.int64(): "bigint", pa.int32(): "integer", pa.date32(): "date", pa.string(): "text"}
    return names[t]


def renamed(plan: P.Plan, names: dict[str, str]) -> P.Plan:
    """``plan`` with its Get operators reading ``names[name]`` instead."""
    if isinstance(plan, P.Get):
        return dataclasses.replace(plan, name=names[plan.name])
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(plan):
        if not f.init:
            continue
        value = getattr(plan, f.name)
        if isinstance(value, P.Plan):
            changes[f.name] = renamed(value, names)
        elif isinstance(value, tuple) and value and all(isinstance(v, P.Plan) for v in value):
            changes[f.name] = tuple(renamed(v, names) for v in value)
    return dataclasses.replace(plan, **changes)


# the places numerics are compared at: a view's avg has PostgreSQL's (16 significant digits:
# 12 places for these sums' averages), the hand-built plans' ``evaluate`` keeps 40 digits
NUMERIC_PLACES = Decimal("1e-10")


def multiset(rows: Any) -> Counter:
    """Rows as a multiset; floats to 9 significant digits, numerics to
    :data:`NUMERIC_PLACES`."""

    def plain(v: Any) -> Any:
        if isinstance(v, float):
            return float(f"{v:.9g}")
        return v.quantize(NUMERIC_PLACES) if isinstance(v, Decimal) else v

    return Counter(tuple(plain(v) for v in row) for row in rows)


def compare(got: Counter, want: Counter) -> str:
    if got == want:
        return "equal"
    extra, missing = got - want, want - got
    return f"differ: {sum(extra.values())} extra, {sum(missing.values())} missing " + (
        f"(e.g. {next(iter(extra or missing))})"
    )


def counted_rows(counted: dict[tuple, int]) -> list[tuple]:
    return [row for row, c in counted.items() for _ in range(c)]


def tpch(args: argparse.Namespace) -> dict:
    """Q1 and Q3 in SQL against the hand-built plans of compute.py, on the same shards."""
    tables = load(generate(args.scale, args.cache))
    steps = refreshes(tables, args.tpch_steps, seed=11)
    home, config = open_home(args.work, "tpch", None)
    conn = changeflow.connect(config=config, host_seconds=0)
    env = conn.env
    out: dict[str, Any] = {"scale": args.scale, "rows": {n: t.num_rows for n, t in tables.items()}}
    for name, table in tables.items():
        columns = ", ".join(f"{f.name} {sql_type(f.type)} NOT NULL" for f in table.schema)
        conn.execute(f"CREATE TABLE {name} ({columns})")
    out["load_s"], _ = timed(lambda: commit_frames(conn, [(n, t, 1) for n, t in tables.items()]))
    shards = {n: shard_of(conn, n) for n in tables}
    out["first_read_s"], _ = timed(lambda: conn.execute("SELECT count(*) FROM lineitem"))
    say(f"tpch SF {args.scale:g}: " + ", ".join(f"{n} {r:,}" for n, r in out["rows"].items()))
    hand = {
        v: renamed(p, shards)
        for v, p in plans({n: env.storage.state(s).schema for n, s in shards.items()}).items()
        if v in ("q1", "q3")
    }
    try:
        conn.execute(f"SELECT count(*) FROM lineitem WHERE l_shipdate <= {Q1_CUTOFF}")
        q1_cutoff, out["date_arithmetic"] = Q1_CUTOFF, "supported"
    except changeflow.adapter.connection.Error as e:
        q1_cutoff, out["date_arithmetic"] = Q1_CUTOFF_LITERAL, f"{Q1_CUTOFF}: {e}"
        say(f"tpch: {out['date_arithmetic']}; Q1 uses {Q1_CUTOFF_LITERAL}")
    crosses = cross_joins(conn, q3_sql(Q3_FROM_COMMA))
    out["q3_comma_joins"] = (
        f"planned with {len(crosses)} cross joins (equalities left in a Filter above them): "
        "not run, the join would hold the product of the three tables; JOIN … ON is used"
        if crosses
        else "planned as equi-joins"
    )
    say(f"tpch: Q3 written FROM customer, orders, lineitem WHERE …: {out['q3_comma_joins']}")
    definitions = {
        "q1": q1_sql(q1_cutoff),
        "q3": q3_sql(Q3_FROM_COMMA if not crosses else Q3_FROM_JOIN),
    }
    flows: dict[str, tuple[Dataflow, Dataflow]] = {}
    views: dict[str, dict[str, Any]] = {}
    ts = env.oracle("EpochMilliseconds").read_ts()
    for view, query in definitions.items():
        r = views[view] = {
            "input_rows": sum(
                out["rows"][n] for n in tables if shards[n] in hand[view].collections()
            )
        }
        try:
            secs, _ = timed(
                lambda v=view, q=query: conn.execute(f"CREATE MATERIALIZED VIEW {v} AS {q}")
            )
        except changeflow.adapter.connection.Error as e:
            r["sql"] = f"not planned: {e}"
            say(f"tpch {view}: {r['sql']}")
            continue
        item = env.catalog.load().by_name(view)
        sql_flow = env.dataflow(item)
        run_s, _ = timed(lambda f=sql_flow: f.run(until=ts + 1))
        r["sql_hydration_s"] = secs + run_s
        hand_s, hand_flow = timed(lambda v=view: hydrate_hand(env, v, hand[v], ts))
        r["hand_hydration_s"] = hand_s
        flows[view] = (sql_flow, hand_flow)
        r["sql_state_rows"], r["hand_state_rows"] = sql_flow.state_size(), hand_flow.state_size()
        r["sql_plan_same_as_hand"] = sql_plan(item) == hand[view]
        r["sql_plan"] = sql_plan(item).explain().splitlines()
        r["hand_plan"] = hand[view].explain().splitlines()
        say(f"tpch {view}: hydration SQL {r['sql_hydration_s']:.2f} s, hand plan {hand_s:.2f} s")
    duck = duck_tables(tables)
    for view, (_, hand_flow) in flows.items():
        views[view]["check_hydrated"] = check_view(conn, view, hand[view], hand_flow, ts, duck)
    step_s: dict[str, dict[str, list[float]]] = {v: {"sql": [], "hand": []} for v in flows}
    apply_s: list[float] = []
    for refresh in steps:
        parts = [(n, t, 1) for n, t in refresh.inserted.items()]
        ts = commit_frames(conn, parts + [(n, t, -1) for n, t in refresh.deleted.items()])
        duck_apply(duck, refresh)
        secs, _ = timed(lambda t=ts: env.log.ready(set(shards.values()), t))
        apply_s.append(secs)
        for view, (sql_flow, hand_flow) in flows.items():
            step_s[view]["sql"].append(timed(lambda f=sql_flow, t=ts: f.run(until=t + 1))[0])
            step_s[view]["hand"].append(timed(lambda f=hand_flow, t=ts: f.run(until=t + 1))[0])
    out["apply_s"] = statistics.median(apply_s) if apply_s else None
    out["changes_per_step"] = statistics.median(s.changes() for s in steps) if steps else 0
    for view, (_, hand_flow) in flows.items():
        r = views[view]
        r["sql_step_s"] = statistics.median(step_s[view]["sql"])
        r["hand_step_s"] = statistics.median(step_s[view]["hand"])
        r["check_after_steps"] = check_view(conn, view, hand[view], hand_flow, ts, duck)
        say(
            f"tpch {view}: step SQL {r['sql_step_s'] * 1000:.0f} ms, hand "
            f"{r['hand_step_s'] * 1000:.0f} ms; {r['check_hydrated']}, {r['check_after_steps']}"
        )
        hand_flow.close()
    out["views"] = views
    duck.close()
    conn.close()
    shutil.rmtree(home, ignore_errors=True)
    return out


def hydrate_hand(env: Any, view: str, plan: P.Plan, ts: int) -> Dataflow:
    flow = maintain_view(env.storage, f"hand-{view}", plan, f"hand_{view}")
    flow.run(until=ts + 1)
    return flow


def sql_plan(item: Any) -> P.Plan:
    from changeflow.adapter.environment import decode_plan

    return decode_plan(item.options["plan"])


def has_join(plan: P.Plan) -> bool:
    return isinstance(plan, P.Join) or any(has_join(p) for p in plan.inputs())


def check_view(
    conn: Connection, view: str, plan: P.Plan, flow: Dataflow, ts: int, duck: Any
) -> dict[str, str]:
    """The SQL view's rows (a SELECT) at ``ts`` against the hand plan's dataflow output,
    against ``evaluate`` of the hand plan on the shards' snapshots (not for joins: it builds
    their full product) and against DuckDB on tables kept equal to the shards."""
    env = conn.env
    got = conn.execute(f"SELECT * FROM {view} AS OF {ts}").fetchall()
    sql_rows = multiset(got)
    out = {"rows": str(len(got))}
    out["hand_dataflow"] = compare(sql_rows, multiset(output_rows(env.storage, flow.output, ts)))
    if has_join(plan):
        out["evaluate"] = "not run (evaluate joins by the full product of the inputs)"
    else:
        inputs = {s: env.snapshot(s, ts) for s in plan.collections()}
        out["evaluate"] = compare(sql_rows, multiset(counted_rows(evaluate(plan, inputs, ts))))
    want = duck.execute(duck_sql(view, {n: n for n in TABLES}, 0)).fetchall()
    out["duckdb"] = same_rows(got, want) or "equal (floats within 1e-9)"
    return out


# -- the report -----------------------------------------------------------------------------------
