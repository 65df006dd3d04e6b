"""Benchmark: statement shapes for a batch of upserts, PostgreSQL alone (no runtime, no driver).

The materialize benchmark's data (``materialize.upserts``: 1M upserts over 100k keys in
batches of 10k distinct keys), each batch in key order and its binary COPY payload built in
advance (untimed). Per shape, into a fresh table, one transaction per batch:

- ``on conflict``: COPY into a temporary table, ``INSERT … SELECT … ON CONFLICT DO UPDATE``
  (what the driver does);
- ``on conflict, fillfactor 70``: the same into a table with room on each page, so an update
  can stay on its page (a HOT update: no new index entry);
- ``merge``: COPY, then ``MERGE``;
- ``update + insert``: COPY, ``UPDATE … FROM`` the staged rows, ``INSERT`` of the rest;
- ``delete + insert``: COPY, ``DELETE … USING`` the staged keys, ``INSERT`` of every row;
- ``2 connections``: ``on conflict`` with the keys split in two halves by parity, each written
  by its own connection in its own thread (two transactions per batch: a ceiling for
  parallel writers, not an atomic shape).

Each shape reports wall seconds, the client's CPU seconds and the server's (its processes' user
and system time from ``/proc``), so the numbers mean something on a shared machine. Every table
must equal the final state. Writes ``results/upsert_shapes.json`` and ``.md``.

    python benchmarks/upsert_shapes.py [--scale 1.0] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import psycopg
import pyarrow as pa
from cpu import server_of, tree_cpu
from materialize import BATCH, KEYS, SCHEMA, UPSERTS, final_state, postgres, say, upserts
from readme import publish

from changeflow.materialize.drivers.pgcopy import copy_data

CREATE = "CREATE TABLE {t} (key BIGINT NOT NULL PRIMARY KEY, value TEXT, amount BIGINT) {opts}"
STAGE = "CREATE TEMP TABLE staged (key BIGINT, value TEXT, amount BIGINT) ON COMMIT DELETE ROWS"
ON_CONFLICT = (
    "INSERT INTO {t} SELECT key, value, amount FROM staged ON CONFLICT (key) DO UPDATE SET "
    "value = excluded.value, amount = excluded.amount"
)


@dataclass(frozen=True)
class Shape:
    name: str
    statements: tuple[str, ...]
    table_options: str = ""
    connections: int = 1


SHAPES = [
    Shape("on conflict", (ON_CONFLICT,)),
    Shape("on conflict, fillfactor 70", (ON_CONFLICT,), "WITH (fillfactor = 70)"),
    Shape(
        "merge",
        (
            "MERGE INTO {t} AS t USING staged AS s ON t.key = s.key WHEN MATCHED THEN UPDATE "
            "SET value = s.value, amount = s.amount WHEN NOT MATCHED THEN INSERT VALUES "
            "(s.key, s.value, s.amount)",
        ),
    ),
    Shape(
        "update + insert",
        (
            "UPDATE {t} AS t SET value = s.value, amount = s.amount FROM staged AS s "
            "WHERE t.key = s.key",
            "INSERT INTO {t} SELECT s.key, s.value, s.amount FROM staged AS s "
            "WHERE NOT EXISTS (SELECT 1 FROM {t} AS t WHERE t.key = s.key)",
        ),
    ),
    Shape(
        "delete + insert",
        (
            "DELETE FROM {t} AS t USING staged AS s WHERE t.key = s.key",
            "INSERT INTO {t} SELECT key, value, amount FROM staged",
        ),
    ),
    Shape("2 connections", (ON_CONFLICT,), connections=2),
]


def payloads(rows: list[list[tuple]], parts: int) -> list[list[bytes]]:
    """Per connection, each batch's rows (in key order, split by key parity) as COPY data."""
    out: list[list[bytes]] = [[] for _ in range(parts)]
    for batch in rows:
        ordered = sorted(batch)
        for part in range(parts):
            mine = [r for r in ordered if r[0] % parts == part]
            columns = dict(zip(SCHEMA.names, zip(*mine, strict=True), strict=True))
            out[part].append(copy_data(pa.table(columns, SCHEMA)))
    return out


def run(url: str, shape: Shape, table: str, data: list[list[bytes]]) -> dict:
    """Write every batch with ``shape``; wall, client CPU and server CPU seconds."""
    conns = [psycopg.connect(url) for _ in range(shape.connections)]
    try:
        conns[0].execute(CREATE.format(t=table, opts=shape.table_options))
        conns[0].commit()
        for conn in conns:
            conn.execute(STAGE)
            conn.commit()
        server = server_of(conns[0])
        statements = [s.format(t=table) for s in shape.statements]

        def write(part: int) -> None:
            conn = conns[part]
            for payload in data[part]:
                with conn.cursor() as cur:
                    with cur.copy("COPY staged FROM STDIN (FORMAT BINARY)") as copy:
                        copy.write(payload)
                    for statement in statements:
                        cur.execute(statement)
                conn.commit()

        server0, client0, start = tree_cpu(server), time.process_time(), time.perf_counter()
        if len(conns) == 1:
            write(0)
        else:
            with ThreadPoolExecutor(len(conns)) as pool:
                list(pool.map(write, range(len(conns))))
        wall = time.perf_counter() - start
        client, server_cpu = time.process_time() - client0, tree_cpu(server) - server0
        got = conns[0].execute(f"SELECT key, value, amount FROM {table} ORDER BY key").fetchall()
    finally:
        for conn in conns:
            conn.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {table}")
        conn.execute("CHECKPOINT")
    return {"wall_s": wall, "client_cpu_s": client, "server_cpu_s": server_cpu, "rows": got}


def markdown(results: list[dict], n: int, load: tuple[float, float]) -> str:
    lines = [
        f"{n:,} upserts over {results[0]['keys']:,} keys, batches of {BATCH:,} (one transaction "
        f"each), PostgreSQL alone; best round by wall time. Load average {load[0]:.1f} before "
        f"and {load[1]:.1f} after the run on {os.cpu_count()} cores: the server's CPU seconds "
        "are the measure that load disturbs least.",
        "",
        "| shape | wall s | upserts/s | server CPU s | upserts per server CPU s | client CPU s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['shape']} | {r['wall_s']:.2f} | {n / r['wall_s']:,.0f} | "
            f"{r['server_cpu_s']:.2f} | {n / r['server_cpu_s']:,.0f} | {r['client_cpu_s']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies upserts and keys")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; each shape keeps its best")
    args = parser.parse_args()
    batches, keys = (
        max(3, round(UPSERTS * args.scale / BATCH)),
        max(BATCH, round(KEYS * args.scale)),
    )
    n = batches * BATCH
    say(f"preparing {n:,} upserts over {keys:,} keys…")
    _, rows = upserts(batches, keys)
    expected = final_state(rows)
    data = {parts: payloads(rows, parts) for parts in {s.connections for s in SHAPES}}
    results: list[dict] = []
    load0 = os.getloadavg()[0]
    with postgres() as pg:
        if pg is None:
            raise SystemExit("no PostgreSQL server could be started")
        for i in range(args.repeat):
            for k, shape in enumerate(SHAPES):
                r = run(pg.database, shape, f"shape_{k}_{i}", data[shape.connections])
                if r.pop("rows") != expected:
                    raise SystemExit(f"{shape.name}: the table differs from the final state")
                say(f"{shape.name}: {r}")
                results.append({"shape": shape.name, "round": i, "keys": len(expected), **r})
    best = [
        min((r for r in results if r["shape"] == s.name), key=lambda r: r["wall_s"]) for s in SHAPES
    ]
    load = (load0, os.getloadavg()[0])
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "when": time.strftime("%F %T"),
        "load_average": load,
        "upserts": n,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    publish("upsert_shapes", {"meta": meta, "rounds": results}, markdown(best, n, load))


if __name__ == "__main__":
    main()
