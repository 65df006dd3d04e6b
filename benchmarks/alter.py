"""Benchmark: ALTER TABLE on a table of ``--rows`` rows, changeflow against PostgreSQL 15.

The table ``a (k bigint, v bigint, s text)`` holds the same rows in a changeflow home
(committed as one Arrow frame through the write log) and in a throwaway PostgreSQL 15 server
(loaded with COPY). Each statement runs once, in this order, timed on both; after each the
table's count and a sum are compared:

- ``ADD COLUMN n int``: no rows rewritten (older batches read NULL);
- ``ADD COLUMN d int DEFAULT 7``: every row retracted and added with the default;
- ``RENAME COLUMN d TO dd``: the catalog only;
- ``DROP COLUMN s``: the shard's schema only;
- then a ``SELECT count(*), sum(dd) FROM a`` over the new columns.

Writes ``results/alter.json``.

    python benchmarks/alter.py [--rows 200000]
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from adapter_common import commit_arrow
from peers import postgres_server
from tpch import say

import changeflow

STEPS = [
    "ALTER TABLE a ADD COLUMN n int",
    "ALTER TABLE a ADD COLUMN d int DEFAULT 7",
    "ALTER TABLE a RENAME COLUMN d TO dd",
    "ALTER TABLE a DROP COLUMN s",
    "SELECT count(*), sum(dd) FROM a",
]
CHECK = "SELECT count(*), sum(v) FROM a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    data = pa.table(
        {
            "k": pa.array(range(args.rows), pa.int64()),
            "v": pa.array([i % 1000 for i in range(args.rows)], pa.int64()),
            "s": pa.array([f"row {i}" for i in range(args.rows)]),
        }
    )
    work = Path(tempfile.mkdtemp(prefix="changeflow-alter-"))
    results: list[dict] = []
    try:
        conn = changeflow.connect(work / "home", host_seconds=0)
        conn.autocommit = True
        conn.execute("CREATE TABLE a (k bigint, v bigint, s text)")
        commit_arrow(conn, "a", data)
        with postgres_server(say) as url:
            pg = None
            if url is not None:
                import psycopg

                pg = psycopg.connect(url, autocommit=True)
                pg.execute("DROP TABLE IF EXISTS a")
                pg.execute("CREATE TABLE a (k bigint, v bigint, s text)")
                text = io.StringIO()
                for row in zip(*(c.to_pylist() for c in data.columns), strict=True):
                    text.write("\t".join(map(str, row)) + "\n")
                with pg.cursor().copy("COPY a FROM STDIN") as copy:
                    copy.write(text.getvalue())
            for sql in STEPS:
                ours = _timed(lambda sql=sql: conn.execute(sql))
                theirs = _timed(lambda sql=sql: pg.execute(sql)) if pg else None
                same = pg is None or conn.execute(CHECK).fetchall() == pg.execute(CHECK).fetchall()
                results.append({"statement": sql, "changeflow_s": ours, "postgres_s": theirs})
                shown = f"{theirs:.3f} s" if theirs is not None else "-"
                say(f"{sql}: changeflow {ours:.3f} s, PostgreSQL {shown}, same rows: {same}")
                assert same, sql
            if pg is not None:
                pg.execute("DROP TABLE a")
                pg.close()
        conn.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = Path(__file__).parent / "results" / "alter.json"
    meta = {"rows": args.rows, "machine": platform.platform(), "cpus": _cpus()}
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    say(f"wrote {out}")


def _timed(action) -> float:  # noqa: ANN001
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _cpus() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
