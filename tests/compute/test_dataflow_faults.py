"""A dataflow killed at each phase of a step, and inputs compacted under it: restarted, the output
equals the reference at every time, on SQLite and PostgreSQL consensus."""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from changeflow.compute import plan as P
from changeflow.compute.dataflow import maintain_view
from changeflow.compute.expr import Arith, lit
from changeflow.compute.types import INT4, Column
from changeflow.failpoints import ENV, EXIT_CODE
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from test_dataflow import TIMES, append_until, check_every_time, load_inputs  # noqa: E402

R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))
JOINED = P.Join((R, S), ((0, 2),))
PLAN = P.Reduce(
    P.Map(JOINED, (("vw", Arith("+", P.col(JOINED.schema, 1), lit(1))),)),
    (0,),
    (P.Aggregate("count"), P.Aggregate("sum", P.col(JOINED.schema, 3))),
)

CHILD = """
import pickle, sys
from changeflow.compute.dataflow import maintain_view
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
storage = Storage(open_consensus(sys.argv[1]), Blob(sys.argv[2]))
plan = pickle.loads(open(sys.argv[3], "rb").read())
maintain_view(storage, "v", plan, "out").run(until=int(sys.argv[4]))
"""


def history(seed: int) -> dict[str, list]:
    rng = random.Random(seed)
    out = {}
    for name in ("r", "s"):
        live, updates = [], []
        for t in range(TIMES):
            for _ in range(rng.randint(1, 4)):
                if live and rng.random() < 0.4:
                    updates.append((live.pop(rng.randrange(len(live))), t, -1))
                else:
                    row = (rng.randint(0, 3), rng.randint(-5, 5))
                    live.append(row)
                    updates.append((row, t, 1))
        out[name] = updates
    return out


@pytest.mark.parametrize(
    "point", ["dataflow.before_step", "dataflow.after_operators", "dataflow.after_sink"]
)
def test_a_killed_dataflow_restarts_exactly(
    point: str, consensus_location: str, tmp_path: Path
) -> None:
    blob = str(tmp_path / "blob")
    storage = Storage(open_consensus(consensus_location), Blob(blob))
    updates = history(7)
    caps = load_inputs(storage, updates, [])
    append_until(storage, caps, updates, 0, 3)
    maintain_view(storage, "v", PLAN, "out").close()
    storage.register_reader("out", "test:checker", "the test reads every time")
    flow = maintain_view(storage, "v", PLAN, "out")
    flow.run(until=3)
    flow.close()
    append_until(storage, caps, updates, 3, TIMES)
    plan_file = tmp_path / "plan.pickle"
    plan_file.write_bytes(pickle.dumps(PLAN))
    child = subprocess.run(
        [sys.executable, "-c", CHILD, consensus_location, blob, str(plan_file), str(TIMES)],
        env={**__import__("os").environ, ENV: point},
        capture_output=True,
        text=True,
    )
    assert child.returncode == EXIT_CODE, child.stderr
    again = maintain_view(storage, "v", PLAN, "out")
    again.run(until=TIMES)
    again.close()
    check_every_time(storage, PLAN, updates, "out", TIMES)
    storage.close()


def test_inputs_compact_under_a_dataflow_and_it_restarts(tmp_path: Path) -> None:
    storage = Storage(open_consensus(f"sqlite:{tmp_path / 'c.sqlite'}"), Blob(str(tmp_path / "b")))
    updates = history(11)
    caps = load_inputs(storage, updates, [])
    append_until(storage, caps, updates, 0, 2)
    flow = maintain_view(storage, "v", PLAN, "out")
    for upper in range(3, TIMES + 1):
        append_until(storage, caps, updates, upper - 1, upper)
        flow.run(until=upper)
        for name, (read, _) in caps.items():  # every other reader lets go; compaction runs
            if read.frontier.less_equal(upper - 1):
                read.downgrade(Antichain([upper - 1]))
            storage.compact(name)
        held = storage.registered_readers("r")["dataflow:v"].frontier
        assert storage.state("r").since == held  # held exactly where the view needs it
    flow.close()
    again = maintain_view(storage, "v", PLAN, "out")  # after the inputs compacted
    again.run(until=TIMES)
    again.close()
    last = TIMES - 1
    read, write = storage.acquire_capabilities("out")
    got = storage.snapshot_table(read, last)
    from changeflow.collection import PTVC
    from changeflow.compute.evaluate import evaluate

    inputs = {}
    for name, ups in updates.items():
        inputs[name] = PTVC.empty(name=name)
        inputs[name].append(ups, Antichain([TIMES]))
    expected = evaluate(PLAN, {n: p.read(last) for n, p in inputs.items()}, last)
    rows = {tuple(r[c] for c in ("k", "count", "sum")): r["_diff"] for r in got.to_pylist()}
    assert rows == expected
    storage.close()
