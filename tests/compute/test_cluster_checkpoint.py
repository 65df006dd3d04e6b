"""A cluster-tier dataflow's batches: what a crashed or stopped incarnation left and nobody
reads is swept; what the checkpoint or a live incarnation reads stays; an incarnation whose
lease expired is stopped before it reads a batch that may be gone."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from changeflow.compute import plan as P
from changeflow.compute.cluster import checkpoint
from changeflow.compute.dataflow import maintain_view
from changeflow.compute.types import INT4, Column
from changeflow.errors import CapabilityError
from changeflow.storage import Storage
from changeflow.storage.consensus import update_json
from changeflow.updates import DIFF

sys.path.insert(0, str(Path(__file__).parent))
from test_dataflow import TIMES, append_until, check_every_time, load_inputs, open_storage  # noqa: E402

pytestmark = pytest.mark.spark

R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))
PLAN = P.Join((R, S), ((0, 2),))
HISTORY = {
    "r": [((i % 3, i), i % TIMES, 1) for i in range(30)] + [((1, 4), 5, -1)],
    "s": [((i % 3, -i), i % TIMES, 1) for i in range(12)],
}


def _on_disk(storage: Storage) -> set[str]:
    """Every batch under the dataflow's folder."""
    folder = checkpoint.PREFIX.format("v")
    keys = (m.key[len(folder) + 1 :].split("/") for m in storage.machine.blob.list(folder))
    return {f"{folder}/{'/'.join(p[:4])}" for p in keys if len(p) >= 5}


def _flow(spark, storage: Storage):
    return maintain_view(storage, "v", PLAN, "out", spark=spark, cluster=True)


def test_batches_nobody_reads_are_swept_and_the_checkpoints_stay(
    spark, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("CHANGEFLOW_CLUSTER_STEP_ROWS", "1000000")
    storage = open_storage(tmp_path)
    caps = load_inputs(storage, HISTORY, [])
    append_until(storage, caps, HISTORY, 0, 1)
    maintain_view(storage, "v", PLAN, "out").close()
    storage.register_reader("out", "test:checker", "the test reads every time")
    first = _flow(spark, storage)
    for t in (1, 2):
        append_until(storage, caps, HISTORY, t, t + 1)
        first.run(until=t + 1)
    # a crash between writing a batch and recording it leaves the batch unnamed
    orphan = f"{first.prefix}/0/in0/{uuid.uuid4().hex}"
    table = pa.table({"c0": [7], "c1": [7], DIFF: pa.array([1], pa.int64())})
    storage.machine.blob.set_table(f"{orphan}/part-0.parquet", table)
    named = checkpoint.batch_keys(checkpoint.load(storage, "v"))
    assert orphan in _on_disk(storage) and named <= _on_disk(storage)
    first.close()  # its lease ends, as a crashed process's expires

    second = _flow(spark, storage)
    assert second.resumed and second.reads  # it reads the first incarnation's batches
    assert orphan not in _on_disk(storage) and named <= _on_disk(storage)
    for t in range(3, TIMES):
        append_until(storage, caps, HISTORY, t, t + 1)
        second.run(until=t + 1)
    second.close()

    third = _flow(spark, storage)  # the sweep at its start leaves only what the checkpoint names
    assert _on_disk(storage) == checkpoint.batch_keys(checkpoint.load(storage, "v"))
    third.close()
    check_every_time(storage, PLAN, HISTORY, "out", TIMES)


def test_a_sweep_waits_while_an_incarnation_loads_the_checkpoint(spark, tmp_path) -> None:
    storage = open_storage(tmp_path)
    folder = checkpoint.PREFIX.format("v")
    table = pa.table({"c0": [1], DIFF: pa.array([1], pa.int64())})
    storage.machine.blob.set_table(f"{folder}/gone/0/in0/b1/part-0.parquet", table)
    checkpoint.lease(storage, "v", "loading", None)  # it has not said what it reads yet
    assert checkpoint.sweep(storage, "v") == 0 and _on_disk(storage)
    checkpoint.lease(storage, "v", "loading", [])
    assert checkpoint.sweep(storage, "v") == 1 and not _on_disk(storage)


def test_an_incarnation_whose_lease_expired_is_stopped(spark, tmp_path) -> None:
    storage = open_storage(tmp_path)
    checkpoint.lease(storage, "v", "slow", None)
    checkpoint.lease(storage, "v", "slow", [])  # renewed in time
    update_json(
        storage.consensus,
        checkpoint.LEASES.format("v"),
        lambda leases: {k: {**v, "expires": 0} for k, v in leases.items()},
    )
    with pytest.raises(CapabilityError, match="lease .* expired"):
        checkpoint.lease(storage, "v", "slow", [])
