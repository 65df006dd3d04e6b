"""One process of the concurrent oracle test: random operations on one oracle, logged.

Usage: ``oracle_worker.py LOCATION TIMELINE WORKER OPS SEED GATE LOG``. Waits until ``GATE/go``
exists, then runs ``OPS`` operations (read_ts, peek_write_ts, a write command: write_ts then
apply_write of it, and advance_to on a non-epoch timeline) and writes one JSON line per
operation to ``LOG``: ``[op, arg, invoked, completed, wall_ms, result]`` with ``invoked`` and
``completed`` from ``time.monotonic_ns`` (one clock for every process of the machine) and
``wall_ms`` the wall clock in ms at invocation.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from changeflow.adapter.oracle import TimestampOracle
from changeflow.storage.consensus import open_consensus


def main() -> None:
    location, timeline, worker, ops, seed, gate, log = sys.argv[1:8]
    rng = random.Random(int(seed))
    consensus = open_consensus(location)
    oracle = TimestampOracle(consensus, timeline)
    (Path(gate) / f"ready-{worker}").touch()
    while not (Path(gate) / "go").exists():
        time.sleep(0.001)
    entries: list[list[object]] = []

    def run(op: str, arg: int | None) -> int | None:
        invoked, wall_ms = time.monotonic_ns(), int(time.time() * 1000)
        if op == "apply_write":
            result = oracle.apply_write(arg)
        elif op == "advance_to":
            result = oracle.advance_to(arg)
        else:
            result = getattr(oracle, op)()
        entries.append([op, arg, invoked, time.monotonic_ns(), wall_ms, result])
        return result

    choices = ["read_ts", "read_ts", "write", "write", "peek_write_ts"]
    if not oracle.timeline.is_epoch:
        choices.append("advance_to")
    for _ in range(int(ops)):
        op = rng.choice(choices)
        if op == "write":
            ts = run("write_ts", None)
            run("apply_write", ts)
        elif op == "advance_to":
            run("advance_to", (entries[-1][5] or 0) + rng.randint(0, 20) if entries else 5)
        else:
            run(op, None)
    Path(log).write_text("".join(json.dumps(e) + "\n" for e in entries))
    print(oracle.retries)
    consensus.close()


if __name__ == "__main__":
    main()
