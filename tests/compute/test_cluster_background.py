"""A cluster-tier hydration answers once its output is written: its arrangements are written
after, in a thread, and the next step waits for them; if writing them fails, every step says
so and the dataflow still closes."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from changeflow.compute import plan as P
from changeflow.compute.dataflow import maintain_view
from changeflow.compute.types import INT4, Column
from changeflow.errors import InvalidInput
from changeflow.failpoints import hooked

sys.path.insert(0, str(Path(__file__).parent))
from test_dataflow import append_until, check_every_time, load_inputs, open_storage  # noqa: E402

pytestmark = pytest.mark.spark

R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))
JOIN = P.Join((R, S), ((0, 2),))
HISTORY = {
    "r": [((k, k), 0, 1) for k in range(5)] + [((1, 7), 1, 1), ((2, 2), 2, -1)],
    "s": [((k, 10 * k), 0, 1) for k in range(5)] + [((1, 5), 2, 1)],
}


def _inputs(tmp_path: Path):
    storage = open_storage(tmp_path)
    caps = load_inputs(storage, HISTORY, [])
    append_until(storage, caps, HISTORY, 0, 1)
    maintain_view(storage, "v", JOIN, "out").close()  # creates the output shard
    storage.register_reader("out", "test:checker", "the test reads every time")
    return storage, caps


def test_the_output_is_read_while_the_arrangements_are_written(spark, tmp_path: Path) -> None:
    storage, caps = _inputs(tmp_path)
    read = threading.Event()
    with hooked("cluster.arrange", lambda: read.wait(120) or pytest.fail("never read")):
        flow = maintain_view(storage, "v", JOIN, "out", spark=spark, cluster=True)
        flow.run(until=1)  # the arrangements wait for the read below
        check_every_time(storage, JOIN, HISTORY, "out", 1)
        read.set()
        for t in (1, 2):
            append_until(storage, caps, HISTORY, t, t + 1)
            flow.run(until=t + 1)
    flow.close()
    check_every_time(storage, JOIN, HISTORY, "out", 3)


def test_arrangements_that_fail_stop_every_step(spark, tmp_path: Path) -> None:
    storage, caps = _inputs(tmp_path)

    def fail() -> None:
        raise OSError("the blob root refused a write")

    with hooked("cluster.arrange", fail):
        flow = maintain_view(storage, "v", JOIN, "out", spark=spark, cluster=True)
        flow.run(until=1)
    append_until(storage, caps, HISTORY, 1, 2)
    for _ in range(2):
        with pytest.raises((OSError, InvalidInput), match="refused a write"):
            flow.step()
    flow.close()
