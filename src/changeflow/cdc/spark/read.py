"""Reading CDC v2 folders on Spark: the answer of the single-threaded reader, data-parallel.

:func:`read_cdc` gives the answer of the single-threaded :class:`CdcReader` (in audit mode) fed
every message of the files: the same updates, the same frontier, the same errors. Updates stay
in Spark: they are deduplicated per ``(data, time)`` and counted per time there, and only the
progress statements and one row of counts per time come to the driver, which runs the progress
part of the reference reader. Each format's Spark reader gives the update rows
(:meth:`Format.spark_read`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import reduce
from pathlib import Path
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from changeflow.cdc.files import open_source
from changeflow.cdc.formats.base import FILE, NOTE, PRODUCT_TIMES, Format, SparkRows, has_product
from changeflow.cdc.formats.jsonl import message_from_json
from changeflow.cdc.messages import Progress
from changeflow.cdc.reader import CdcReader
from changeflow.cdc.resume import Extent, cut_statements, further
from changeflow.errors import CdcConflict, InvalidInput, ProtocolViolation
from changeflow.spark import col, local_path, session_conf, spark_errors
from changeflow.time import Antichain
from changeflow.updates import DIFF, TIME

ROWS_PER_PARTITION = 1_000_000  # input rows per shuffle partition, at most, for large inputs
SPREAD = 64  # rows shuffle by time alone over this many times, none with more than 1/SPREAD


def read_cdc(
    spark: SparkSession,
    paths: Iterable[str | Path],
    format: str | None = None,
    start: int | None = None,
) -> tuple[DataFrame, Antichain]:
    """The consolidated updates of the CDC v2 files under ``paths`` and their complete frontier.

    The frame holds the updates at times not at or beyond the frontier: the data columns (for
    JSON lines one ``data`` column of canonical JSON text), then ``_time`` and ``_diff``. It is
    persisted; ``frame.unpersist()`` releases it. Contradicting statements raise
    :class:`CdcConflict` naming the time and the data; bad files raise :class:`InvalidInput`.
    ``start`` resumes the read there (:mod:`changeflow.cdc.resume`): the history before it is
    cut away.
    """
    paths = [str(p) for p in paths]
    source = open_source(paths, format)
    codec = source.codec
    with spark_errors(", ".join(paths)):
        raw = codec.spark_read(spark, source.files)
        if start:
            time = F.col(TIME)
            kept = raw.frame.where(time.isNull() | (time < 0) | (time >= start))
            cut = None if raw.statements is None else cut_statements(raw.statements, start)
            raw = replace(raw, frame=kept, statements=cut)
        by_time = raw.statements is not None and _spread_over_times(raw.statements, raw.rows)
        grouped = _group(raw.frame, raw.columns, raw.statements is None, raw.rows, by_time)
        try:
            frame, frontier = _read(grouped, raw, codec, source.files, by_time, start)
        except BaseException:
            grouped.unpersist()
            raise
        if frame is not grouped:
            grouped.unpersist()  # the frame holds its own copy now
    return frame, frontier


def _read(
    grouped: DataFrame,
    raw: SparkRows,
    codec: Format,
    files: list[Path],
    by_time: bool,
    start: int | None,
) -> tuple[DataFrame, Antichain]:
    """The complete updates of the grouped rows (persisted) and their frontier."""
    columns, text = raw.columns, codec.json_data  # the reader holds data as JSON text, or rows
    statements = raw.statements
    if statements is None:
        notes = grouped.filter(F.col(NOTE).isNotNull()).select(NOTE).collect()
        statements = [message_from_json(json.loads(n[0])) for n in notes]
        statements = cut_statements(statements, start)
    progress, announced = _progress(statements)
    times, counts, beyond = _counts(grouped, columns, text, progress, raw.frame, by_time)
    if len(times) and times[0] == -1:
        codec.bad_time(files)
    frontier = _complete(grouped, columns, text, times, counts, announced, progress)
    end = frontier.elements[0] if frontier else None
    incomplete = end is not None and (beyond or (len(times) > 0 and times[-1] >= end))
    if NOTE not in grouped.columns and not incomplete:
        return grouped, frontier  # every update read is complete: the frame as it is
    frame = grouped.filter(F.col(NOTE).isNull()) if NOTE in grouped.columns else grouped
    if incomplete:
        frame = frame.filter(F.col(TIME) < end)
    frame = frame.select(*map(col, columns), TIME, DIFF).persist()
    frame.count()
    return frame, frontier


def file_extents(
    spark: SparkSession, paths: Iterable[str | Path], format: str | None = None
) -> dict[Path, Extent | None]:
    """How far in time each CDC v2 file under ``paths`` reaches (:mod:`changeflow.cdc.resume`):
    one small row per file comes to the driver; files that give Spark no rows (progress files
    beside Parquet, empty files) are read by the driver."""
    paths = [str(p) for p in paths]
    source = open_source(paths, format)
    by_uri = {f.resolve(): f for f in source.files}
    extents: dict[Path, Extent | None] = {}
    with spark_errors(", ".join(paths)):
        raw = source.codec.spark_read(spark, source.files)
        notes = F.collect_set(NOTE) if NOTE in raw.frame.columns else F.array()
        per_file = raw.frame.groupBy(FILE).agg(F.max(TIME).alias("t"), notes.alias("n"))
        for uri, last, statements in per_file.collect():
            reach = Extent(last_time=-1 if last is None else last)
            for note in statements:
                reach = further(reach, message_from_json(json.loads(note)))
            extents[by_uri[Path(local_path(uri)).resolve()]] = reach
    for path in source.files:
        if path not in extents:
            _, messages = source.codec.read_columnar(path)
            reach: Extent | None = Extent()
            for message in messages:
                reach = further(reach, message)
            extents[path] = reach
    return extents


def _spread_over_times(statements: Sequence[Progress], rows: int) -> bool:
    """Do the announced counts spread the rows over many times, none holding more than a
    partition's share? Then the rows are shuffled by time alone (see :func:`_group`)."""
    counts = [c for s in statements for _, c in s.counts]
    return len(counts) >= SPREAD and max(counts) * SPREAD <= rows


def _group(
    raw: DataFrame, columns: list[str], with_notes: bool, rows: int = 0, by_time: bool = False
) -> DataFrame:
    """One persisted row per ``(data, time)``; ``_diff`` is null where the copies disagree.

    ``rows`` (an estimate of the input rows) sizes the shuffle: small hash tables are faster.
    ``by_time`` shuffles the rows by time alone: every copy of an update still meets the
    others, and the counts per time (:func:`_counts`) need no second shuffle, as every time
    lies in one partition. Without counts that show the times spread out (one time may hold
    most updates), the rows are shuffled by data and time.
    """
    keys = [*map(col, columns), F.col(TIME)] + ([F.col(NOTE)] if with_notes else [])
    diff = F.coalesce(F.col(DIFF), F.lit(0))
    lo, hi = F.col("_lo"), F.col("_hi")
    spark = raw.sparkSession
    partitions = max(
        rows // ROWS_PER_PARTITION, int(spark.conf.get("spark.sql.shuffle.partitions") or 1)
    )
    source = raw.repartition(partitions, F.col(TIME)) if by_time else raw
    grouped = (
        source.groupBy(*keys)
        .agg(F.min(diff).alias("_lo"), F.max(diff).alias("_hi"))
        .select(
            *map(col, columns),
            TIME,
            F.when((lo == hi) & (lo != 0), lo).alias(DIFF),
            *([NOTE] if with_notes else []),
        )
    )
    # Copies of an update lie in different files: a map-side partial aggregation removes few
    # rows and costs a second hash table, so the plan (fixed when persisted) skips it.
    # The cache is the result, read once or twice: compressing it costs more than it saves.
    settings = {
        "spark.sql.execution.bypassPartialAggregation": "true",
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
    }
    if rows // ROWS_PER_PARTITION > int(spark.conf.get("spark.sql.shuffle.partitions") or 0):
        settings["spark.sql.shuffle.partitions"] = str(rows // ROWS_PER_PARTITION)
        settings["spark.sql.adaptive.coalescePartitions.enabled"] = "false"
    with session_conf(spark, settings):
        return grouped.persist()


def _progress(statements: Sequence[Progress]) -> tuple[Antichain, dict[int, int]]:
    """The progress frontier and the announced counts at the times it covers (others: 0).

    The reference reader is fed the progress statements alone: it grafts them and checks them
    against each other; with no updates, every time with a positive count stays unreported.
    """
    statements = list(dict.fromkeys(statements))
    if any(map(has_product, statements)):
        raise InvalidInput(PRODUCT_TIMES)
    if not any(s.lower or s.upper for s in statements):
        return Antichain([0]), {}  # as the reader: no time seen, nothing complete
    reader = CdcReader(audit=True)
    for statement in statements:
        reader.feed(statement)
    return reader.progress, reader.announced()


def _counts(
    grouped: DataFrame,
    columns: list[str],
    text: bool,
    progress: Antichain,
    raw: DataFrame,
    by_time: bool = False,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Distinct updates per time covered by ``progress``, and whether any lie beyond it.

    One small row per covered time comes to the driver (times beyond share one row; null or
    negative times share the row at -1); disagreeing diffs raise here. Rows grouped
    ``by_time`` are counted per time where they lie, before the small rows are folded.
    """
    time = F.col(TIME)
    end = progress.elements[0] if progress else None
    key = F.when(time.isNull() | (time < 0), F.lit(-1)).otherwise(
        time if end is None else F.least(time, F.lit(end))
    )
    rows = grouped.filter(F.col(NOTE).isNull()) if NOTE in grouped.columns else grouped
    n, ok = F.count(F.lit(1)).alias("n"), F.count(DIFF).alias("ok")
    if by_time:
        rows = rows.groupBy(TIME).agg(n, ok)
        n, ok = F.sum("n").alias("n"), F.sum("ok").alias("ok")
    stats = rows.groupBy(key.alias("t")).agg(n, ok)
    table = stats.toArrow().sort_by("t")
    times, counts, ok = (table.column(c).to_numpy() for c in ("t", "n", "ok"))
    if len(times) and times[0] == -1:
        return times, counts, False
    if (ok < counts).any():
        _bad_diff(grouped, columns, text, raw)
    beyond = end is not None and len(times) > 0 and times[-1] == end
    if beyond:
        times, counts = times[:-1], counts[:-1]
    return times, counts, beyond


def _complete(
    grouped: DataFrame,
    columns: list[str],
    text: bool,
    times: np.ndarray,
    counts: np.ndarray,
    announced: dict[int, int],
    progress: Antichain,
) -> Antichain:
    """The meet of the progress frontier and the first time still short of its count.

    A time with more distinct updates than its count is a conflict.
    """
    a_times = np.array(sorted(announced), dtype=np.int64)
    a_counts = np.array([announced[t] for t in a_times.tolist()], dtype=np.int64)
    expected = _lookup(a_times, a_counts, times)
    over = np.flatnonzero(counts > expected)
    if len(over):
        t, n, c = int(times[over[0]]), int(counts[over[0]]), int(expected[over[0]])
        sample = grouped.filter(F.col(TIME) == t).select(*map(col, columns)).first()
        raise CdcConflict(
            f"time {t} has more distinct updates ({n}) than its progress count ({c}) allows; "
            f"one is data {_data(sample, columns, text)!r}"
        )
    short = np.flatnonzero(_lookup(times, counts, a_times) < a_counts)
    ends = [int(a_times[short[0]])] if len(short) else []
    return Antichain([*progress, *ends])


def _lookup(keys: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``values`` at the sorted ``keys`` equal to each of ``at``; 0 where there is none."""
    if not len(keys):
        return np.zeros(len(at), dtype=np.int64)
    i = np.minimum(np.searchsorted(keys, at), len(keys) - 1)
    return np.where(keys[i] == at, values[i], 0)


def _bad_diff(grouped: DataFrame, columns: list[str], text: bool, raw: DataFrame) -> None:
    """Raise for the earliest update whose copies disagree, or whose diff is zero or null."""
    row = grouped.filter(F.col(DIFF).isNull() & (F.col(TIME) >= 0))
    if NOTE in grouped.columns:
        row = row.filter(F.col(NOTE).isNull())
    first = row.orderBy(TIME).first()
    assert first is not None
    t, data = first[TIME], _data(first, columns, text)
    match = reduce(
        Column.__and__,
        [col(c).eqNullSafe(F.lit(first[c])) for c in columns],
        F.col(TIME) == t,
    )
    diffs = sorted(
        {r[0] for r in raw.filter(match).select(DIFF).distinct().collect()},
        key=lambda d: (d is not None, d),
    )
    if None in diffs or 0 in diffs:
        bad = None if None in diffs else 0
        raise ProtocolViolation(
            f"update {data!r} at time {t} has diff {bad!r}: "
            "CDC v2 updates carry non-zero integer diffs"
        )
    raise CdcConflict(
        f"conflicting updates for data {data!r} at time {t}: "
        + " and ".join(f"diff {d}" for d in diffs)
    )


def _data(row: Any, columns: list[str], text: bool) -> Any:
    """A piece of data as the single-threaded reader holds it (JSON text, or a row tuple)."""
    return row[columns[0]] if text else tuple(row[c] for c in columns)
