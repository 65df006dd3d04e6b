"""A join's arrangements looked up by key: a small step's probe finds its keys' rows by their
hash in the indexed batches (and by Arrow's join in the batches the driver wrote), exact at
every time whatever the hashes collide on, and the batches stay readable by Spark."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType, TimestampNTZType

from changeflow.compute import plan as P
from changeflow.compute.cluster import dataflow as cluster_dataflow
from changeflow.compute.cluster import deltas as D
from changeflow.compute.cluster import index, layout
from changeflow.compute.dataflow import maintain_view
from changeflow.compute.types import FLOAT8, INT4, INT8, NUMERIC, TEXT, Column
from changeflow.updates import DIFF

sys.path.insert(0, str(Path(__file__).parent))
from test_dataflow import (  # noqa: E402
    TIMES,
    append_until,
    check_every_time,
    load_inputs,
    open_storage,
)

pytestmark = pytest.mark.spark

R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))
THREE_WAY = P.Join((R, S, R), ((0, 2), (3, 5)))  # r.k = s.k and s.w = r'.v
HISTORY = {
    "r": [((k, v), 0, 1) for k in range(6) for v in range(4)]
    + [((t % 6, 10 + t), t, 1) for t in range(1, TIMES)]
    + [((1, 2), 3, -1), ((2, 1), 4, 1), ((2, 1), 5, -1)],
    "s": [((t % 6, t % 4), t, 1) for t in range(TIMES)] + [((0, 0), 3, -1), ((5, 1), 2, 1)],
}


def _maintain(
    spark, root: Path, probes: list, plan: P.Plan = THREE_WAY, history: dict = HISTORY
) -> None:
    """Hydrate at 1, step the first half small (probing the arrangements by key), the rest
    wholly on Spark (reading the indexed batches as Parquet); check every time."""
    storage = open_storage(root)
    caps = load_inputs(storage, history, [])
    append_until(storage, caps, history, 0, 1)
    maintain_view(storage, "v", plan, "out").close()
    storage.register_reader("out", "test:checker", "the test reads every time")
    key = "CHANGEFLOW_CLUSTER_STEP_ROWS"
    old = os.environ.get(key)
    try:
        os.environ[key] = "1000000"
        flow = maintain_view(storage, "v", plan, "out", spark=spark, cluster=True)
        for t in range(1, TIMES):
            if t == TIMES // 2:
                os.environ[key] = "0"
                flow.close()  # a restart resumes from the checkpoint naming indexed batches
                flow = maintain_view(storage, "v", plan, "out", spark=spark, cluster=True)
                assert flow.resumed
            append_until(storage, caps, history, t, t + 1)
            flow.run(until=t + 1)
        flow.close()
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old
    assert probes, "no step looked an arrangement up by key"
    check_every_time(storage, plan, history, "out", TIMES)


def _counting(monkeypatch) -> list:
    probes: list = []
    probe = index.Indexed.probe

    def counted(self, *args, **kwargs):
        probes.append(self)
        return probe(self, *args, **kwargs)

    monkeypatch.setattr(index.Indexed, "probe", counted)
    return probes


def test_a_small_join_step_looks_its_keys_up(spark, tmp_path, monkeypatch) -> None:
    """Each lookup also pairs the step's own earlier changes of the input it probes."""
    probes = _counting(monkeypatch)
    paired: list = []
    counted = index.Indexed.probe

    def pairing(self, *args):
        paired.append(args[-1])  # the step's own rows of the input
        return counted(self, *args)

    monkeypatch.setattr(index.Indexed, "probe", pairing)
    _maintain(spark, tmp_path, probes)
    assert any(p.files for p in probes) and any(p.local for p in probes)
    assert any(new is not None and new.num_rows for new in paired)


@pytest.mark.parametrize(
    "plan",
    [
        P.TopK(R, (0,), (P.Order(1, True),), 2, 0),
        P.Join((R, S), ((0, 2),), "full"),
        P.Reduce(R, (0,), (P.Aggregate("count", P.col(R.schema, 1), distinct=True),)),
    ],
    ids=["topk", "full-join", "count-distinct"],
)
def test_a_keyed_step_looks_its_versions_keys_up(spark, tmp_path, monkeypatch, plan) -> None:
    _maintain(spark, tmp_path, _counting(monkeypatch), plan)


def test_a_reduce_looks_its_touched_groups_up(spark, tmp_path, monkeypatch) -> None:
    """Totals of many groups (more than the driver reads) are looked up by group, a NULL
    group among them."""
    monkeypatch.setattr(cluster_dataflow, "SMALL_TOTALS", 0)
    nulls = [((None, t), t, 1) for t in range(TIMES)] + [((None, 0), 4, -1)]
    history = {"r": HISTORY["r"] + nulls, "s": HISTORY["s"]}
    total = P.Reduce(R, (0,), (P.Aggregate("sum", P.col(R.schema, 1)), P.Aggregate("count")))
    _maintain(spark, tmp_path, _counting(monkeypatch), total, history)


def test_colliding_hashes_are_told_apart_by_the_keys(spark, tmp_path, monkeypatch) -> None:
    """Every key hashes to one of two values: the lookup finds many rows of other keys, and
    the join keeps only the equal ones."""
    monkeypatch.setattr(layout, "key_hash", lambda *keys: F.abs(F.hash(*keys)) % 2)
    _maintain(spark, tmp_path, _counting(monkeypatch))


def test_rows_are_paired_by_equal_hashes() -> None:
    held = pa.table({index.HASH: pa.array([1, 1, 2, 5, 5, 5], pa.int64())})
    probe = pa.table({index.HASH: pa.array([5, 3, 1, 1], pa.int64())})
    _, mine, theirs = index._hashed_pairs(probe, held)
    pairs = sorted(zip(mine.tolist(), theirs.tolist(), strict=True))
    assert pairs == [(0, 3), (0, 4), (0, 5), (2, 0), (2, 1), (3, 0), (3, 1)]
    _, mine, theirs = index._hashed_pairs(probe.slice(1, 1), held)
    assert len(mine) == len(theirs) == 0 and isinstance(mine, np.ndarray)


def test_a_mapped_copy_sits_beside_its_file_where_spark_does_not_read_it(spark, tmp_path) -> None:
    folder = tmp_path / "batch"
    spark.range(100).withColumnRenamed("id", "c0").write.parquet(str(folder))
    files = sorted(folder.glob("part-*.parquet"))
    mapped = index._mapped(str(files[0]))
    assert (folder / f"_{files[0].name}.arrow").exists()
    assert mapped.equals(pq.read_table(files[0]))
    assert index._mapped(str(files[0])) is mapped  # kept open in this process
    assert spark.read.parquet(str(folder)).count() == 100


def test_a_batch_the_driver_wrote_pairs_null_keys_with_null_keys() -> None:
    look = index._Lookup(index.Indexed("", 2, (0, 1), {}, ()), ("a", "b"), 2, (), False, None)
    probe = pa.table({"a": [1, None, 2, None], "b": ["x", "y", None, None]})
    held = pa.table({"c0": [None, 1, 2, 1, None], "c1": ["y", "x", None, "z", None]})
    _, mine, theirs = look._equal_pairs(probe, held)
    assert sorted(zip(mine.tolist(), theirs.tolist(), strict=True)) == [
        (0, 1),
        (1, 0),
        (2, 2),
        (3, 4),
    ]
    nothing = pa.table({"a": pa.nulls(2, pa.int64()), "b": pa.nulls(2, pa.string())})
    _, mine, theirs = look._equal_pairs(nothing, held.slice(4))
    assert sorted(zip(mine.tolist(), theirs.tolist(), strict=True)) == [(0, 0), (1, 0)]


def test_only_keys_spark_hashes_as_they_compare_are_looked_up() -> None:
    assert D.indexable(R.schema, (0,)) and D.indexable(R.schema, (0, 1))
    assert not D.indexable(R.schema, ())
    assert not D.indexable((Column("k", FLOAT8), Column("v", INT4)), (0,))
    wide = (Column("k", INT8), Column("t", TEXT), Column("n", NUMERIC))
    assert D.indexable(wide, (0, 1, 2))


def test_a_key_spark_hashes_apart_is_not_looked_up(spark) -> None:
    """A timestamp and a timestamp_ntz of the same wall time compare equal but hash apart: such
    a probe scans instead (None)."""
    side = StructType([StructField("c0", TimestampNTZType()), StructField(DIFF, LongType())])
    held = index.Indexed("", 2, (0,), {}, ())
    at = spark.sql("SELECT timestamp'2024-01-01 00:00:00' AS k, timestamp_ntz'2024-01-01' AS n")
    assert held.probe(at, ["k"], side, 0, {DIFF: DIFF}) is None
    assert held.probe(at, ["n"], side, 0, {DIFF: DIFF}) is not None


def test_batches_written_unindexed_are_rewritten_at_their_first_probe(
    spark, tmp_path, monkeypatch
) -> None:
    """Batches Spark wrote unindexed (before arrangements were indexed as written, or for a
    cluster of another size) are rewritten indexed when a probe first looks them up."""
    spine = cluster_dataflow.ClusterDataflow.spine

    def unindexed(self, *args, **layout):
        return spine(self, *args, **{**layout, "indexes": False})

    monkeypatch.setattr(cluster_dataflow.ClusterDataflow, "spine", unindexed)
    rewritten: list = []
    rewrite = index._rewritten
    monkeypatch.setattr(index, "_rewritten", lambda *a: rewritten.append(a) or rewrite(*a))
    probes = _counting(monkeypatch)
    _maintain(spark, tmp_path, probes)
    assert rewritten and any(p.files for p in probes)
