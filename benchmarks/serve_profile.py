"""Where one client's statements spend the server's CPU: a ``changeflow serve`` whose client
connections run under ``cProfile.Profile(time.process_time)`` (a wall-clock profile of a
loaded machine charges waiting to whatever runs; ``PROFILE_WALL=1`` for one anyway), and one
psycopg client running, for ``--seconds`` each, single-row INSERTs (into a PRIMARY KEY table:
insert; into one without a key: append), an UPDATE of its own row by the key, a point SELECT
by the key, a SELECT of one client's rows of the unkeyed table (scan) and an UPDATE of one
of them (change), or append, change and scan in turn as benchmarks/serve.py's clients (mix).
Prints the CPU per statement of each kind and its top functions (own and cumulative time).

    python benchmarks/serve_profile.py [--seconds 5] [--top 25] [--save DIR]
                                       [--kinds insert,append,update,select,scan,change,mix]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from serve import launched

STATEMENTS = {
    "insert": ("INSERT INTO t VALUES (%s, 0)", lambda n: (n + 10,)),
    "update": ("UPDATE t SET v = v + 1 WHERE id = %s", lambda n: (1,)),
    "select": ("SELECT v FROM t WHERE id = %s", lambda n: (1,)),
    "append": ("INSERT INTO u VALUES (%s, 1, 0)", lambda n: (n + 10,)),
    "scan": ("SELECT count(*), max(v) FROM u WHERE client = %s", lambda n: (1,)),
    "change": ("UPDATE u SET v = v + 1 WHERE client = %s AND n = 0", lambda n: (1,)),
}
MIX = ("append", "change", "scan")  # benchmarks/serve.py's client, in turn


CLOCK = time.perf_counter if os.environ.get("PROFILE_WALL") else time.process_time


def server(home: str, out: str) -> None:
    """Run ``changeflow serve`` with every client connection profiled into ``out`` (one
    profile, written when the connection ends)."""
    from changeflow.cli.serve import serve
    from changeflow.server.connection import ClientConnection

    plain = ClientConnection.serve

    def profiled(self: ClientConnection) -> None:
        profile = cProfile.Profile(CLOCK)
        profile.enable()
        try:
            plain(self)
        finally:
            profile.disable()
            profile.dump_stats(out)

    ClientConnection.serve = profiled  # type: ignore[method-assign]
    serve.main(["--home", home, "--listen", "127.0.0.1:0", "--http", "off"], standalone_mode=False)


def measure(kind: str, seconds: float, top: int, save: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="serve-profile-") as tmp:
        out = str(Path(tmp) / "profile")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, __file__, "--server", str(Path(tmp) / "home"), out]
        proc, dsn = launched(cmd, env)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE t (id bigint PRIMARY KEY, v int)")
            c.execute("CREATE TABLE u (client int NOT NULL, n int NOT NULL, v int)")
            c.execute("INSERT INTO t VALUES (1, 0), (2, 0)")
            rows = ", ".join(f"({k % 16}, {k // 16}, 0)" for k in range(2000))
            c.execute(f"INSERT INTO u VALUES {rows}")  # as 16 clients leave it after a while
        kinds = MIX if kind == "mix" else (kind,)
        n = 0
        with psycopg.connect(dsn, autocommit=True) as c:
            for i in range(20):  # warm: plans cached, prepared by psycopg
                sql, args = STATEMENTS[kinds[i % len(kinds)]]
                c.execute(sql, args(10_000 + i))
            until = time.monotonic() + seconds
            started = time.perf_counter()
            while time.monotonic() < until:
                sql, args = STATEMENTS[kinds[n % len(kinds)]]
                c.execute(sql, args(n))
                n += 1
            wall = time.perf_counter() - started
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        if save:
            Path(save).mkdir(parents=True, exist_ok=True)
            shutil.copy(out, Path(save) / f"{kind}.prof")
        stats = pstats.Stats(out)
        total = stats.total_tt  # type: ignore[attr-defined]
        print(
            f"\n== {kind}: {n} statements, {1000 * wall / n:.2f} ms wall and "
            f"{1000 * total / (n + 20):.2f} ms server CPU each; load {os.getloadavg()[0]:.2f}"
        )
        for key in ("tottime", "cumulative"):
            buf = io.StringIO()
            pstats.Stats(out, stream=buf).sort_stats(key).print_stats(top)
            text = buf.getvalue()
            print(text[text.index("ncalls") :])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--server":
        server(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--kinds", default="insert,append,update,select,scan,change,mix")
    parser.add_argument("--save", metavar="DIR", help="keep each kind's profile as DIR/KIND.prof")
    args = parser.parse_args()
    for kind in args.kinds.split(","):
        measure(kind, args.seconds, args.top, args.save)


if __name__ == "__main__":
    main()
