"""Benchmark: ad hoc SELECTs over a million rows, changeflow against PostgreSQL 15 and DuckDB.

Two tables, ``big`` (``--rows`` rows: ``k bigint, g int`` (100 groups and NULLs), ``v bigint,
n numeric(12,2)``) and ``small`` (``--small-rows`` rows: ``k bigint, name text``), the same
rows in a changeflow home (committed as Arrow frames through the write log), a throwaway
PostgreSQL 15 server (``tests/postgres_server.py``, loaded with COPY, then ANALYZE) and DuckDB
(in memory). Queries, no view maintaining them:

- count: ``SELECT count(*) FROM big``;
- group: ``SELECT g, count(*), sum(v), avg(n) FROM big GROUP BY g``;
- join: ``SELECT count(*), sum(s.k) FROM big b JOIN small s ON b.k = s.k``.

Each is run once to warm up, then timed (best of ``--repeats``), answers compared across the
three. Target: each within 3x of PostgreSQL, with no Spark session started (checked).

Writes ``results/adhoc.json`` and ``results/adhoc.md`` and refreshes the README table between
the ``bench:adhoc`` markers.

    python benchmarks/adhoc.py [--rows 1000000] [--small-rows 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import io
import math
import platform
import shutil
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
from adapter_common import commit_arrow
from peers import postgres_server
from readme import publish

import changeflow

QUERIES = {
    "count": "SELECT count(*) FROM big",
    "group": "SELECT g, count(*), sum(v), avg(n) FROM big GROUP BY g",
    "join": "SELECT count(*), sum(s.k) FROM big b JOIN small s ON b.k = s.k",
}


def data(rows: int, small_rows: int) -> dict[str, pa.Table]:
    g = np.random.default_rng(21)
    groups = g.integers(0, 100, rows).astype(np.int32)
    big = pa.table(
        {
            "k": pa.array(g.integers(0, small_rows * 2, rows), pa.int64()),
            "g": pa.array(groups, mask=g.random(rows) < 0.01),
            "v": pa.array(g.integers(-(10**12), 10**12, rows), pa.int64()),
            "n": pa.array(
                [Decimal(int(c)).scaleb(-2) for c in g.integers(0, 10**8, rows)],
                pa.decimal128(12, 2),
            ),
        }
    )
    small = pa.table(
        {
            "k": pa.array(np.arange(small_rows), pa.int64()),
            "name": pa.array([f"n{i % 1000}" for i in range(small_rows)]),
        }
    )
    return {"big": big, "small": small}


DDL = {
    "big": "CREATE TABLE big (k bigint, g int, v bigint, n numeric(12,2))",
    "small": "CREATE TABLE small (k bigint, name text)",
}


def best(fn: Any, repeats: int) -> tuple[float, Any]:
    fn()  # warm-up
    times, out = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
    return min(times), out


def canonical(rows: list[tuple]) -> list[tuple]:
    """Rows comparable across engines (numbers as rounded floats)."""

    def one(v: Any) -> Any:
        if isinstance(v, float | Decimal):
            return round(float(v), 4)
        return v

    return sorted((tuple(one(v) for v in r) for r in rows), key=str)


def same(a: list[tuple], b: list[tuple]) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(canonical(a), canonical(b), strict=True):
        for x, y in zip(ra, rb, strict=True):
            if isinstance(x, float) and isinstance(y, float):
                if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-3):
                    return False
            elif x != y:
                return False
    return True


def run_changeflow(tables: dict[str, pa.Table], repeats: int) -> tuple[dict, dict, bool]:
    from pyspark import SparkContext

    home = Path(tempfile.mkdtemp(prefix="adhoc-"))
    conn = changeflow.connect(home / "home", host_seconds=0)
    try:
        for name, table in tables.items():
            conn.execute(DDL[name])
            commit_arrow(conn, name, table)
        times, answers = {}, {}
        for name, sql in QUERIES.items():
            times[name], answers[name] = best(lambda q=sql: conn.execute(q).fetchall(), repeats)
            print(f"changeflow {name}: {times[name]:.3f} s", flush=True)
        started_spark = SparkContext._active_spark_context is not None
    finally:
        conn.close()
        shutil.rmtree(home, ignore_errors=True)
    return times, answers, started_spark


def run_postgres(tables: dict[str, pa.Table], repeats: int) -> tuple[dict, dict] | None:
    import psycopg

    with postgres_server() as url:
        if url is None:
            return None
        with psycopg.connect(url, autocommit=True) as pg:
            for name, table in tables.items():
                pg.execute(DDL[name])
                buffer = io.BytesIO()
                pcsv.write_csv(table, buffer, pcsv.WriteOptions(include_header=False))
                with pg.cursor().copy(f"COPY {name} FROM STDIN (FORMAT csv)") as copy:
                    copy.write(buffer.getvalue())
                pg.execute(f"ANALYZE {name}")
            times, answers = {}, {}
            for name, sql in QUERIES.items():
                times[name], answers[name] = best(lambda q=sql: pg.execute(q).fetchall(), repeats)
                print(f"postgres {name}: {times[name]:.3f} s", flush=True)
    return times, answers


def run_duckdb(tables: dict[str, pa.Table], repeats: int) -> tuple[dict, dict]:
    db = duckdb.connect()
    for name, table in tables.items():
        db.register(f"{name}_arrow", table)
        db.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    times, answers = {}, {}
    for name, sql in QUERIES.items():
        times[name], answers[name] = best(lambda q=sql: db.execute(q).fetchall(), repeats)
    return times, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small-rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tables = data(args.rows, args.small_rows)
    ours, our_answers, spark_started = run_changeflow(tables, args.repeats)
    pg = run_postgres(tables, args.repeats)
    duck, duck_answers = run_duckdb(tables, args.repeats)
    results = []
    for name in QUERIES:
        row = {
            "query": name,
            "sql": QUERIES[name],
            "changeflow_s": ours[name],
            "postgres_s": pg[0][name] if pg else None,
            "duckdb_s": duck[name],
            "same_as_duckdb": same(our_answers[name], duck_answers[name]),
            "same_as_postgres": same(our_answers[name], pg[1][name]) if pg else None,
        }
        results.append(row)
    data_out = {
        "machine": platform.processor(),
        "rows": args.rows,
        "small_rows": args.small_rows,
        "spark_started": spark_started,
        "results": results,
    }
    publish("adhoc", data_out, report(data_out))


def report(data: dict) -> str:
    lines = [
        f"Ad hoc SELECTs (no view) over `big` ({data['rows']:,} rows) and `small` "
        f"({data['small_rows']:,} rows), warm, best of the repeats (seconds):",
        "",
        "| query | changeflow | PostgreSQL 15 | DuckDB | changeflow / PostgreSQL | <= 3x? "
        "| answers |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for r in data["results"]:
        pg = r["postgres_s"]
        ratio = f"{r['changeflow_s'] / pg:.1f}x" if pg else "—"
        ok = "—" if not pg else ("yes" if r["changeflow_s"] <= 3 * pg else "**no**")
        agree = r["same_as_duckdb"] and r["same_as_postgres"] is not False
        lines.append(
            f"| {r['query']} | {r['changeflow_s']:.3f} | {pg:.3f} | {r['duckdb_s']:.3f} | "
            f"{ratio} | {ok} | {'same' if agree else '**differ**'} |"
            if pg
            else f"| {r['query']} | {r['changeflow_s']:.3f} | — | {r['duckdb_s']:.3f} | — | — | "
            f"{'same' if agree else '**differ**'} |"
        )
    lines += ["", f"- Spark session started by these queries: {data['spark_started']}"]
    for r in data["results"]:
        lines.append(f"- {r['query']}: `{r['sql']}`")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
