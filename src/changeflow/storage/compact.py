"""Compaction: merge adjacent batches into one, advanced to ``since`` and consolidated, and
swap it in by one compare-and-set, so reads are correct throughout."""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from changeflow.errors import ChangeflowError
from changeflow.failpoints import failpoint
from changeflow.storage.frames import consolidate, frame_schema
from changeflow.storage.machine import Machine
from changeflow.storage.state import Batch, ShardState
from changeflow.time import to_bound
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SPARK_ROWS = 1_000_000  # compaction above this many rows runs on Spark
MAX_BATCHES = 16  # beyond this many batches, appends merge a run of small ones
MERGE_RUN = 8  # how many adjacent batches such a merge takes
SMALL_ROWS = 50_000  # ... when they hold at most this many rows together


def compact(machine: Machine, name: str, spark: SparkSession | None = None) -> tuple[int, int]:
    """Merge all the shard's batches into one; return the rows before and after.

    Small shards are merged with pyarrow, large ones (or whenever ``spark`` is given) on Spark.
    """
    state = machine.load(machine.entry(name).id)
    run = state.batches
    if not run or (len(run) == 1 and run[0].since == state.since):
        return state.rows, state.rows
    return merge(machine, state, run, spark)


def tidy(machine: Machine, state: ShardState) -> None:
    """Keep the number of batches small: merge the newest run of small adjacent batches.

    Runs after each append, so many small appends cost amortised O(log n) rewriting and the
    state stays small. A failure here leaves the (durable) append as it is.
    """
    batches = state.batches
    if len(batches) <= MAX_BATCHES:
        return
    for at in range(len(batches) - MERGE_RUN, -1, -1):
        run = batches[at : at + MERGE_RUN]
        if sum(b.rows for b in run) <= SMALL_ROWS:
            with contextlib.suppress(OSError, ChangeflowError):
                merge(machine, state, run)
            return


def merge(
    machine: Machine,
    state: ShardState,
    run: tuple[Batch, ...],
    spark: SparkSession | None = None,
) -> tuple[int, int]:
    """Replace the adjacent batches ``run`` by one, advanced to ``since`` and consolidated."""
    since = state.since
    s = to_bound(since, "since")
    before = sum(b.rows for b in run)
    if s is None:
        keys, rows = (), 0
    elif before > SPARK_ROWS or spark is not None:
        keys, rows = _merge_on_spark(machine, state, run, s, spark)
    else:
        table = consolidate(machine.read(state, run), s)
        keys, rows = (), table.num_rows
        if rows:
            keys = (f"{state.id}/{uuid.uuid4().hex}.parquet",)
            machine.blob.set_table(keys[0], table)
    batch = Batch(run[0].lower, run[-1].upper, since, keys, rows)
    failpoint("compact.after_blob")
    if not machine.swap(state.id, run, batch):  # merged by someone else: ours is garbage
        machine.delete_keys(keys)
        return before, before
    failpoint("compact.after_cas")
    return before, rows


def _merge_on_spark(
    machine: Machine,
    state: ShardState,
    run: tuple[Batch, ...],
    since: int,
    spark: SparkSession | None,
) -> tuple[tuple[str, ...], int]:
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    spark = spark or machine.spark()
    schema = from_arrow_schema(frame_schema(state.schema))
    blob = machine.blob
    frame = spark.read.schema(schema).parquet(*(blob.uri(k) for b in run for k in b.keys))
    advanced = frame.withColumn(TIME, F.greatest(F.col(TIME), F.lit(since).cast("long")))
    data = state.schema.names
    summed = advanced.groupBy(*data, TIME).agg(F.sum(DIFF).alias(DIFF)).where(F.col(DIFF) != 0)
    keys = write_parts(machine, summed.select(*schema.names), state.id)
    rows = sum(pq.read_metadata(blob.path(k), filesystem=blob.fs).num_rows for k in keys)
    if not rows:
        discard_parts(machine, keys)
        return (), 0
    return keys, rows


def write_parts(machine: Machine, frame: DataFrame, gid: str) -> tuple[str, ...]:
    """Write ``frame`` as Parquet blobs under a new folder of shard ``gid``; return their keys.

    Spark's own markers and checksums are removed: a batch is exactly its Parquet parts.
    """
    blob = machine.blob
    folder = f"{gid}/{uuid.uuid4().hex}"
    frame.write.parquet(blob.uri(folder), compression="snappy")
    keys = []
    for meta in blob.list(folder):
        if meta.key.rsplit("/", 1)[-1].startswith(("_", ".")):
            blob.delete(meta.key)
        else:
            keys.append(meta.key)
    return tuple(sorted(keys))


def discard_parts(machine: Machine, keys: tuple[str, ...]) -> None:
    """Delete parts written by :func:`write_parts` that no batch will hold, and their folders."""
    machine.delete_keys(keys)
    for folder in {key.rsplit("/", 1)[0] for key in keys}:
        machine.blob.delete_dir(folder)
