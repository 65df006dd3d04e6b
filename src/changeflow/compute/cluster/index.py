"""Indexed probes: a small step looks its keys up in a join's arrangement instead of scanning it.

A join's arrangement is hash-partitioned by the columns its probe uses (``deltas.
arrangement_keys``), and the batches Spark writes for it are *indexed* (``layout``): one Parquet
file a partition, its rows sorted by the key's hash, with an Arrow IPC copy made beside it. A
small step's probe rows get the same hash and the partition their key hashes to, and each
executor task maps, for each partition its rows name, that partition's copies into memory,
finds each key's rows by binary search on the hashes and returns the candidate pairs; Spark
then keeps those whose keys are equal (a hash may collide). A step thus touches the rows its
keys match, whatever the arrangement's size. A batch the driver wrote (small, not partitioned)
is joined in each task by Arrow's hash join on the key columns.

Only a local blob root is mapped (an object store's batches are probed by a Spark join, as
are keys Spark hashes apart from how they compare: floating point, intervals, jsonb, arrays).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import LongType, StructField, StructType

from changeflow.compute.cluster import layout
from changeflow.compute.cluster.layout import HASH
from changeflow.compute.cluster.spine import Batch, Spine
from changeflow.compute.spark_expr import name
from changeflow.compute.types import (
    BOOL,
    BYTEA,
    DATE,
    INT2,
    INT4,
    INT8,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    SqlType,
)
from changeflow.spark import on_executors
from changeflow.updates import TIME

PART = "_p"  # the partition a probe row's key hashes to
# key types whose equal values Spark hashes alike (and compares by their bytes)
HASHABLE = frozenset(
    {BOOL, INT2, INT4, INT8, NUMERIC, TEXT, DATE, TIMESTAMP, TIMESTAMPTZ, UUID, BYTEA}
)
Pairs = tuple[pa.Table, np.ndarray, np.ndarray]  # held rows, and the matched rows of each side
_FILE = re.compile(r"part-(\d+)-")
_OPEN_FILES = 64  # mapped files a Python worker keeps open


def indexable(types: Sequence[SqlType]) -> bool:
    """Can a key of these types be looked up by its hash?"""
    return bool(types) and all(t in HASHABLE for t in types)


def partition_of(file: str) -> int | None:
    """The partition a written file holds (Spark names each file by its task's partition)."""
    found = _FILE.search(file.rsplit("/", 1)[-1])
    return int(found.group(1)) if found else None


def indexed(spine: Spine) -> Indexed | None:
    """``spine`` as an arrangement a probe looks up (None when it holds nothing, or is not
    partitioned, or not on a local blob root). A batch Spark wrote that is not indexed into the
    spine's partitions (written before they were, or for a cluster of another size) is
    rewritten so, with a Spark job, at its first probe."""
    if not spine.batches or not spine.by or not spine.blob.local:
        return None
    files: dict[int, list[str]] = {}
    local = []
    for n, batch in enumerate(spine.batches):
        if batch.local:
            local += spine.files(batch.key)
            continue
        if batch.indexed != spine.parts:
            spine.batches[n] = batch = _rewritten(spine, batch)
        for path in spine.files(batch.key):
            part = partition_of(path)
            if part is not None:
                files.setdefault(part, []).append(path)
    held = {p: tuple(f) for p, f in files.items()}
    schema = spine.batches[0].schema
    return Indexed(spine.blob.root, spine.parts, spine.by, held, tuple(local), schema)


def prepare(spark: SparkSession, spines: Sequence[Spine]) -> None:
    """Make the mapped copies of the indexed batches of ``spines`` that lack them (just written
    by Spark), one task a file, in the kind of Python workers a probe's tasks run in: two
    chained (a probe chains its lookups), which Spark then keeps for the probes that follow."""
    paths = []
    for spine in spines:
        live = {b.key for b in spine.batches}
        for key in spine.unprepared:
            if key in live:
                paths += [p for p in spine.files(key) if not os.path.exists(layout.copy_path(p))]
        spine.unprepared = []
    if not paths:
        return
    rows = spark.sparkContext.parallelize([(p,) for p in paths], len(paths))
    frame = spark.createDataFrame(rows, "path string")
    copied = frame.mapInArrow(_copied, frame.schema).mapInArrow(_passed, frame.schema)
    copied.collect()


def _copied(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for path in batch.column(0).to_pylist():
            layout.arrow_copy(path)
        yield batch


def _passed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def _rewritten(spine: Spine, batch: Batch) -> Batch:
    """``batch`` written again indexed, the old one retired."""
    reader = spine.spark.read
    if batch.schema is not None:
        reader = reader.schema(StructType.fromJson(json.loads(batch.schema)))
    frame = reader.parquet(spine.blob.uri(batch.key))
    key = f"{spine.prefix}/{uuid.uuid4().hex}"
    spine.write_indexed(frame, key)
    spine.retired.append(batch.key)
    return Batch(key, batch.rows, False, batch.schema or frame.schema.json(), spine.parts)


@dataclass(frozen=True)
class Indexed:
    """An arrangement a probe can look up: the files of its indexed batches by partition and
    its batches the driver wrote, as paths under the blob root ``root``."""

    root: str
    parts: int
    by: tuple[int, ...]
    files: dict[int, tuple[str, ...]]
    local: tuple[str, ...]
    schema: str | None = None  # its columns' Spark types (JSON)

    def side(self) -> StructType | None:
        """Its columns and their Spark types, when known."""
        return None if self.schema is None else StructType.fromJson(json.loads(self.schema))

    def probe(
        self,
        running: DataFrame,
        on: Sequence[str],
        side: StructType,
        offset: int,
        values: dict[str, str],
        time: str | None = None,
        new: pa.Table | None = None,
    ) -> DataFrame | None:
        """``running`` with each arranged row whose key may equal its columns ``on`` (the
        arrangement's ``by``, in order), the caller keeping those whose keys are equal: the
        arrangement's data columns (``side``'s ``c0``…) renamed from ``offset``, its
        ``values`` (``side``'s names to the output's), and ``time`` NULL (arranged rows have
        been there all along) when named; and each of the step's ``new`` rows of the input
        (its columns, ``_time``, ``_diff``: small, shipped with the tasks) whose key equals,
        at its time. None when ``on`` is not of the key's Spark types (a timestamp and a
        timestamp_ntz hash apart)."""
        theirs = {f.name: f.dataType for f in side.fields}
        mine = {f.name: f.dataType for f in running.schema.fields}
        if any(mine[c] != theirs.get(name(b)) for c, b in zip(on, self.by, strict=True)):
            return None  # Spark hashes the key apart from the arrangement's: it is scanned
        keys = [F.col(c) for c in on]
        hashed = running.withColumn(HASH, layout.key_hash(*keys))
        hashed = hashed.withColumn(PART, F.pmod(F.hash(*keys), F.lit(self.parts)))
        fields = {f.name: f for f in side.fields}
        width = len([n for n in fields if n not in values])
        added = [StructField(name(offset + i), fields[name(i)].dataType) for i in range(width)]
        added += [StructField(new, fields[old].dataType) for old, new in values.items()]
        added += [StructField(time, LongType())] if time else []
        out = StructType([*running.schema.fields, *added])
        tz = running.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
        arrow = to_arrow_schema(out, timezone=tz)
        look = _Lookup(self, tuple(on), width, tuple(values), time is not None, arrow, new)
        return hashed.mapInArrow(on_executors(look), out)


@dataclass(frozen=True)
class _Lookup:
    """The executors' side of :meth:`Indexed.probe` (pickled into each task)."""

    index: Indexed
    on: tuple[str, ...]
    width: int  # the arrangement's data columns
    values: tuple[str, ...]  # and the value columns taken from it
    timed: bool  # a NULL time after them
    out: pa.Schema
    new: pa.Table | None = None  # the step's own rows of the input, with their times

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = list(batches)
        if not got:
            return
        probe = pa.Table.from_batches(got)
        if not probe.num_rows:
            return
        parts = probe.column(PART).to_numpy()
        for p in np.unique(parts):
            rows = probe.filter(pa.array(parts == p))
            for path in self.index.files.get(int(p), ()):
                yield from self._matched(rows, *_hashed_pairs(rows, _mapped(path)))
        for path in self.index.local:
            yield from self._matched(probe, *self._equal_pairs(probe, _mapped(path)))
        if self.new is not None and self.new.num_rows:
            yield from self._matched(probe, *self._equal_pairs(probe, self.new), timed=True)

    def _equal_pairs(self, probe: pa.Table, held: pa.Table) -> Pairs:
        """Arrow's hash join of ``probe``'s key columns with those of a batch the driver wrote,
        NULL matching NULL (the caller compares the keys as its operator does)."""
        left: dict[str, pa.Array] = {"_i": pa.array(np.arange(probe.num_rows))}
        right: dict[str, pa.Array] = {"_j": pa.array(np.arange(held.num_rows))}
        for n, (mine, c) in enumerate(zip(self.on, self.index.by, strict=True)):
            ours = probe.column(mine).combine_chunks()
            theirs = held.column(name(c)).cast(ours.type).combine_chunks()
            left[f"_v{n}"], right[f"_v{n}"] = ours.is_valid(), theirs.is_valid()
            some = pc.drop_null(pa.concat_arrays([ours, theirs]))
            if len(some):  # NULLs stand in as one value, told apart by their flags
                left[f"_k{n}"] = pc.coalesce(ours, some[0])
                right[f"_k{n}"] = pc.coalesce(theirs, some[0])
        keys = [k for k in left if k != "_i"]
        pairs = pa.table(left).join(pa.table(right), keys=keys, join_type="inner")
        return held, pairs.column("_i").to_numpy(), pairs.column("_j").to_numpy()

    def _matched(
        self,
        probe: pa.Table,
        held: pa.Table,
        mine: np.ndarray,
        theirs: np.ndarray,
        timed: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        """The pairs of ``probe``'s and ``held``'s rows, their time ``held``'s when ``timed``
        (else NULL)."""
        if not len(mine):
            return
        left = probe.take(pa.array(mine))
        right = held.take(pa.array(theirs))
        count = len(mine)
        columns = [left.column(n) for n in self.out.names[: probe.num_columns - 2]]
        columns += [right.column(name(i)) for i in range(self.width)]
        columns += [right.column(v) for v in self.values]
        if self.timed:
            columns.append(right.column(TIME) if timed else pa.nulls(count, pa.int64()))
        table = pa.Table.from_arrays(
            [c.cast(f.type) for c, f in zip(columns, self.out, strict=True)], schema=self.out
        )
        yield from table.to_batches()


def _hashed_pairs(probe: pa.Table, held: pa.Table) -> Pairs:
    """The probe rows and the held rows whose hashes are equal, by binary search on the held
    hashes (sorted)."""
    hashes = held.column(HASH).to_numpy()
    wanted = probe.column(HASH).to_numpy()
    low = np.searchsorted(hashes, wanted, "left")
    counts = np.searchsorted(hashes, wanted, "right") - low
    mine = np.repeat(np.arange(len(wanted)), counts)
    starts = np.repeat(low - (np.cumsum(counts) - counts), counts)
    return held, mine, starts + np.arange(counts.sum())


_mapped_files: OrderedDict[str, pa.Table] = OrderedDict()


def _mapped(path: str) -> pa.Table:
    """The Parquet file at ``path`` as a table mapped from its Arrow IPC copy, kept open in
    this worker."""
    table = _mapped_files.get(path)
    if table is not None:
        _mapped_files.move_to_end(path)
        return table
    copy = layout.arrow_copy(path)
    table = pa.ipc.open_file(pa.memory_map(copy)).read_all()
    _mapped_files[path] = table
    while len(_mapped_files) > _OPEN_FILES:
        _mapped_files.popitem(last=False)
    return table
