"""The adapter benchmark's SELECT cases: a GROUP BY view read as a materialized view, an
index and a plain view, and ad hoc joins (see ``adapter.py``)."""

from __future__ import annotations

import argparse
import cProfile
import shutil
import statistics
from typing import Any

import numpy as np
import pyarrow as pa
from adapter_common import commit_arrow, open_home, quantile
from adapter_tpch import multiset
from adapter_writes import copy_data
from compute import profile_top
from tpch import (
    say,
    timed,
)

import changeflow
from changeflow.adapter.connection import Connection

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
