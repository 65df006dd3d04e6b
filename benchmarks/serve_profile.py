"""Where one client's statements spend the server's CPU: a ``changeflow serve`` whose client
connections run under ``cProfile.Profile(time.process_time)`` (a wall-clock profile of a
loaded machine charges waiting to whatever runs; ``--clock wall`` for one anyway), and one
psycopg client running, for ``--seconds`` each, single-row INSERTs (into a PRIMARY KEY table:
insert; into one without a key: append), an UPDATE of its own row by the key, a point SELECT
by the key, a SELECT of one client's rows of the unkeyed table (scan) and an UPDATE of one
of them (change), or append, change and scan in turn as benchmarks/serve.py's clients (mix),
with a materialized view over the unkeyed table as there.
Prints the CPU per statement of each kind and its top functions (own and cumulative time).

``--clients N`` runs the mix from N clients at once (threads of this process, as
benchmarks/serve.py's), each connection's profile kept and all of them summed. Several
connections run at once there, so the process's CPU clock would charge each with the others'
work: ``--clock thread`` (each thread's own CPU, the default then) or ``--clock wall`` (time
waited on locks and the group commit included); the two side by side say where a statement
waits. The host and the log's applier threads are not profiled.

    python benchmarks/serve_profile.py [--seconds 5] [--top 25] [--save DIR] [--clients 1]
                                       [--clock process|thread|wall]
                                       [--kinds insert,append,update,select,scan,change,mix]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import os
import pstats
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
from serve import launched

# a statement and its parameters for the ``n``th statement of client ``k`` (its own rows)
STATEMENTS = {
    "insert": ("INSERT INTO t VALUES (%s, 0)", lambda n, k: (1000 + n + 10_000_000 * k,)),
    "update": ("UPDATE t SET v = v + 1 WHERE id = %s", lambda n, k: (k + 1,)),
    "select": ("SELECT v FROM t WHERE id = %s", lambda n, k: (k + 1,)),
    "append": ("INSERT INTO u VALUES (%s, %s, 0)", lambda n, k: (k, 1000 + n)),
    "scan": ("SELECT count(*), max(v) FROM u WHERE client = %s", lambda n, k: (k,)),
    "change": ("UPDATE u SET v = v + 1 WHERE client = %s AND n = 0", lambda n, k: (k,)),
}
MIX = ("append", "change", "scan")  # benchmarks/serve.py's client, in turn
CLOCKS = {"process": time.process_time, "thread": time.thread_time, "wall": time.perf_counter}


def server(home: str, out: str, clock: str) -> None:
    """Run ``changeflow serve`` with every client connection profiled by ``clock`` (one of
    :data:`CLOCKS`), each into a file of the folder ``out`` when the connection ends."""
    from changeflow.cli.serve import serve
    from changeflow.server.connection import ClientConnection

    plain = ClientConnection.serve
    numbers = itertools.count()

    def profiled(self: ClientConnection) -> None:
        number = next(numbers)  # in order of connection: 0 is the setup's
        profile = cProfile.Profile(CLOCKS[clock])
        profile.enable()
        try:
            plain(self)
        finally:
            profile.disable()
            profile.dump_stats(str(Path(out) / f"{number}.prof"))

    ClientConnection.serve = profiled  # type: ignore[method-assign]
    serve.main(["--home", home, "--listen", "127.0.0.1:0", "--http", "off"], standalone_mode=False)


def run(dsn: str, kinds: tuple[str, ...], seconds: float, k: int, counts: list[int]) -> None:
    """One client: ``kinds``' statements in turn for ``seconds``; its count into ``counts``
    (client ``k`` of several works on rows of its own)."""
    n = 0
    with psycopg.connect(dsn, autocommit=True) as c:
        for i in range(20):  # warm: plans cached, prepared by psycopg
            sql, args = STATEMENTS[kinds[i % len(kinds)]]
            c.execute(sql, args(5_000_000 + i, k))
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            sql, args = STATEMENTS[kinds[n % len(kinds)]]
            c.execute(sql, args(n, k))
            n += 1
    counts[k] = n


def measure(
    kind: str, seconds: float, top: int, save: str | None, clients: int, clock: str
) -> None:
    with tempfile.TemporaryDirectory(prefix="serve-profile-") as tmp:
        out = Path(tmp) / "profile"
        out.mkdir()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, __file__, "--server", str(Path(tmp) / "home"), str(out), clock]
        proc, dsn = launched(cmd, env)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE t (id bigint PRIMARY KEY, v int)")
            c.execute("CREATE TABLE u (client int NOT NULL, n int NOT NULL, v int)")
            c.execute(f"INSERT INTO t VALUES {', '.join(f'({i}, 0)' for i in range(1, 18))}")
            rows = ", ".join(f"({k % 16}, {k // 16}, 0)" for k in range(2000))
            c.execute(f"INSERT INTO u VALUES {rows}")  # as 16 clients leave it after a while
            c.execute(  # as benchmarks/serve.py's, kept up to date by the host meanwhile
                "CREATE MATERIALIZED VIEW u_totals AS SELECT client, count(*) AS n, sum(v) AS v "
                "FROM u GROUP BY client"
            )
        kinds = MIX if kind == "mix" else (kind,)
        counts = [0] * clients
        threads = [
            threading.Thread(target=run, args=(dsn, kinds, seconds, k, counts))
            for k in range(clients)
        ]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - started
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        files = sorted(str(f) for f in out.iterdir() if f.name != "0.prof")  # not the setup
        if save:
            Path(save).mkdir(parents=True, exist_ok=True)
            pstats.Stats(*files).dump_stats(str(Path(save) / f"{kind}-{clients}-{clock}.prof"))
        n = sum(counts)
        total = pstats.Stats(*files).total_tt  # type: ignore[attr-defined]
        print(
            f"\n== {kind}, {clients} clients: {n} statements, {n / wall:.1f}/s; "
            f"{1000 * total / (n + 20 * clients):.2f} ms server {clock} time each "
            f"(connections summed); load {os.getloadavg()[0]:.2f}"
        )
        for key in ("tottime", "cumulative"):
            buf = io.StringIO()
            pstats.Stats(*files, stream=buf).sort_stats(key).print_stats(top)
            text = buf.getvalue()
            print(text[text.index("ncalls") :])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--server":
        server(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--kinds", default="insert,append,update,select,scan,change,mix")
    parser.add_argument("--save", metavar="DIR", help="keep each kind's profile as DIR/KIND.prof")
    parser.add_argument("--clients", type=int, default=1, help="clients at once (see above)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), help="process for 1 client, else thread")
    args = parser.parse_args()
    clock = args.clock or ("process" if args.clients == 1 else "thread")
    for kind in args.kinds.split(","):
        measure(kind, args.seconds, args.top, args.save, args.clients, clock)


if __name__ == "__main__":
    main()
