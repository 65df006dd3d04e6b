"""The adapter benchmark's write cases: single-row INSERTs from sessions, threads and
processes, and INSERT … SELECT (see ``adapter.py``)."""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing as mp
import resource
import shutil
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from adapter_common import commit_arrow, open_home, quantile
from compute import profile_top
from peers import postgres_server
from tpch import (
    say,
    timed,
)

import changeflow
from changeflow.adapter.session import Session
from changeflow.config import Config

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
