"""Benchmark: catalog queries that show deparsed expressions — information_schema.columns'
defaults, pg_attrdef through pg_get_expr and pg_constraint through pg_get_constraintdef — over
``--tables`` tables of seven defaults and three CHECK constraints each; the first query's
time (every expression typed and printed) and the median and minimum of ``--runs`` more.

Run: ``python benchmarks/catalog_queries.py --tables 40 --runs 5``."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import changeflow

QUERIES = {
    "columns": "SELECT column_name, column_default FROM information_schema.columns "
    "WHERE table_schema = 'public'",
    "attrdef": "SELECT pg_get_expr(adbin, adrelid, true) FROM pg_attrdef",
    "checks": "SELECT pg_get_constraintdef(oid, true) FROM pg_constraint WHERE contype = 'c'",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        conn = changeflow.connect(home, host_seconds=0)
        conn.autocommit = True
        for k in range(args.tables):
            conn.execute(
                f"CREATE TABLE b{k} (id serial PRIMARY KEY, n numeric(10,2) DEFAULT 0 "
                "CHECK (n >= 0), t text DEFAULT 'x', v varchar(10) DEFAULT 'abc' "
                "CHECK (v <> ''), at timestamp DEFAULT now(), q int DEFAULT 1 + 2, "
                "ok boolean DEFAULT true, CHECK (q BETWEEN 0 AND 100))"
            )
        for name, sql in QUERIES.items():
            start = time.perf_counter()
            conn.execute(sql).fetchall()
            first = time.perf_counter() - start
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                conn.execute(sql).fetchall()
                times.append(time.perf_counter() - start)
            print(
                f"{name}: first {first * 1000:.1f} ms, median {statistics.median(times) * 1000:.1f}"
                f" ms, min {min(times) * 1000:.1f} ms"
            )
        conn.close()


if __name__ == "__main__":
    main()
