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

Writes ``results/adapter.json`` and ``results/adapter.md`` and refreshes the README table
between the ``bench:adapter`` markers.

    python benchmarks/adapter.py [--txns 600] [--insert-rows 1000000] [--select-rows 100000]
        [--scale 0.01] [--no-postgres] [--only writes insert_select select tpch]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import multiprocessing as mp
import os
import platform
import resource
import shutil
import statistics
import tempfile
import threading
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from compute import profile_top
from peers import postgres_server
from readme import publish
from tpch import (
    TABLES,
    duck_apply,
    duck_tables,
    elapsed,
    generate,
    load,
    output_rows,
    plans,
    refreshes,
    same_rows,
    say,
    stamped,
    timed,
)
from tpch import sql as duck_sql

import changeflow
from changeflow.adapter.connection import Connection
from changeflow.adapter.session import Session
from changeflow.compute import plan as P
from changeflow.compute.dataflow import Dataflow, maintain_view
from changeflow.compute.evaluate import evaluate
from changeflow.compute.types import NUMERIC
from changeflow.config import Config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def open_home(work: Path, label: str, consensus: str | None) -> tuple[Path, Config]:
    """A fresh home under ``work`` and its configuration (SQLite consensus unless given)."""
    home = Path(tempfile.mkdtemp(prefix=f"adapter-{label}-", dir=work))
    return home, Config.load(home=str(home), consensus=consensus)


def shard_of(conn: Connection, name: str) -> str:
    item = conn.env.catalog.load().by_name(name)
    assert item is not None, name
    return item.id


def commit_arrow(conn: Connection, table: str, data: pa.Table, diff: int = 1) -> int:
    """Append ``data`` (the table's columns) to SQL table ``table`` through the write log."""
    return commit_frames(conn, [(table, data, diff)])


def commit_frames(conn: Connection, parts: list[tuple[str, pa.Table, int]]) -> int:
    """One atomic commit of tables' rows (each part with its diff); its timestamp."""
    from changeflow.storage.frames import to_frame

    frames: dict[str, list[pa.Table]] = {}
    for table, data, diff in parts:
        shard = shard_of(conn, table)
        schema = conn.env.storage.state(shard).schema
        frame = to_frame(stamped(data, 0, diff), schema, shard)
        frames.setdefault(shard, []).append(frame)
    return conn.env.committer.commit({s: pa.concat_tables(f) for s, f in frames.items()})


# -- writes ---------------------------------------------------------------------------------------

WRITE_TABLE = "CREATE TABLE w (id bigint NOT NULL, note text)"


def insert_rows(session: Session, first: int, count: int) -> tuple[float, list[float], list[float]]:
    """``count`` single-row INSERTs: the start, each one's end (wall clock) and latencies."""
    latencies, ends = [], []
    start = time.time()
    for i in range(first, first + count):
        began = time.perf_counter()
        session.execute(f"INSERT INTO w VALUES ({i}, 'row {i}')")
        latencies.append(time.perf_counter() - began)
        ends.append(time.time())
    return start, ends, latencies


def _process_writer(config: Config, first: int, count: int, barrier: Any, queue: Any) -> None:
    """One of the 4 writer processes: its own connection to the home, INSERTs after the
    barrier; puts its start, ends, latencies and log entries on ``queue``."""
    conn = changeflow.connect(config=config, host_seconds=0)
    try:
        insert_rows(conn.session, first + 10_000_000, 5)  # warm-up, not counted
        before = conn.env.committer.entries
        barrier.wait()
        start, end, latencies = insert_rows(conn.session, first, count)
        queue.put((start, end, latencies, conn.env.committer.entries - before))
    finally:
        conn.close()


def write_case(
    work: Path, consensus: str | None, label: str, mode: str, txns: int, profile: bool
) -> dict:
    """One write case: ``mode`` is one, threads, processes or host (one session, host on)."""
    home, config = open_home(work, f"writes-{label}-{mode}", consensus)
    conn = changeflow.connect(config=config, host_seconds=1.0 if mode == "host" else 0)
    conn.execute(WRITE_TABLE)
    warm = 5
    insert_rows(conn.session, 10_000_000, warm)
    before = conn.env.committer.entries
    runs: list[tuple[float, list[float], list[float]]] = []
    entries = 0
    if mode in ("one", "host"):
        runs.append(insert_rows(conn.session, 0, txns))
        entries = conn.env.committer.entries - before
    elif mode == "threads":
        per = txns // 4
        sessions = [Session(conn.env) for _ in range(4)]
        barrier = threading.Barrier(4)
        out: list[Any] = [None] * 4

        def work_(k: int) -> None:
            barrier.wait()
            out[k] = insert_rows(sessions[k], k * per, per)

        threads = [threading.Thread(target=work_, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        runs = out
        entries = conn.env.committer.entries - before
    else:
        per = txns // 4
        ctx = mp.get_context("spawn")
        barrier, queue = ctx.Barrier(4), ctx.Queue()
        procs = [
            ctx.Process(target=_process_writer, args=(config, k * per, per, barrier, queue))
            for k in range(4)
        ]
        for p in procs:
            p.start()
        results = [queue.get(timeout=600) for _ in procs]
        for p in procs:
            p.join()
        runs = [r[:3] for r in results]
        entries = sum(r[3] for r in results)
    latencies = [x for r in runs for x in r[2]]
    done = len(latencies)
    seconds = max(r[1][-1] for r in runs) - min(r[0] for r in runs)
    tenth = max(1, done // 10)
    read_s, rows = timed(lambda: conn.execute("SELECT count(*) FROM w").fetchall())
    expected = done + warm * (5 if mode == "processes" else 1)
    prof = None
    if profile:  # a separate, shorter run: the profiler slows what it measures
        prof = cProfile.Profile()
        prof.enable()
        insert_rows(conn.session, 20_000_000, max(20, txns // 4))
        prof.disable()
    result = {
        "consensus": label,
        "mode": mode,
        "txns": done,
        "seconds": seconds,
        "txns_per_s": done / seconds,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": quantile(latencies, 0.99) * 1000,
        "max_ms": max(latencies) * 1000,
        "entries_per_txn": entries / done,
        "first_read_s": read_s,
        "check": "ok" if rows[0][0] == expected else f"{rows[0][0]} rows, {expected} expected",
    }
    if mode in ("one", "host"):
        start, ends, _ = runs[0]
        result["first_tenth_per_s"] = tenth / (ends[tenth - 1] - start)
        result["last_tenth_per_s"] = tenth / (ends[-1] - ends[-tenth - 1])
    if prof:
        result["profile"] = profile_top(prof)
    conn.close()
    shutil.rmtree(home, ignore_errors=True)
    say(
        f"writes {label} {mode}: {result['txns_per_s']:.0f} txns/s, p50 "
        f"{result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, "
        f"{result['entries_per_txn']:.2f} entries/txn, first read {read_s:.2f} s "
        f"({result['check']})"
    )
    return result


def writes(args: argparse.Namespace) -> list[dict]:
    """Every write case on SQLite consensus, then on PostgreSQL consensus if a server starts."""
    out = []
    for mode in ("one", "threads", "processes", "host"):
        out.append(write_case(args.work, None, "sqlite", mode, args.txns, profile=mode == "one"))
    if args.postgres:
        with postgres_server(say) as url:
            if url is None:
                out.append({"consensus": "postgres", "skipped": "no server could be started"})
            else:
                from postgres_server import create_database

                for mode in ("one", "threads", "processes"):
                    db = create_database(url, f"bench_adapter_{mode}")
                    out.append(write_case(args.work, db, "postgres", mode, args.txns, False))
    return out


# -- INSERT … SELECT ------------------------------------------------------------------------------

COPY_COLUMNS = "(id bigint NOT NULL, grp integer NOT NULL, amount double precision, name text)"


def copy_data(rows: int, seed: int = 7) -> pa.Table:
    """``rows`` distinct rows: ids in order, 1,000 groups, random amounts, 1,000 names."""
    rng = np.random.default_rng(seed)
    names = np.array([f"name {i}" for i in range(1000)], dtype=object)
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "grp": pa.array(rng.integers(0, 1000, rows).astype(np.int32)),
            "amount": pa.array(rng.random(rows)),
            "name": pa.array(names[np.arange(rows) % 1000].tolist(), pa.string()),
        }
    )


def _insert_select_child(work: str, rows: int, profile: bool, queue: Any) -> None:
    """The case in a child process (so that its peak RSS is the case's own)."""
    home, config = open_home(Path(work), f"copy-{rows}", None)
    conn = changeflow.connect(config=config, host_seconds=0)
    try:
        conn.execute(f"CREATE TABLE src {COPY_COLUMNS}")
        conn.execute(f"CREATE TABLE dst {COPY_COLUMNS}")
        fill_s, _ = timed(lambda: commit_arrow(conn, "src", copy_data(rows)))
        ready_s, _ = timed(lambda: conn.execute("SELECT count(*) FROM src").fetchall())
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        prof = cProfile.Profile() if profile else None
        if prof:
            prof.enable()
        insert_s, _ = timed(lambda: conn.execute("INSERT INTO dst SELECT * FROM src"))
        if prof:
            prof.disable()
        rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        read_s, got = timed(lambda: conn.execute("SELECT count(*), sum(id) FROM dst").fetchall()[0])
        want = (rows, rows * (rows - 1) // 2)
        queue.put(
            {
                "rows": rows,
                "fill_s": fill_s,
                "src_first_read_s": ready_s,
                "insert_select_s": insert_s,
                "rows_per_s": rows / insert_s,
                "rss_before_mb": rss_before,
                "rss_peak_mb": rss_peak,
                "dst_first_read_s": read_s,
                "check": "ok" if tuple(got) == want else f"count, sum {got}, expected {want}",
                **({"profile": profile_top(prof)} if prof else {}),
            }
        )
    finally:
        conn.close()
        shutil.rmtree(home, ignore_errors=True)


def insert_select(args: argparse.Namespace, rows: int, profile: bool = False) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_insert_select_child, args=(str(args.work), rows, profile, queue))
    child.start()
    try:
        result = queue.get(timeout=1800)
    finally:
        child.join()
    say(
        f"insert-select {rows:,}{' (profiled)' if profile else ''}: "
        f"{result['insert_select_s']:.1f} s, {result['rows_per_s']:,.0f} rows/s, peak RSS "
        f"{result['rss_peak_mb']:,.0f} MB (before {result['rss_before_mb']:,.0f} MB); "
        f"dst first read {result['dst_first_read_s']:.1f} s ({result['check']})"
    )
    return result


# -- SELECT latency -------------------------------------------------------------------------------

SELECT_VIEW = "SELECT grp, count(*) AS n, sum(amount) AS total FROM events GROUP BY grp"
SELECT_KINDS = ("materialized view", "index on a view", "plain view")
SELECT_NAMES = dict(zip(SELECT_KINDS, ("v_mat", "v_idx", "v_plain"), strict=True))


def selects(args: argparse.Namespace) -> dict:
    """SELECT of one group from each kind, interleaved: warm, then each after an INSERT."""
    home, config = open_home(args.work, "select", None)
    conn = changeflow.connect(config=config, host_seconds=0)
    rows = args.select_rows
    conn.execute("CREATE TABLE events (id bigint NOT NULL, grp integer NOT NULL, amount float8)")
    data = copy_data(rows).select(["id", "grp", "amount"])
    commit_arrow(conn, "events", data)
    out: dict[str, Any] = {"rows": rows, "groups": 1000, "queries": args.queries}
    out["create_s"] = {}
    for kind, ddl in (
        ("plain view", f"CREATE VIEW v_plain AS {SELECT_VIEW}"),
        ("materialized view", f"CREATE MATERIALIZED VIEW v_mat AS {SELECT_VIEW}"),
        ("index on a view", f"CREATE VIEW v_idx AS {SELECT_VIEW}; CREATE INDEX ON v_idx (grp)"),
    ):
        out["create_s"][kind] = timed(lambda d=ddl: conn.execute(d))[0]
    for kind in SELECT_KINDS:  # the first read hydrates the dataflows
        secs, _ = timed(lambda k=kind: conn.execute(f"SELECT count(*) FROM {SELECT_NAMES[k]}"))
        out["create_s"][kind] += secs
    say(
        "select: "
        + ", ".join(f"{k} created and read in {s:.1f} s" for k, s in out["create_s"].items())
    )
    rng = np.random.default_rng(3)
    next_id = rows
    mismatches: list[str] = []
    for mode in ("warm", "fresh"):
        spent: dict[str, list[float]] = {k: [] for k in SELECT_KINDS}
        for _ in range(args.queries):
            group = int(rng.integers(0, 1000))
            answers = []
            for kind in SELECT_KINDS:
                if mode == "fresh":
                    conn.execute(f"INSERT INTO events VALUES ({next_id}, {group}, 0.5)")
                    next_id += 1
                sql = f"SELECT n, total FROM {SELECT_NAMES[kind]} WHERE grp = {group}"
                secs, got = timed(lambda q=sql: conn.execute(q).fetchall())
                spent[kind].append(secs)
                answers.append(got)
            if mode == "warm" and not (
                multiset(answers[0]) == multiset(answers[1]) == multiset(answers[2])
            ):
                mismatches.append(f"group {group}: {answers}")
        out[mode] = {
            k: {
                "p50_ms": statistics.median(v) * 1000,
                "p99_ms": quantile(v, 0.99) * 1000,
            }
            for k, v in spent.items()
        }
        say(
            f"select {mode}: "
            + ", ".join(f"{k} p50 {r['p50_ms']:.1f} ms" for k, r in out[mode].items())
        )
    out["check"] = (
        "ok (floats to 9 significant digits)"
        if not mismatches
        else f"{len(mismatches)} answered differently, e.g. {mismatches[0]}"
    )
    prof = cProfile.Profile()
    prof.enable()
    conn.execute("SELECT n, total FROM v_plain WHERE grp = 1").fetchall()
    prof.disable()
    out["plain_view_profile"] = profile_top(prof)
    prof = cProfile.Profile()
    conn.execute("INSERT INTO events VALUES (-1, 1, 0.5)")
    prof.enable()
    conn.execute("SELECT n, total FROM v_mat WHERE grp = 1").fetchall()
    prof.disable()
    out["fresh_materialized_profile"] = profile_top(prof)
    out["adhoc_join"] = adhoc_join(conn, args.join_rows)
    if args.join_rows:
        n = args.join_rows[0]
        prof = cProfile.Profile()
        prof.enable()
        conn.execute(f"SELECT count(*) FROM ja_{n} a JOIN jb_{n} b ON a.k = b.k").fetchall()
        prof.disable()
        out["adhoc_join_profile"] = profile_top(prof)
    conn.close()
    shutil.rmtree(home, ignore_errors=True)
    return out


def adhoc_join(conn: Connection, sizes: list[int]) -> list[dict]:
    """``SELECT count(*)`` of an equi-join of two ``n``-row tables (one match a row), run ad
    hoc (no view), at each size: how the adapter's query evaluation grows with its input."""
    out = []
    for n in sizes:
        keys = pa.array(np.arange(n, dtype=np.int64))
        for side in ("ja", "jb"):
            conn.execute(f"CREATE TABLE {side}_{n} (k bigint, v bigint)")
            commit_arrow(conn, f"{side}_{n}", pa.table({"k": keys, "v": keys}))
        conn.execute(f"SELECT count(*) FROM ja_{n}; SELECT count(*) FROM jb_{n}")
        query = f"SELECT count(*) FROM ja_{n} a JOIN jb_{n} b ON a.k = b.k"
        secs, got = timed(lambda q=query: conn.execute(q).fetchall())
        out.append({"rows": n, "seconds": secs, "check": "ok" if got == [(n,)] else str(got)})
        say(f"ad hoc join of two {n:,}-row tables: {secs:.2f} s ({out[-1]['check']})")
    return out


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


NUMERIC_PLACES = Decimal(1).scaleb(-NUMERIC.arrow.scale)


def multiset(rows: Any) -> Counter:
    """Rows as a multiset; floats to 9 significant digits, numerics at storage's scale (a
    stored view's numerics have 10 places, ``evaluate`` keeps every digit)."""

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

MODES = {
    "one": "1 session",
    "threads": "4 sessions (threads)",
    "processes": "4 processes",
    "host": "1 session, host thread on",
}


def _f(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(results: dict) -> str:
    lines: list[str] = []
    writes_ = results.get("writes") or []
    if writes_:
        lines += [
            "Single-row INSERT transactions (autocommit; log entries per txn below 1 is group "
            "commit; the first read applies the pending log entries):",
            "",
            "| consensus | writers | txns | txns/s | vs 1 session | p50 ms | p99 ms | max ms "
            "| log entries/txn | first / last tenth txns/s | first read after | rows |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        base = {r["consensus"]: r["txns_per_s"] for r in writes_ if r.get("mode") == "one"}
        for r in writes_:
            if "skipped" in r:
                lines.append(f"| {r['consensus']} | skipped: {r['skipped']} ||||||||||||")
                continue
            tenths = (
                f"{r['first_tenth_per_s']:.0f} / {r['last_tenth_per_s']:.0f}"
                if "first_tenth_per_s" in r
                else "-"
            )
            ratio = r["txns_per_s"] / base[r["consensus"]] if r["consensus"] in base else None
            lines.append(
                f"| {r['consensus']} | {MODES[r['mode']]} | {r['txns']} | {r['txns_per_s']:.0f} | "
                f"{_f(ratio, '.2f')}x | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                f"{r['max_ms']:.0f} | "
                f"{r['entries_per_txn']:.2f} | {tenths} | {r['first_read_s']:.2f} s | "
                f"{r['check']} |"
            )
    copy = results.get("insert_select")
    if copy:
        lines += [
            "",
            "`INSERT INTO dst SELECT * FROM src` (src filled with one Arrow frame through the "
            "write log; a child process, so peak RSS is its own):",
            "",
            "| rows | fill src | first read of src | INSERT … SELECT | rows/s | RSS before "
            "| peak RSS | first read of dst | count, sum(id) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in copy:
            lines.append(
                f"| {r['rows']:,} | {r['fill_s']:.1f} s | {r['src_first_read_s']:.1f} s | "
                f"{r['insert_select_s']:.1f} s | {r['rows_per_s']:,.0f} | "
                f"{r['rss_before_mb']:,.0f} MB | {r['rss_peak_mb']:,.0f} MB | "
                f"{r['dst_first_read_s']:.1f} s | {r['check']} |"
            )
    sel = results.get("select")
    if sel:
        plain = sel["warm"]["plain view"]["p50_ms"]
        lines += [
            "",
            f"SELECT of one group from `{SELECT_VIEW}` over {sel['rows']:,} rows "
            f"({sel['groups']:,} groups; {sel['queries']} queries each, interleaved; fresh: "
            "one INSERT into events before each query):",
            "",
            "| read from | created + hydrated | warm p50 | warm p99 | plain view / this "
            "| fresh p50 | fresh p99 |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for kind in SELECT_KINDS:
            w, f = sel["warm"][kind], sel["fresh"][kind]
            lines.append(
                f"| {kind} | {sel['create_s'][kind]:.1f} s | {w['p50_ms']:.1f} ms | "
                f"{w['p99_ms']:.1f} ms | {plain / w['p50_ms']:.1f}x | {f['p50_ms']:.1f} ms | "
                f"{f['p99_ms']:.1f} ms |"
            )
        lines.append(f"\nThe three answered alike: {sel['check']}.")
        if sel.get("adhoc_join"):
            first = sel["adhoc_join"][0]
            lines += [
                "",
                "An ad hoc `SELECT count(*) FROM a JOIN b ON a.k = b.k` of two n-row tables "
                "(one match a row):",
                "",
                "| n | seconds | vs the smallest n | rows |",
                "|---:|---:|---:|---|",
            ]
            for j in sel["adhoc_join"]:
                lines.append(
                    f"| {j['rows']:,} | {j['seconds']:.2f} | "
                    f"{j['seconds'] / first['seconds']:.1f}x | {j['check']} |"
                )
    tp = results.get("tpch")
    if tp:
        lines += [
            "",
            f"TPC-H at SF {tp['scale']:g} as SQL materialized views against the hand-built "
            f"plans of `compute.py` on the same shards (Python dataflows; refresh steps insert "
            f"and delete 0.1% of the orders with their lineitems, {tp['changes_per_step']:,.0f} "
            f"changes, applied in {_f(tp['apply_s'], '.3f')} s median; DATE arithmetic: "
            f"{tp['date_arithmetic']}):",
            "",
            "| view | input rows | SQL hydration | hand hydration | SQL / hand | SQL step "
            "| hand step | SQL / hand | rows held SQL / hand | same plan |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        checks = []
        for view, r in tp["views"].items():
            if "sql_hydration_s" not in r:
                lines.append(f"| {view} | {r['input_rows']:,} | {r.get('sql')} ||||||||")
                continue
            lines.append(
                f"| {view} | {r['input_rows']:,} | {r['sql_hydration_s']:.2f} s | "
                f"{r['hand_hydration_s']:.2f} s | "
                f"{r['sql_hydration_s'] / r['hand_hydration_s']:.2f}x | "
                f"{r['sql_step_s'] * 1000:.0f} ms | {r['hand_step_s'] * 1000:.0f} ms | "
                f"{r['sql_step_s'] / r['hand_step_s']:.2f}x | "
                f"{r['sql_state_rows']:,} / {r['hand_state_rows']:,} | "
                f"{'yes' if r['sql_plan_same_as_hand'] else 'no'} |"
            )
            for when, key in (
                ("hydrated", "check_hydrated"),
                ("after the steps", "check_after_steps"),
            ):
                c = r[key]
                checks.append(
                    f"| {view} | {when} | {c['rows']} | {c['hand_dataflow']} | {c['evaluate']} "
                    f"| {c['duckdb']} |"
                )
        lines += [
            "",
            "The SQL view's rows (SELECT) against the hand plan:",
            "",
            "| view | when | rows | hand plan's dataflow | evaluate(hand plan) | DuckDB |",
            "|---|---|---:|---|---|---|",
            *checks,
            "",
            f"Q3 written `FROM customer, orders, lineitem WHERE …`: {tp['q3_comma_joins']}.",
        ]
    profiles = [
        (f"one session's INSERTs ({r['consensus']})", r["profile"])
        for r in writes_
        if "profile" in r
    ]
    profiles += [
        (f"INSERT … SELECT of {r['rows']:,} rows", r["profile"])
        for r in copy or []
        if "profile" in r
    ]
    if sel:
        profiles += [
            ("SELECT from the plain view", sel["plain_view_profile"]),
            (
                "SELECT from the materialized view after an INSERT",
                sel["fresh_materialized_profile"],
            ),
        ]
        if "adhoc_join_profile" in sel:
            n = sel["adhoc_join"][0]["rows"]
            profiles.append((f"the ad hoc join of two {n:,}-row tables", sel["adhoc_join_profile"]))
    if profiles:
        lines += ["", "Where the time goes (cProfile, own time of the top functions):", ""]
        for what, p in profiles:
            top = ", ".join(f"{t['function']} {t['share']:.0%}" for t in p["top"][:4])
            lines.append(f"- {what} ({p['total_s']:.2f} s profiled): {top}")
    return "\n".join(lines)


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
