"""Shards through Spark: DataFrame appends, snapshots and compaction against the Arrow path."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.errors import FrontierViolation, InvalidInput
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import SqliteConsensus

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])


def open_storage(root: Path) -> Storage:
    return Storage(SqliteConsensus(root / "c.sqlite"), Blob(str(root / "blob")))


def counts(rows) -> dict:
    return {(r["key"], r["value"], r["_time"]): r["_diff"] for r in rows}


updates = st.lists(
    st.tuples(st.sampled_from("abc"), st.integers(0, 3), st.integers(0, 9), st.integers(-2, 2)),
    max_size=40,
)


@settings(max_examples=8)
@given(batches=st.lists(updates, min_size=1, max_size=4), since=st.integers(0, 9))
def test_spark_snapshot_and_compaction_match_arrow(spark, tmp_path_factory, batches, since):
    storage = open_storage(tmp_path_factory.mktemp("spark"))
    read, write = storage.create("t", SCHEMA)
    for i, batch in enumerate(batches):
        rows = [((k, v), 10 * i + t, d) for k, v, t, d in batch]
        storage.append(write, rows, 10 * (i + 1))
    upper = 10 * len(batches)
    storage.downgrade(read, min(since, upper - 1))
    for as_of in {since, upper - 1}:
        if as_of < upper:
            expected = counts(storage.snapshot_table(read, as_of).to_pylist())
            assert counts(r.asDict() for r in storage.snapshot(read, as_of, spark).collect()) == (
                expected
            )
            unsummed = storage.snapshot(read, as_of, spark, summed=False).collect()
            assert summed(r.asDict() for r in unsummed) == expected
    before = {t: counts(storage.snapshot_table(read, t).to_pylist()) for t in range(since, upper)}
    storage.compact("t", spark=spark)
    after = {t: counts(storage.snapshot_table(read, t).to_pylist()) for t in range(since, upper)}
    assert after == before


def summed(rows) -> dict:
    """Diffs summed per row and time, the rows whose sum is zero left out."""
    out: dict = {}
    for r in rows:
        key = (r["key"], r["value"], r["_time"])
        out[key] = out.get(key, 0) + r["_diff"]
    return {k: d for k, d in out.items() if d}


def test_an_unsummed_snapshot_reads_positive_diffs_as_they_are(spark, tmp_path: Path) -> None:
    """Where every diff is positive (the footers say so) nothing is grouped: a row written
    twice comes twice; one negative diff anywhere and the whole is summed."""
    storage = open_storage(tmp_path)
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1), (("b", 2), 0, 2)], 1)
    storage.append(write, [(("a", 1), 1, 1)], 2)
    rows = [r.asDict() for r in storage.snapshot(read, 1, spark, summed=False).collect()]
    assert sorted((r["key"], r["_time"], r["_diff"]) for r in rows) == [
        ("a", 1, 1),
        ("a", 1, 1),
        ("b", 1, 2),
    ]
    storage.append(write, [(("b", 2), 2, -1)], 3)
    rows = [r.asDict() for r in storage.snapshot(read, 2, spark, summed=False).collect()]
    assert sorted((r["key"], r["_time"], r["_diff"]) for r in rows) == [("a", 2, 2), ("b", 2, 1)]


def test_append_a_spark_dataframe(spark, tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    read, write = storage.create("t", SCHEMA)
    frame = spark.createDataFrame(
        [("a", 1, 0, 1), ("b", 2, 3, 1), ("a", 1, 4, -1)],
        "key string, value int, _time long, _diff long",
    ).repartition(3)
    storage.append(write, frame, 5)
    state = storage.state("t")
    assert state.rows == 3 and len(state.batches[0].keys) >= 1
    assert counts(storage.snapshot_table(read, 4).to_pylist()) == {("b", 2, 4): 1}

    bad = spark.createDataFrame(
        [("a", "x", 5, 1)], "key string, value string, _time long, _diff long"
    )
    with pytest.raises(InvalidInput, match="column value is string"):
        storage.append(write, bad, 6)
    late = spark.createDataFrame([("a", 1, 9, 1)], "key string, value long, _time long, _diff long")
    with pytest.raises(FrontierViolation, match="time 9 is at or beyond the new upper"):
        storage.append(write, late, 6)
    assert storage.state("t") == state
    assert {m.key for m in storage.blob.list()} == state.referenced()


def test_a_lazy_snapshot_survives_compaction_and_garbage(spark, tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    read, write = storage.create("t", SCHEMA)
    for t in range(4):
        storage.append(write, [(("a", t), t, 1)], t + 1)
    frame = storage.snapshot(read, 3, spark)  # not evaluated yet
    storage.downgrade(read, 3)
    storage.compact("t")
    deleted = storage.collect_garbage("t", grace_seconds=0)
    assert deleted == 0  # the snapshot's hold keeps the old batches
    assert len(frame.collect()) == 4
    storage.state("t")  # the hold expires with the lease; then they go
    storage.clock = lambda: 10**10
    assert storage.collect_garbage("t", grace_seconds=0) == 4


def test_spark_reads_an_evolved_shard_as_arrow_does(spark, tmp_path: Path) -> None:
    """Older batches read NULL in an added column and without a dropped one, on Spark too;
    compaction on Spark writes the current columns."""
    storage = open_storage(tmp_path)
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1), (("b", 2), 0, 1)], 1)
    wider = SCHEMA.append(pa.field("extra", pa.string()))
    storage.evolve("t", wider)
    storage.append(write, [(("c", 3, "x"), 1, 1), (("a", 1, None), 1, -1)], 2)
    storage.evolve("t", pa.schema([wider.field("key"), wider.field("extra")]))

    def rows(frame) -> dict:
        return {(r["key"], r["extra"]): r["_diff"] for r in frame}

    want = {("b", None): 1, ("c", "x"): 1}
    assert rows(storage.snapshot_table(read, 1).to_pylist()) == want
    assert rows(r.asDict() for r in storage.snapshot(read, 1, spark).collect()) == want
    storage.downgrade(read, 1)
    storage.compact("t", spark=spark)
    assert rows(storage.snapshot_table(read, 1).to_pylist()) == want


def test_spark_filters_a_large_blob_by_its_dictionary(spark, tmp_path: Path) -> None:
    """A filter Spark pushes down reads a column's dictionary page: a blob whose dictionary
    is larger than 8 KiB is read whole (Parquet-java's LZ4_RAW reader failed on it)."""
    storage = open_storage(tmp_path)
    read, write = storage.create("t", SCHEMA)
    rows = [((f"key-{i % 5000:05d}-" + "x" * 20, i), 1, 1) for i in range(20_000)]
    storage.append(write, rows, 2)
    snapshot = storage.snapshot(read, 1, spark, summed=False)
    picked = snapshot.where("key = 'key-00042-xxxxxxxxxxxxxxxxxxxx'").collect()
    assert sorted(r["value"] for r in picked) == [42, 5042, 10042, 15042]
