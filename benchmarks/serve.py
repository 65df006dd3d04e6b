"""Benchmark: ``changeflow serve`` under 1, 4 and 16 concurrent psycopg clients.

Each run starts a server on a fresh home (``--http off``) with one table ``bench (client int,
n int, v int)`` and a materialized view counting it by client (so the host keeps a dataflow up
to date while the clients work). Every client has its own connection (autocommit) and runs, in
turn, for a fixed time:

- INSERT a new row ``(client, n, 0)``;
- UPDATE its first row's ``v`` (a write that reads: a concurrent write to the table can fail it
  with 40001, and the client runs it again; its latency includes the retries);
- SELECT ``count(*), max(v)`` of its rows (at the oracle's read timestamp: every acknowledged
  write is visible).

Reported per client count and per kind: transactions acknowledged per second and p50/p99
latency (ms), plus the retries. The clients are threads of this process, on the same two cores
as the server. The same clients then run against a throwaway PostgreSQL 15 started in the same
run (``tests/postgres_server.py``: fsync and synchronous_commit off), the same table without
the view (PostgreSQL has no incrementally maintained one), side by side. changeflow's SQLite
consensus syncs every commit (``CHANGEFLOW_SQLITE_SYNC=full``, its default) unless ``--sync
normal`` (synced at checkpoints: a commit survives a SIGKILL at once, a power loss once
checkpointed, closer to that PostgreSQL).

Writes ``results/serve.json`` and ``results/serve.md`` and refreshes the README table between
the ``bench:serve`` markers.

Then, one client on each system: single-row INSERT latency; ``COPY … FROM STDIN`` of narrow
CSV rows (rows/s), into a table without a key and into one with a PRIMARY KEY; and on a
table of ``--rows`` rows with ``CREATE INDEX`` on its key, point SELECT, UPDATE and DELETE by
that key (latency); and on a table of up to 100,000 of those rows
with a PRIMARY KEY and no index, SELECT and UPDATE by the key.

``--before SRC`` also runs a server from another source tree (``SRC``: its ``src`` folder, an
earlier commit's), a column of its own in the same run, so a change is measured against what
it changed under the same load.

    python benchmarks/serve.py [--quick] [--seconds 10] [--clients 1,4,16] [--rows 1000000]
                               [--no-postgres] [--before SRC] [--sync full|normal]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from peers import postgres_server
from readme import publish

HERE = Path(__file__).resolve().parent
KINDS = ("insert", "update", "select")
SYSTEMS = ("changeflow", "before", "postgresql")
KEYED = ("key select", "key update")
KEYED_ROWS = 100_000  # rows of the PRIMARY KEY table
SYNC = ["full"]  # changeflow's CHANGEFLOW_SQLITE_SYNC (--sync)
SYNC_SAID = {"full": "every commit", "normal": "checkpoints (CHANGEFLOW_SQLITE_SYNC=normal)"}
LABELS = {"changeflow": "changeflow", "before": "changeflow before", "postgresql": "postgresql"}


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def start(home: Path, src: str | None = None) -> tuple[subprocess.Popen[str], str]:
    """A server on ``home`` (run from the source folder ``src`` if given); its process and a
    psycopg connection string."""
    cmd = [sys.executable, "-m", "changeflow.cli", "serve", "--home", str(home)]
    cmd += ["--listen", "127.0.0.1:0", "--http", "off"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CHANGEFLOW_SQLITE_SYNC": SYNC[0]}
    if src is not None:
        env["PYTHONPATH"] = src
    return launched(cmd, env, subprocess.DEVNULL)


def launched(
    cmd: list[str], env: dict[str, str], stderr: int | None = None
) -> tuple[subprocess.Popen[str], str]:
    """A server process started by ``cmd`` and a psycopg connection string, once it listens."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"listening on ([\d.]+):(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, f"host={m[1]} port={m[2]} user=bench dbname=materialize connect_timeout=10"


def client(dsn: str, k: int, until: float, go: threading.Barrier, out: dict[str, Any]) -> None:
    """One client's loop (see the module docstring); its latencies by kind and its retries."""
    latencies: dict[str, list[float]] = {kind: [] for kind in KINDS}
    retries = 0
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("INSERT INTO bench VALUES (%s, 0, 0)", (k,))
        n = 0
        go.wait()  # every client connected: ``until`` is set now
        while time.monotonic() < until[0]:
            kind = KINDS[n % 3]
            started = time.perf_counter()
            if kind == "insert":
                c.execute("INSERT INTO bench VALUES (%s, %s, 0)", (k, n + 1))
            elif kind == "update":
                while True:
                    try:
                        c.execute("UPDATE bench SET v = v + 1 WHERE client = %s AND n = 0", (k,))
                        break
                    except psycopg.errors.SerializationFailure:
                        retries += 1
            else:
                c.execute("SELECT count(*), max(v) FROM bench WHERE client = %s", (k,)).fetchall()
            latencies[kind].append(time.perf_counter() - started)
            n += 1
    out.update(latencies=latencies, retries=retries)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


PIDS: dict[str, int] = {}  # a changeflow server's process by its DSN


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def changeflow_server(src: str | None = None) -> Iterator[str]:
    """A fresh ``changeflow serve`` (from ``src`` if given) with the benchmark's table and
    view; its DSN."""
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as tmp:
        proc, dsn = start(Path(tmp) / "home", src)
        PIDS[dsn] = proc.pid
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("CREATE TABLE bench (client int NOT NULL, n int NOT NULL, v int)")
                c.execute(
                    "CREATE MATERIALIZED VIEW bench_totals AS SELECT client, count(*) AS n, "
                    "sum(v) AS v FROM bench GROUP BY client"
                )
            yield dsn
            with psycopg.connect(dsn, autocommit=True) as c:
                total = c.execute("SELECT sum(n) FROM bench_totals").fetchone()[0]
                rows = c.execute("SELECT count(*) FROM bench").fetchone()[0]
            assert (total or 0) == rows, (total, rows)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


@contextlib.contextmanager
def postgres_database(url: str, name: str) -> Iterator[str]:
    """A fresh database on the throwaway PostgreSQL server with the benchmark's table."""
    from postgres_server import create_database

    dsn = create_database(url, name)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE TABLE bench (client int NOT NULL, n int NOT NULL, v int)")
    yield dsn


def run(clients: int, seconds: float, dsn: str) -> dict[str, Any]:
    """One measurement: ``clients`` clients for ``seconds`` against the server of ``dsn``."""
    outs: list[dict[str, Any]] = [{} for _ in range(clients)]
    go = threading.Barrier(clients + 1)
    until = [0.0]
    threads = [
        threading.Thread(target=client, args=(dsn, k, until, go, outs[k])) for k in range(clients)
    ]
    for t in threads:
        t.start()
    while go.n_waiting < clients:  # each client has connected and made its first row
        time.sleep(0.01)
    pid = PIDS.get(dsn)
    cpu = cpu_seconds(pid) if pid else 0.0
    begin = time.monotonic()
    until[0] = begin + seconds
    go.wait()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - begin
    cpu = cpu_seconds(pid) - cpu if pid else 0.0
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute("SELECT count(*) FROM bench").fetchone()[0]
    result: dict[str, Any] = {"clients": clients, "seconds": round(elapsed, 2), "rows": rows}
    every: list[float] = []
    for kind in KINDS:
        values = [v for o in outs for v in o["latencies"][kind]]
        every += values
        result[kind] = summary(values, elapsed)
    result["all"] = summary(every, elapsed)
    result["update_retries"] = sum(o["retries"] for o in outs)
    if pid:  # the server's CPU (every thread: host and applier too) per statement
        result["server_cpu_ms"] = round(1000 * cpu / max(1, len(every)), 2)
    return result


def one_client(dsn: str, rows: int, seconds: float) -> dict[str, Any]:
    """Single-row INSERTs, COPY FROM of ``rows`` narrow rows, and point reads and writes by an
    indexed key on them, from one client (see the module docstring)."""
    out: dict[str, Any] = {}
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE TABLE single (id bigint NOT NULL, v int)")
        latencies, until, n = [], time.monotonic() + seconds, 0
        while time.monotonic() < until:
            started = time.perf_counter()
            c.execute("INSERT INTO single VALUES (%s, 0)", (n,))
            latencies.append(time.perf_counter() - started)
            n += 1
        out["insert"] = summary(latencies, seconds)
        c.execute(
            "CREATE TABLE narrow (id bigint NOT NULL, grp int NOT NULL, amount double precision,"
            " name text)"
        )
        data = "".join(f"{i},{i % 1000},{i * 0.5},name {i % 1000}\n" for i in range(rows))
        started = time.perf_counter()
        with c.cursor().copy("COPY narrow FROM STDIN (FORMAT csv)") as copy:
            copy.write(data.encode())
        elapsed = time.perf_counter() - started
        out["copy"] = {
            "rows": rows,
            "seconds": round(elapsed, 3),
            "rows_per_s": round(rows / elapsed),
        }
        c.execute(
            "CREATE TABLE narrow_pk (id bigint PRIMARY KEY, grp int NOT NULL,"
            " amount double precision, name text)"
        )
        started = time.perf_counter()
        with c.cursor().copy("COPY narrow_pk FROM STDIN (FORMAT csv)") as copy:
            copy.write(data.encode())
        elapsed = time.perf_counter() - started
        out["copy_pk"] = {"rows": rows, "seconds": round(elapsed, 3)}
        out["copy_pk"]["rows_per_s"] = round(rows / elapsed)
        c.execute("DROP TABLE narrow_pk")
        started = time.perf_counter()
        c.execute("CREATE INDEX narrow_id ON narrow (id)")
        c.execute("SELECT * FROM narrow WHERE id = 0").fetchall()  # the index is ready
        out["index_ready_s"] = round(time.perf_counter() - started, 3)
        keyed = min(rows, KEYED_ROWS)  # (before the point DELETEs below take rows away)
        c.execute("CREATE TABLE keyed (id bigint PRIMARY KEY, v int)")
        c.execute(f"INSERT INTO keyed SELECT id, 0 FROM narrow WHERE id < {keyed}")
        ids = ((i * 7919) % rows for i in itertools.count(1))  # each id once (7919 is prime)
        for kind, sql in (
            ("point select", "SELECT * FROM narrow WHERE id = %s"),
            ("point update", "UPDATE narrow SET amount = amount + 1 WHERE id = %s"),
            ("point delete", "DELETE FROM narrow WHERE id = %s"),
        ):
            latencies, until = [], time.monotonic() + seconds
            while time.monotonic() < until:
                started = time.perf_counter()
                cur = c.execute(sql, (next(ids),))
                if kind == "point select":
                    assert len(cur.fetchall()) == 1
                latencies.append(time.perf_counter() - started)
            out[kind] = summary(latencies, seconds)
        ids = ((i * 7919) % keyed for i in itertools.count(1))
        for kind, sql in (
            ("key select", "SELECT * FROM keyed WHERE id = %s"),
            ("key update", "UPDATE keyed SET v = v + 1 WHERE id = %s"),
        ):
            latencies, until = [], time.monotonic() + seconds
            while time.monotonic() < until:
                started = time.perf_counter()
                cur = c.execute(sql, (next(ids),))
                if kind == "key select":
                    assert len(cur.fetchall()) == 1
                latencies.append(time.perf_counter() - started)
            out[kind] = summary(latencies, seconds)
    return out


def summary(values: list[float], elapsed: float) -> dict[str, Any]:
    return {
        "count": len(values),
        "per_second": round(len(values) / elapsed, 1),
        "p50_ms": round(percentile(values, 0.5) * 1000, 2),
        "p99_ms": round(percentile(values, 0.99) * 1000, 2),
    }


def markdown(results: dict[str, list[dict[str, Any]]], seconds: float) -> str:
    """One table: each client count and kind, changeflow's numbers then PostgreSQL's."""
    systems = [s for s in SYSTEMS if results.get(s)]
    head = (
        "| clients | kind |"
        + "".join(f" {LABELS[s]} tx/s | p50 ms | p99 ms |" for s in systems)
        + "\n|---:|---|"
        + "---:|---:|---:|" * len(systems)
    )
    lines = [head]
    for i, first in enumerate(results[systems[0]]):
        for kind in (*KINDS, "all"):
            label = f"**{kind}**" if kind == "all" else kind
            cells = ""
            for system in systems:
                x = results[system][i][kind]
                cells += f" {x['per_second']:,.1f} | {x['p50_ms']:.1f} | {x['p99_ms']:.1f} |"
            lines.append(f"| {first['clients']} | {label} |{cells}")
    retries = "; ".join(
        f"{LABELS[s]}: "
        + ", ".join(f"{r['clients']} clients {r['update_retries']:,}" for r in results[s])
        for s in systems
    )
    cpu = "; ".join(
        f"{LABELS[s]}: "
        + ", ".join(f"{r['clients']} clients {r['server_cpu_ms']:.2f}" for r in results[s])
        for s in systems
        if all("server_cpu_ms" in r for r in results[s])
    )
    return (
        "\n".join(lines)
        + f"\n\n{seconds:g} s per client count and system, one run; each client in turn INSERT, "
        f"UPDATE (retried on 40001; retries: {retries}), SELECT; on changeflow one materialized "
        f"view kept up to date meanwhile, its SQLite consensus synced at {SYNC_SAID[SYNC[0]]}; "
        f"PostgreSQL 15 with fsync off; clients and servers on "
        f"the same {os.cpu_count()} cores. The server process's CPU time per statement (ms; "
        f"all its threads): {cpu}."
    )


def one_client_markdown(results: dict[str, dict[str, Any]], rows: int) -> str:
    """The one-client table: latencies (p50/p99 ms) and COPY's rate, each system a column."""
    systems = [s for s in SYSTEMS if results.get(s)]
    lines = [
        "| one client | " + " | ".join(LABELS[s] for s in systems) + " |",
        "|---|" + "---:|" * len(systems),
    ]
    for kind in ("insert", "point select", "point update", "point delete", *KEYED):
        cells = [
            f"{results[s][kind]['p50_ms']:.2f} / {results[s][kind]['p99_ms']:.2f}" for s in systems
        ]
        lines.append(f"| {kind} p50 / p99 ms | " + " | ".join(cells) + " |")
    cells = [f"{results[s]['copy']['rows_per_s']:,}" for s in systems]
    lines.append("| COPY FROM csv, rows/s | " + " | ".join(cells) + " |")
    cells = [f"{results[s]['copy_pk']['rows_per_s']:,}" for s in systems if "copy_pk" in results[s]]
    if len(cells) == len(systems):
        lines.append(
            "| COPY FROM csv into a PRIMARY KEY table, rows/s | " + " | ".join(cells) + " |"
        )
    cells = [f"{results[s]['index_ready_s']:.2f}" for s in systems]
    lines.append("| CREATE INDEX + first read, s | " + " | ".join(cells) + " |")
    return "\n".join(lines) + (
        f"\n\nPoint reads and writes by an indexed bigint key on a table of {rows:,} narrow rows "
        f"loaded by COPY; by a PRIMARY KEY without CREATE INDEX (key select, key update) on a "
        f"table of {min(rows, KEYED_ROWS):,} rows; single-row INSERTs into an empty table."
    )


def systems(url: str | None, before: str | None) -> list[str]:
    """The systems of this run: changeflow, then the earlier source and PostgreSQL if asked."""
    return [s for s in SYSTEMS if (s != "postgresql" or url) and (s != "before" or before)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 s runs (unless --seconds); "
                        "results printed, not saved")  # fmt: skip
    parser.add_argument("--seconds", type=float, help="each run's (default 10)")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the point table")
    parser.add_argument("--no-postgres", action="store_true", help="changeflow only")
    parser.add_argument("--before", metavar="SRC", help="also a server from this source folder")
    parser.add_argument("--sync", choices=("full", "normal"), default="full",
                        help="changeflow's CHANGEFLOW_SQLITE_SYNC (see above)")  # fmt: skip
    args = parser.parse_args()
    SYNC[0] = args.sync
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    counts = [int(x) for x in args.clients.split(",")]
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in SYSTEMS}
    with contextlib.ExitStack() as stack:
        url = None if args.no_postgres else stack.enter_context(postgres_server(say))
        for clients in counts:
            for system in systems(url, args.before):
                say(f"{system}: {clients} clients for {seconds:g} s…")
                if system == "postgresql":
                    server = postgres_database(url, f"bench_serve_{clients}")
                else:
                    server = changeflow_server(args.before if system == "before" else None)
                with server as dsn:
                    results[system].append(run(clients, seconds, dsn))
                r = results[system][-1]["all"]
                say(
                    f"  {r['per_second']:,.1f} statements/s, p50 {r['p50_ms']} ms, "
                    f"p99 {r['p99_ms']} ms"
                )
        single: dict[str, dict[str, Any]] = {}
        for system in systems(url, args.before):
            say(f"{system}: one client, {args.rows:,} rows…")
            if system == "postgresql":
                server = postgres_database(url, "bench_serve_one")
            else:
                server = changeflow_server(args.before if system == "before" else None)
            with server as dsn:
                single[system] = one_client(dsn, args.rows, min(seconds, 5.0))
            say(f"  {single[system]}")
    table = markdown(results, seconds) + "\n\n" + one_client_markdown(single, args.rows)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    table += f"\n\nThe machine's load average at the end of the run (1/5/15 min): {load}."
    if args.quick:
        print(table)
        return
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "when": time.strftime("%F %T"),
        "seconds": seconds,
        "before": args.before,
        "sqlite_sync": args.sync,
        "load": os.getloadavg(),
    }
    publish("serve", {"meta": meta, "results": results, "one_client": single}, table)


if __name__ == "__main__":
    main()
