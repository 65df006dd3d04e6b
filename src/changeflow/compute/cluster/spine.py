"""Arrangements on the executors: a collection as a few consolidated batches.

A batch is a Parquet folder under the blob root, written by the executors and read back cached,
so the driver holds only its location and row count, and a batch's lineage is a file scan (a
step never replays the history). A new batch is merged with the ones before it while they are
not more than twice its size, so the number of batches grows with the log of the collection and
each row is rewritten a logarithmic number of times (differential dataflow's spine).

A small step's changes come from the driver as Arrow: the driver writes them as one Parquet
file, and merges such a batch with the one before itself while the two stay small
(``LOCAL_MERGE_ROWS``, whoever wrote the one before), so a small step adds to a spine without
a Spark job.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass, field
from functools import reduce as fold

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from changeflow.compute.cluster import layout
from changeflow.compute.cluster.layout import partitioned
from changeflow.compute.spark_expr import name
from changeflow.spark import session_conf
from changeflow.storage.blob import Blob
from changeflow.updates import DIFF, TIME

LOCAL_MERGE_ROWS = 1_000_000  # batches the driver wrote are merged there up to this size
NEVER = 2**63 - 1  # a timed spine's earliest time when it holds nothing
_REST = "_rest"


@dataclass
class Batch:
    """One batch: its blob key (a Parquet folder) and rows."""

    key: str
    rows: int
    local: bool = False  # one Parquet file the driver wrote
    schema: str | None = None  # its Spark schema (JSON), so reading it infers nothing
    indexed: int = 0  # the partitions it is indexed into (see ``index``); 0: not indexed


@dataclass
class Spine:
    """A collection of ``width`` positional columns (with ``_time`` when ``timed``: updates
    waiting for a later step) as batches under ``prefix`` of the blob root. ``values`` are the
    columns summed per distinct row (``_diff``; or a reduce's running totals); a row whose
    values all sum to zero is dropped."""

    spark: SparkSession
    blob: Blob
    prefix: str
    width: int
    timed: bool = False
    values: tuple[str, ...] = (DIFF,)
    batches: list[Batch] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)  # merged away: deleted once not needed
    # a timed spine: every update it holds is at this time or later (None: not known)
    not_before: int | None = None
    # the columns its cached batches are hash-partitioned by, into ``parts`` partitions (a
    # probe by them shuffles only the change); () for none
    by: tuple[int, ...] = ()
    parts: int = 0
    indexes: bool = False  # are the batches Spark writes indexed by ``by`` (see ``index``)?
    # indexed batches written since :func:`index.prepare` last made their mapped copies
    unprepared: list[str] = field(default_factory=list)
    _frames: dict[str, DataFrame] = field(default_factory=dict)
    _files: dict[str, list[str]] = field(default_factory=dict)  # a batch's Parquet files
    _tables: dict[str, pa.Table] = field(default_factory=dict)  # batches :meth:`table` read

    def rows(self) -> int:
        return sum(b.rows for b in self.batches)

    def frame(self) -> DataFrame | None:
        """The collection (unconsolidated across batches), or None when it holds nothing."""
        frames = [self._read(b) for b in self.batches]
        return fold(DataFrame.unionByName, frames) if frames else None

    def table(self) -> pa.Table | None:
        """A small collection read by the driver (unconsolidated), or None when it is empty;
        its batches are kept there until merged away, so a step reads only the new one."""
        tables = [self._tables.setdefault(b.key, self._table(b)) for b in self.batches]
        return pa.concat_tables(tables, promote_options="permissive") if tables else None

    def add(self, delta: DataFrame | pa.Table) -> None:
        """Add ``delta`` (positional columns, the values; and ``_time`` when timed; a frame, or
        a small step's Arrow table) as a batch, then merge while the batch before is not more
        than twice the size of the last."""
        self._append(delta)
        while len(self.batches) > 1 and self.batches[-2].rows <= 2 * self.batches[-1].rows:
            last, before = self.batches.pop(), self.batches.pop()
            merged: DataFrame | pa.Table
            if (last.local or before.local) and last.rows + before.rows <= LOCAL_MERGE_ROWS:
                tables = [self._table(b) for b in (before, last)]
                merged = pa.concat_tables(tables, promote_options="permissive")
            else:
                merged = self._read(before).unionByName(self._read(last))
            self._append(merged, consolidate=True)
            self.retired += [before.key, last.key]

    def take_due(self, upper: int) -> pa.Table | None:
        """A timed spine's updates before ``upper`` (None when it is known to hold none: no
        job), read with one job that also learns the earliest time of the others."""
        if not self.batches or (self.not_before is not None and self.not_before >= upper):
            return None
        held = self.frame()
        assert held is not None
        columns = self._columns()
        due = held.where(F.col(TIME) < upper).select(*columns, DIFF, F.lit(False).alias(_REST))
        nulls = [F.lit(None).cast(held.schema[c].dataType).alias(c) for c in columns[:-1]]
        rest = held.where(F.col(TIME) >= upper).agg(F.min(TIME).alias(TIME))
        zero = F.lit(0).cast("bigint").alias(DIFF)
        rest = rest.select(*nulls, TIME, zero, F.lit(True).alias(_REST))
        table = due.unionByName(rest).toArrow()
        marks = table.column(_REST)
        earliest = table.filter(marks).column(TIME)[0].as_py()
        self.not_before = NEVER if earliest is None else earliest
        return table.filter(pc.invert(marks)).drop_columns([_REST])

    def replace(self, collection: DataFrame | None) -> None:
        """Hold exactly ``collection`` (for waiting updates, rewritten each step)."""
        self.retired += [b.key for b in self.batches]
        self.batches, self.not_before = [], None
        if collection is not None:
            self._append(collection)

    def forget_retired(self) -> None:
        """Uncache the batches merged away and delete those this spine wrote (after the state
        that names them is gone). A batch loaded from a checkpoint is left in place: another
        replica resumed from the same checkpoint may still read it."""
        for key in self.retired:
            self._tables.pop(key, None)
            self._files.pop(key, None)
            frame = self._frames.pop(key, None)
            if frame is not None:
                frame.unpersist()
            if key.startswith(self.prefix + "/"):
                self.blob.delete_dir(key)
        self.retired = []

    def drop(self) -> None:
        """Uncache every batch (their files stay for a restart)."""
        for frame in self._frames.values():
            frame.unpersist()
        self._frames.clear()
        self._tables.clear()
        self._files.clear()

    def to_json(self) -> list[list]:
        return [[b.key, b.rows, b.local, b.schema, b.indexed] for b in self.batches]

    def load(self, batches: list[list]) -> None:
        self.batches = [Batch(*b) for b in batches]
        self.unprepared = [b.key for b in self.batches if b.indexed and self.blob.local]

    def _columns(self) -> list[str]:
        return [name(i) for i in range(self.width)] + ([TIME] if self.timed else [])

    def _append(self, delta: DataFrame | pa.Table, consolidate: bool = False) -> None:
        """Write ``delta`` as a batch. Only a merge sums its rows per distinct row on Spark (a
        shuffle): a batch need not be consolidated, as its readers sum, and the merges cancel
        what a step retracts."""
        if isinstance(delta, pa.Table):
            self._append_local(delta)
            return
        columns = self._columns()
        nonzero = fold(lambda a, b: a | b, (F.col(v) != 0 for v in self.values))
        if consolidate:
            sums = [F.sum(v).alias(v) for v in self.values]
            summed = delta.groupBy(*columns).agg(*sums).where(nonzero)
        else:
            summed = delta.select(*columns, *self.values).where(nonzero)
        key = f"{self.prefix}/{uuid.uuid4().hex}"
        indexed = self.parts if self.indexes else 0
        if indexed:  # a probe looks it up as written, with no rewrite at its first
            self.write_indexed(summed, key)
        else:
            summed.write.parquet(self.blob.uri(key))
        rows = self._rows_written(key)
        if rows:
            self.batches.append(Batch(key, rows, False, summed.schema.json(), indexed))
        else:
            self._files.pop(key, None)
            self.blob.delete_dir(key)

    def _append_local(self, delta: pa.Table) -> None:
        """Write an Arrow batch from the driver, summed per distinct row where Arrow can group
        its columns (cheap here)."""
        columns = self._columns()
        with contextlib.suppress(pa.ArrowNotImplementedError):
            summed = delta.group_by(columns).aggregate([(v, "sum") for v in self.values])
            delta = summed.select([*columns, *(f"{v}_sum" for v in self.values)])
            delta = delta.rename_columns([*columns, *self.values])
        nonzero = fold(pc.or_, (pc.not_equal(delta[v], 0) for v in self.values))
        delta = delta.filter(pc.fill_null(nonzero, False))
        if delta.num_rows:
            key = f"{self.prefix}/{uuid.uuid4().hex}"
            self.blob.set_table(f"{key}/part-0.parquet", delta)
            schema = from_arrow_schema(delta.schema, prefer_timestamp_ntz=True).json()
            self.batches.append(Batch(key, delta.num_rows, True, schema))

    def _table(self, batch: Batch) -> pa.Table:
        """A small batch read by the driver (its Parquet parts: one if the driver wrote it), in
        the Arrow form of its Spark schema (Spark may write a timestamp as INT96)."""
        kept = self._tables.get(batch.key)
        if kept is not None:
            return kept
        parts = sorted(m.key for m in self.blob.list(batch.key) if m.key.endswith(".parquet"))
        assert parts, f"batch {batch.key} is missing"
        tables = [pq.read_table(pa.BufferReader(self.blob.get(k))) for k in parts]
        table = pa.concat_tables(tables, promote_options="permissive")
        if batch.schema is None:
            return table
        schema = to_arrow_schema(StructType.fromJson(json.loads(batch.schema)), timezone="UTC")
        return table.select(schema.names).cast(schema)

    def write_indexed(self, frame: DataFrame, key: str) -> None:
        """Write ``frame`` at ``key`` indexed by ``by`` (see ``layout``)."""
        layout.write_indexed(frame, self.by, self.parts, self.blob.uri(key))
        if self.blob.local:
            self.unprepared.append(key)

    def files(self, key: str) -> list[str]:
        """The paths of the Parquet files of the batch at ``key`` (listed once: a batch does
        not change)."""
        files = self._files.get(key)
        if files is None:
            names = (m.key for m in self.blob.list(key))
            files = self._files[key] = [self.blob.path(k) for k in names if _parquet(k)]
        return files

    def _rows_written(self, key: str) -> int:
        """The rows of a written batch, from its Parquet footers (no Spark job)."""
        fs = self.blob.fs
        return sum(pq.read_metadata(f, filesystem=fs).num_rows for f in self.files(key))

    def _read(self, batch: Batch) -> DataFrame:
        frame = self._frames.get(batch.key)
        if frame is None:
            reader = self.spark.read
            if batch.schema is not None:
                reader = reader.schema(StructType.fromJson(json.loads(batch.schema)))
            frame = self.persisted(reader.parquet(self.blob.uri(batch.key)), kept=True)
            self._frames[batch.key] = frame
        return frame

    def persisted(self, frame: DataFrame, kept: bool = False) -> DataFrame:
        """``frame`` persisted, partitioned as this spine's batches are (planned without
        adaptive execution, which would hide the partitioning): a join over it and its write
        to this spine then share that one shuffle. A frame read within one step is cached
        uncompressed (cheaper to make: 10% of a hydration's executor CPU, measured); one
        ``kept`` for many (a batch) compressed."""
        settings = {"spark.sql.adaptive.enabled": "false"} if self.by else {}
        if not kept:
            settings["spark.sql.inMemoryColumnarStorage.compressed"] = "false"
        with session_conf(self.spark, settings):
            if self.by:
                frame = partitioned(frame, self.by, self.parts)
            return frame.persist(StorageLevel.MEMORY_AND_DISK)


def _parquet(key: str) -> bool:
    """Is ``key`` a batch's Parquet file (not a file Spark's readers skip)?"""
    return key.endswith(".parquet") and not key.rsplit("/", 1)[-1].startswith("_")
