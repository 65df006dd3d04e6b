"""Ingest a folder of CDC v2 files into an existing shard, resuming at the shard's upper.

The files are decoded by the columnar reader (in audit mode, so every contradiction in them is
found; Parquet rows are deduplicated as Arrow tables, not one tuple at a time) and every
frontier advance is turned into rows of the shard's schema before anything is appended: a bad
file, a conflict or data that does not fit the shard appends nothing. Advances the shard's
upper covers already are skipped (a rerun appends nothing); consecutive advances are grouped
into one append, as the main job does. The decoded history is held in memory.

:func:`ingest_spark` does the same data-parallel for large folders: Spark's reader decodes the
files (:func:`~changeflow.cdc.spark.read.read_cdc`, the same answer and errors) and the
executors write the updates beyond the shard's upper as its blobs, in one append; the driver
sees the progress statements only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from changeflow.cdc.columnar import ColumnarReader
from changeflow.cdc.files import CdcSource, open_source
from changeflow.cdc.resume import Extent
from changeflow.errors import InvalidInput, with_context
from changeflow.storage.consensus import read_json, update_json
from changeflow.storage.frames import to_frame
from changeflow.storage.shard import Storage, WriteCapability
from changeflow.time import Antichain, Product, Time, time_to_json, to_bound
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# One append takes consecutive frontier advances until it holds this many of them or updates.
APPEND_ADVANCES, APPEND_UPDATES = 50, 20_000
PARTITION_BYTES = 64 << 20  # CDC file bytes per shuffle partition on Spark

Advance = tuple[list[tuple[Any, Time, int]], Antichain]


@dataclass
class IngestStats:
    """What an ingest did: appends made, frontier advances and updates they held, and the
    shard's upper before (``start``) and after (``upper``)."""

    shard: str
    start: Antichain
    upper: Antichain
    appends: int = 0
    advances: int = 0
    updates: int = 0
    skipped: int = 0  # advances the shard held already


def ingest(
    storage: Storage,
    shard: str,
    paths: Iterable[str | Path],
    fmt: str | None = None,
    on_progress: Callable[[IngestStats], None] | None = None,
    resume: bool = False,
) -> IngestStats:
    """Append the history of the CDC v2 files under ``paths`` to ``shard`` beyond its upper.

    Data columns are matched to the shard's schema by name. ``on_progress`` is called with the
    stats after every append. With ``resume``, the files that earlier resuming ingests into the
    shard retired (:func:`retired_files`) are not read again.
    """
    state = storage.state(shard)
    source, start, files = _live(storage, shard, open_source(paths, fmt), state.upper, resume)
    stats = IngestStats(shard, state.upper, state.upper)
    if not source.files:
        return stats
    reader = ColumnarReader(audit=True)
    rows = not source.codec.json_data  # row formats: data are row tuples, even of one column
    extents: dict[Path, Extent | None] = {}
    advances = [  # every file read and checked first
        (reader.triples(table, rows), frontier)
        for message in source.tables(start, extents)
        for table, frontier in reader.feed(message)
    ]
    _check_int_times(advances)
    to_row = _row_maker(source, state.schema, shard)
    write_cap = _write_capability(storage, shard)
    try:
        held = write_cap.frontier
        stats = IngestStats(shard, held, held)
        todo = _beyond(advances, held)
        stats.skipped = len(advances) - len(todo)
        appends = [(_table(g, state.schema, to_row, shard), f, n) for g, f, n in _groups(todo)]
        for table, frontier, n in appends:
            storage.append(write_cap, table, frontier)
            stats.appends, stats.advances = stats.appends + 1, stats.advances + n
            stats.updates, stats.upper = stats.updates + table.num_rows, frontier
            if on_progress is not None:
                on_progress(stats)
    finally:
        storage.drop(write_cap)
    if resume:
        _retire(storage, shard, files, extents, stats.upper)
    return stats


def ingest_spark(
    storage: Storage,
    shard: str,
    paths: Iterable[str | Path],
    fmt: str | None,
    spark: SparkSession,
    resume: bool = False,
) -> IngestStats:
    """:func:`ingest` on Spark: the updates never come to the driver. Its shuffles get a
    partition per :data:`PARTITION_BYTES` of files (at least one per core), not Spark's 200."""
    from changeflow.cdc.spark.read import file_extents
    from changeflow.spark import session_conf

    state = storage.state(shard)
    source, start, files = _live(storage, shard, open_source(paths, fmt), state.upper, resume)
    if not source.files:
        return IngestStats(shard, state.upper, state.upper)
    size = sum(f.stat().st_size for f in source.files)
    cores = spark.sparkContext.defaultParallelism
    partitions = str(max(cores, size // PARTITION_BYTES))
    with session_conf(spark, {"spark.sql.shuffle.partitions": partitions}):
        stats = _ingest_spark(storage, shard, source, start, spark)
        if resume:
            extents = file_extents(spark, source.files, fmt)
            _retire(storage, shard, files, extents, stats.upper)
    return stats


def _ingest_spark(
    storage: Storage, shard: str, source: CdcSource, start: int | None, spark: SparkSession
) -> IngestStats:
    from changeflow.cdc.spark.read import read_cdc

    schema = storage.state(shard).schema
    frame, frontier = read_cdc(spark, source.files, source.format, start)
    try:
        _check_int_times([([], frontier)])
        rows = _spark_rows(frame, schema, shard, bool(source.codec.json_data))
        write_cap = _write_capability(storage, shard)
        try:
            held = write_cap.frontier
            stats = IngestStats(shard, held, held)
            if frontier <= held:
                stats.skipped = 1
                return stats
            lower = to_bound(held)
            assert lower is not None
            from pyspark.sql import functions as F

            try:
                storage.append(write_cap, rows.where(F.col(TIME) >= lower), frontier)
            except InvalidInput as e:
                note = "the CDC files do not fit the shard; nothing was appended"
                raise with_context(e, note) from None
            stats.appends, stats.advances, stats.upper = 1, 1, frontier
        finally:
            storage.drop(write_cap)
    finally:
        frame.unpersist()
    return stats


def _spark_rows(frame: DataFrame, schema: pa.Schema, shard: str, json_data: bool) -> DataFrame:
    """The decoded updates as the shard's columns, ``_time`` and ``_diff``. JSON data must have
    exactly the shard's keys, with values of its types (checked before anything is written)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    names = schema.names
    if not json_data:
        columns = [c for c in frame.columns if c not in (TIME, DIFF)]
        if not columns:  # only progress files were read: no updates, no columns
            fields = from_arrow_schema(schema).fields
            return frame.select(
                *(F.lit(None).cast(f.dataType).alias(f.name) for f in fields), TIME, DIFF
            )
        if sorted(columns) != sorted(names):
            raise InvalidInput(
                f"the CDC files' data columns {columns} are not shard {shard!r}'s columns "
                f"{names}: nothing was appended"
            )
        return frame.select(*names, TIME, DIFF)
    data = F.col(frame.columns[0])
    keys = F.sort_array(F.json_object_keys(data))
    wrong = frame.where(keys != F.array(*(F.lit(n) for n in sorted(names)))).limit(1).collect()
    if wrong:
        raise InvalidInput(
            f"an update at time {wrong[0][TIME]} has data {wrong[0][0]}; shard {shard!r} has "
            f"columns {names}: nothing was appended"
        )
    parsed = F.from_json(data, from_arrow_schema(schema), {"mode": "FAILFAST"}).alias("_row")
    values = frame.select(parsed, TIME, DIFF)
    return values.select(*(F.col(f"_row.{n}").alias(n) for n in names), TIME, DIFF)


RETIRED = "ingest-retired/{}"  # in consensus, per shard: the files its ingests retired


def retired_files(storage: Storage, shard: str) -> dict[str, list[int]]:
    """The files the resuming ingests into ``shard`` have *retired*: those that hold nothing
    at or beyond its upper (:mod:`changeflow.cdc.resume`), each with the size and modification
    time it had. Another ingest reads only the other files, resumed at the shard's upper, so it
    costs what arrived since, after a restart too; a retired file that changes is read again."""
    return read_json(storage.consensus, RETIRED.format(shard)) or {}


def forget_retired(storage: Storage, shard: str) -> None:
    """Forget the files retired into ``shard`` (it is dropped)."""
    update_json(storage.consensus, RETIRED.format(shard), lambda old: old and {})


def _live(
    storage: Storage, shard: str, source: CdcSource, upper: Antichain, resume: bool
) -> tuple[CdcSource, int | None, dict[str, list[int]]]:
    """The source cut to the files not retired, the time to resume at (none unless
    ``resume``) and the files' sizes and modification times."""
    if not resume:
        return source, None, {}
    retired, files = retired_files(storage, shard), {}
    for f in source.files:
        info = f.stat()
        files[str(f)] = [info.st_size, info.st_mtime_ns]
    live = [f for f in source.files if retired.get(str(f)) != files[str(f)]]
    start = to_bound(upper) if upper else None
    return replace(source, files=live), start, files


def _retire(
    storage: Storage,
    shard: str,
    files: dict[str, list[int]],
    extents: dict[Path, Extent | None],
    upper: Antichain,
) -> None:
    """Record as retired the files read whose extent lies below the shard's ``upper`` (after
    the appends: a file recorded is one whose updates the shard holds)."""
    bound = to_bound(upper) if upper else None
    done = {str(p): files[str(p)] for p, reach in extents.items() if reach and reach.below(bound)}
    if done:
        update_json(storage.consensus, RETIRED.format(shard), lambda old: {**(old or {}), **done})


def _write_capability(storage: Storage, shard: str) -> WriteCapability:
    """A write capability at the shard's upper (the read capability is let go at once)."""
    read_cap, write_cap = storage.acquire_capabilities(shard)
    storage.drop(read_cap)
    return write_cap


def _check_int_times(advances: Sequence[Advance]) -> None:
    """Shards hold int times: a product time in the history is an error before anything."""
    for _, frontier in advances:
        for t in frontier:
            if isinstance(t, Product):
                raise InvalidInput(
                    f"the CDC files hold product times ({time_to_json(t)}); shards hold int "
                    "times: nothing was appended"
                )


def _beyond(advances: Sequence[Advance], held: Antichain) -> list[Advance]:
    """The frontier advances past ``held`` (the shard's upper), without updates it holds."""
    return [
        ([u for u in updates if held.less_equal(u[1])], frontier)
        for updates, frontier in advances
        if not frontier <= held  # else every time before it is in the shard already
    ]


def _groups(advances: Iterable[Advance]) -> Iterator[tuple[list, Antichain, int]]:
    """Consecutive advances merged into ``(updates, last frontier, how many advances)``."""
    pending: list[tuple[Any, Time, int]] = []
    count, frontier = 0, Antichain()
    for updates, frontier in advances:
        pending += updates
        count += 1
        if count >= APPEND_ADVANCES or len(pending) >= APPEND_UPDATES:
            yield pending, frontier, count
            pending, count = [], 0
    if count:
        yield pending, frontier, count


def _row_maker(source: CdcSource, schema: pa.Schema, shard: str) -> Callable[[Any, Time], tuple]:
    """A function from a datum as the source holds it to a row in the shard's column order;
    for row formats the columns are checked here, for JSON data at every datum."""
    names = schema.names
    if source.codec.json_data:

        def from_json(data: Any, t: Time) -> tuple:
            value = json.loads(data)
            if not isinstance(value, dict) or value.keys() != set(names):
                raise InvalidInput(
                    f"an update at time {time_to_json(t)} has data {data}; shard {shard!r} "
                    f"has columns {names}: nothing was appended"
                )
            return tuple(value[c] for c in names)

        return from_json
    columns = source.columns if source.columns is not None else names  # None: no updates read
    if sorted(columns) != sorted(names):
        raise InvalidInput(
            f"the CDC files' data columns {columns} are not shard {shard!r}'s columns {names}: "
            "nothing was appended"
        )
    order = [columns.index(c) for c in names]
    return lambda data, t: tuple(data[i] for i in order)


def _table(
    updates: list, schema: pa.Schema, to_row: Callable[[Any, Time], tuple], shard: str
) -> pa.Table:
    """An update frame of the shard's schema, checked by storage's one validation rule (exact
    types or lossless casts, NOT NULL, integer times and diffs)."""
    try:
        return to_frame([(to_row(d, t), t, r) for d, t, r in updates], schema, shard)
    except InvalidInput as e:
        raise with_context(e, "the CDC files do not fit the shard; nothing was appended") from None
