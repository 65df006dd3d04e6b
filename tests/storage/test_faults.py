"""Crashes at every step of append, compaction and garbage collection, and racing writers.

Each test runs on SQLite and on PostgreSQL consensus. Processes are killed at injected points
(``changeflow.failpoints``) and the shard is then read: it must be readable and correct.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from changeflow.collection import PTVC
from changeflow.failpoints import ENV, EXIT_CODE
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])

PRELUDE = """
import json, sys
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
storage = Storage(open_consensus(sys.argv[1]), Blob(sys.argv[2]))
"""

CHILD = {
    "append": PRELUDE
    + """
read, write = storage.acquire_capabilities("t")
storage.append(write, [(("crash", 1), 10, 1), (("a", 0), 11, -1)], 12)
""",
    "compact": PRELUDE + 'storage.compact("t")\n',
    "gc": PRELUDE + 'storage.collect_garbage("t", grace_seconds=0)\n',
}

POINTS = [
    ("append", "blob.partway", False),
    ("append", "append.after_blob", False),
    ("append", "append.after_cas", True),
    ("compact", "blob.partway", False),
    ("compact", "compact.after_blob", False),
    ("compact", "compact.after_cas", False),
    ("gc", "gc.partway", False),
]


def contents(table: pa.Table) -> dict:
    return {(r["key"], r["value"]): r["_diff"] for r in table.to_pylist()}


def check(storage: Storage, ref: PTVC) -> None:
    """Every readable time of the shard reads as the reference does."""
    read, write = storage.acquire_capabilities("t")
    state = storage.state("t")
    assert state.upper == ref.upper
    low, high = state.since.elements[0], state.upper.elements[0]
    for t in range(max(low, ref.since.elements[0]), high):
        assert contents(storage.snapshot_table(read, t)) == ref.read(t), t
    storage.drop(read)
    storage.drop(write)


@pytest.mark.parametrize("operation, point, lands", POINTS)
def test_a_crash_leaves_the_shard_readable_and_correct(
    consensus_location: str, tmp_path: Path, operation: str, point: str, lands: bool
) -> None:
    blob_root = str(tmp_path / "blob")
    storage = Storage(open_consensus(consensus_location), Blob(blob_root))
    read, write = storage.create("t", SCHEMA)
    ref = PTVC.empty(0, "t")
    for lower in range(0, 10, 2):
        batch = [(("a", lower // 2), lower, 1), (("b", lower), lower + 1, 1)]
        storage.append(write, batch, lower + 2)
        ref.append(batch, Antichain([lower + 2]))
    storage.downgrade(read, 4)
    ref.compact(Antichain([4]))
    if operation == "gc":  # leave retired blobs for the collector to delete
        storage.compact("t")

    child = subprocess.run(
        [sys.executable, "-c", CHILD[operation], consensus_location, blob_root],
        env={**_env(), ENV: point},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == EXIT_CODE, child.stderr
    if lands:
        ref.append([(("crash", 1), 10, 1), (("a", 0), 11, -1)], Antichain([12]))
    check(storage, ref)

    # The shard goes on: appends, compaction and garbage collection all work after the crash.
    _, write = storage.acquire_capabilities("t")
    upper = ref.upper.elements[0]
    storage.append(write, [(("after", 1), upper, 1)], upper + 1)
    ref.append([(("after", 1), upper, 1)], Antichain([upper + 1]))
    storage.compact("t")
    storage.collect_garbage("t", grace_seconds=0)
    check(storage, ref)
    referenced = storage.state("t").referenced()
    assert {m.key for m in storage.blob.list()} == referenced  # nothing orphaned is left


WORKER = (
    PRELUDE
    + """
from pathlib import Path
from changeflow.errors import UpperMismatch
worker, rounds, start = int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
read, write = storage.acquire_capabilities("race")
storage.drop(read)
import time
while not start.exists():
    time.sleep(0.001)
wins, losses = [], []
while True:
    t = write.frontier.elements[0]
    if t >= rounds:
        break
    try:
        storage.append(write, [((worker, t), t, 1)], t + 1)
        wins.append(t)
    except UpperMismatch as e:
        losses.append(t)
        storage.downgrade(write, e.current)
print(json.dumps({"wins": wins, "losses": losses}))
"""
)


def test_racing_writers_each_round_has_one_winner(consensus_location: str, tmp_path: Path) -> None:
    blob_root, rounds = str(tmp_path / "blob"), 40
    storage = Storage(open_consensus(consensus_location), Blob(blob_root))
    read, write = storage.create("race", pa.schema([("worker", pa.int64()), ("round", pa.int64())]))
    storage.drop(write)
    start = tmp_path / "start"
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                consensus_location,
                blob_root,
                str(w),
                str(rounds),
                str(start),
            ],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(2)
    ]
    time.sleep(1.5)  # both are waiting at the start line
    start.touch()
    results = []
    for p in workers:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out))

    winners: dict[int, int] = {}
    for w, result in enumerate(results):
        for t in result["wins"]:
            assert t not in winners, f"round {t} won twice"
            winners[t] = w
        for t in result["losses"]:
            assert t in {*results[1 - w]["wins"]}, f"round {t} lost to nobody"
    assert sorted(winners) == list(range(rounds))
    snapshot = storage.snapshot_table(read, rounds - 1).to_pylist()
    assert sorted((r["worker"], r["round"], r["_diff"]) for r in snapshot) == sorted(
        (w, t, 1) for t, w in winners.items()
    )
    assert storage.state("race").upper == Antichain([rounds])


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != ENV}
