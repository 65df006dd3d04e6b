"""Data-parallel CDC v2 on Spark: read folders of message files, write collections as them.

:func:`read_cdc` gives the answer of the single-threaded :class:`CdcReader` (in audit mode) fed
every message of the files: the same updates, the same frontier, the same errors. Updates stay
in Spark: they are deduplicated per ``(data, time)`` and counted per time there, and only the
progress statements and one row of counts per time come to the driver, which runs the progress
part of the reference reader. :func:`write_cdc` writes an update frame for ``[lower, upper)`` as
Updates files (one per partition, by Spark's writers) and a small file of progress statements.

Times are ints here; product times need the single-threaded reader and writer.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import reduce
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException, PythonException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from changeflow import errors
from changeflow.cdc.files import open_source
from changeflow.cdc.jsonl import canonical_json, message_from_json, message_to_json
from changeflow.cdc.messages import Progress, Updates
from changeflow.cdc.parquet import DIFF, TIME, split_columns
from changeflow.cdc.reader import CdcReader
from changeflow.errors import (
    CdcConflict,
    ChangeflowError,
    FrontierViolation,
    InvalidInput,
    InvalidTime,
    ProtocolViolation,
)
from changeflow.time import MAX_TIME, Antichain, Product, check_time

NOTE = "_note"  # JSON-lines and Avro decoding: the progress statements travel in this column
PRODUCT_TIMES = (
    "product times are not supported on Spark; read them with the single-threaded reader "
    "(changeflow.cdc.reader.CdcReader, or `changeflow cdc decode` without --spark)"
)
AVRO_TYPES = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
ROW_TAIL = [(TIME, pa.int64()), (DIFF, pa.int64()), (NOTE, pa.string())]
ROWS_PER_PARTITION = 1_000_000  # input rows per shuffle partition, at most, for large inputs
_MAX_COUNTS = 100_000  # counts per progress statement that write_cdc writes
# canonical_json's very settings, without building an encoder for every value (tests compare)
_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


# -- reading -----------------------------------------------------------------------------------


def read_cdc(
    spark: SparkSession, paths: Iterable[str | Path], format: str | None = None
) -> tuple[DataFrame, Antichain]:
    """The consolidated updates of the CDC v2 files under ``paths`` and their complete frontier.

    The frame holds the updates at times not at or beyond the frontier: the data columns (for
    JSON lines one ``data`` column of canonical JSON text), then ``_time`` and ``_diff``. It is
    persisted; ``frame.unpersist()`` releases it. Contradicting statements raise
    :class:`CdcConflict` naming the time and the data; bad files raise :class:`InvalidInput`.
    """
    paths = [str(p) for p in paths]
    source = open_source(paths, format)
    with _friendly(", ".join(paths)):
        statements: list[Progress] | None = None  # None: they travel with the updates
        if source.format == "parquet":
            parquet = [f for f in source.files if f.suffix == ".parquet"]
            statements = _progress_files([f for f in source.files if f.suffix != ".parquet"])
            raw, columns, rows = _parquet_updates(spark, parquet)
        elif source.format == "jsonl":
            raw, columns, rows = _jsonl_updates(spark, source.files)
        else:
            raw, columns, rows = _avro_updates(spark, source.files)
        grouped = _group(raw, columns, statements is None, rows)
        try:
            if statements is None:
                notes = grouped.filter(F.col(NOTE).isNotNull()).select(NOTE).collect()
                statements = [message_from_json(json.loads(n[0])) for n in notes]
            progress, announced = _progress(statements)
            text = source.format == "jsonl"  # the reader holds data as JSON text, else rows
            times, counts, beyond = _counts(grouped, columns, text, progress, raw, source.files)
            frontier = _complete(grouped, columns, text, times, counts, announced, progress)
            end = frontier.elements[0] if frontier else None
            incomplete = end is not None and (beyond or (len(times) > 0 and times[-1] >= end))
            if NOTE not in grouped.columns and not incomplete:
                return grouped, frontier  # every update read is complete: the frame as it is
            frame = grouped.filter(F.col(NOTE).isNull()) if NOTE in grouped.columns else grouped
            if incomplete:
                frame = frame.filter(F.col(TIME) < end)
            frame = frame.select(*map(_col, columns), TIME, DIFF).persist()
            frame.count()
        except BaseException:
            grouped.unpersist()
            raise
        grouped.unpersist()  # the frame holds its own copy now
    return frame, frontier


def _group(raw: DataFrame, columns: list[str], with_notes: bool, rows: int = 0) -> DataFrame:
    """One persisted row per ``(data, time)``; ``_diff`` is null where the copies disagree.

    ``rows`` (an estimate of the input rows) sizes the shuffle: small hash tables are faster.
    """
    keys = [*map(_col, columns), F.col(TIME)] + ([F.col(NOTE)] if with_notes else [])
    diff = F.coalesce(F.col(DIFF), F.lit(0))
    lo, hi = F.col("_lo"), F.col("_hi")
    grouped = (
        raw.groupBy(*keys)
        .agg(F.min(diff).alias("_lo"), F.max(diff).alias("_hi"))
        .select(
            *map(_col, columns),
            TIME,
            F.when((lo == hi) & (lo != 0), lo).alias(DIFF),
            *([NOTE] if with_notes else []),
        )
    )
    # Copies of an update lie in different files: a map-side partial aggregation removes few
    # rows and costs a second hash table, so the plan (fixed when persisted) skips it.
    settings = {"spark.sql.execution.bypassPartialAggregation": "true"}
    spark = raw.sparkSession
    if rows // ROWS_PER_PARTITION > int(spark.conf.get("spark.sql.shuffle.partitions") or 0):
        settings["spark.sql.shuffle.partitions"] = str(rows // ROWS_PER_PARTITION)
        settings["spark.sql.adaptive.coalescePartitions.enabled"] = "false"
    with _conf(spark, settings):
        return grouped.persist()


def _progress(statements: Sequence[Progress]) -> tuple[Antichain, dict[int, int]]:
    """The progress frontier and the announced counts at the times it covers (others: 0).

    The reference reader is fed the progress statements alone: it grafts them and checks them
    against each other; with no updates, every time with a positive count stays unreported.
    """
    statements = list(dict.fromkeys(statements))
    if any(map(_has_product, statements)):
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
    files: list[Path],
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Distinct updates per time covered by ``progress``, and whether any lie beyond it.

    One small row per covered time comes to the driver (times beyond share one row); bad
    times and disagreeing diffs raise here.
    """
    time = F.col(TIME)
    end = progress.elements[0] if progress else None
    key = F.when(time.isNull() | (time < 0), F.lit(-1)).otherwise(
        time if end is None else F.least(time, F.lit(end))
    )
    rows = grouped.filter(F.col(NOTE).isNull()) if NOTE in grouped.columns else grouped
    stats = rows.groupBy(key.alias("t")).agg(
        F.count(F.lit(1)).alias("n"), F.count(DIFF).alias("ok")
    )
    table = stats.toArrow().sort_by("t")
    times, counts, ok = (table.column(c).to_numpy() for c in ("t", "n", "ok"))
    if len(times) and times[0] == -1:
        _bad_time(files)
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
        sample = grouped.filter(F.col(TIME) == t).select(*map(_col, columns)).first()
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
        [_col(c).eqNullSafe(F.lit(first[c])) for c in columns],
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


def _bad_time(files: list[Path]) -> None:
    """Raise for the first Parquet file with a null or negative time."""
    for path in files:
        if path.suffix != ".parquet":
            continue
        _, time_col, _ = split_columns(pq.read_schema(path).names, path)
        times = pq.read_table(path, columns=[time_col]).column(0)
        if times.null_count:
            raise InvalidInput(f"{path}: column {time_col!r} holds a null time")
        low = pc.min(times).as_py()
        if low is not None and low < 0:
            raise InvalidTime(f"{path}: time {low} is outside 0 <= t < 2^63")
    raise InvalidInput("an update has a null or negative time")


def _data(row: Any, columns: list[str], text: bool) -> Any:
    """A piece of data as the single-threaded reader holds it (JSON text, or a row tuple)."""
    return row[columns[0]] if text else tuple(row[c] for c in columns)


# -- the formats -------------------------------------------------------------------------------


def _progress_files(files: list[Path]) -> list[Progress]:
    """The progress statements of the JSON-lines files beside Parquet files (read here).

    Copies of a line are parsed once; errors name the file and line as :func:`read_jsonl` does.
    """
    statements: list[Progress] = []
    seen: set[str] = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line or line in seen:
                    continue
                seen.add(line)
                try:
                    message = message_from_json(json.loads(line))
                except json.JSONDecodeError as e:
                    raise InvalidInput(f"{path}:{number}: not JSON: {e.msg}") from None
                except ChangeflowError as e:
                    raise type(e)(f"{path}:{number}: {e}") from None
                if isinstance(message, Progress):
                    statements.append(message)
                elif message.updates:
                    raise InvalidInput(
                        f"{path}:{number}: updates in a JSON-lines file beside Parquet files; "
                        "Spark reads only progress statements there (use the single-threaded "
                        "reader)"
                    )
    return statements


def _parquet_updates(spark: SparkSession, files: list[Path]) -> tuple[DataFrame, list[str], int]:
    """The update rows of Parquet files, their data columns and number.

    The footers are checked here, so errors name the file.
    """
    columns: list[str] | None = None
    groups: dict[tuple[str, str, str], list[Path]] = {}
    rows = 0
    for path in files:
        try:
            metadata = pq.read_metadata(path)
            schema = metadata.schema.to_arrow_schema()
            rows += metadata.num_rows
        except (pa.ArrowInvalid, OSError) as e:
            raise InvalidInput(f"{path}: not a readable Parquet file: {e}") from None
        data, time_col, diff_col = split_columns(schema.names, path)
        if columns is None:
            columns = data
        elif data != columns:
            raise InvalidInput(
                f"{path}: its data columns {data} differ from the other files' {columns}"
            )
        for name in (time_col, diff_col):
            kind = schema.field(name).type
            if pa.types.is_list(kind) and name == time_col:
                raise InvalidInput(f"{path}: {PRODUCT_TIMES}")
            if not pa.types.is_integer(kind):
                raise InvalidInput(f"{path}: column {name!r} must hold integers, not {kind}")
        signature = (time_col, diff_col, str(schema.remove_metadata()))
        groups.setdefault(signature, []).append(path)
    if columns is None:
        return spark.createDataFrame([], f"{TIME} bigint, {DIFF} bigint"), [], 0
    frames = [
        spark.read.parquet(*map(_spark_path, group)).select(
            *map(_col, columns),
            F.col(time_col).cast("bigint").alias(TIME),
            F.col(diff_col).cast("bigint").alias(DIFF),
        )
        for (time_col, diff_col, _), group in groups.items()
    ]
    return reduce(DataFrame.unionByName, frames), columns, rows


def _jsonl_updates(spark: SparkSession, files: list[Path]) -> tuple[DataFrame, list[str], int]:
    """Update rows (canonical JSON ``data``) and progress notes of JSON-lines files, parsed in
    the executors; their data column and (roughly) number."""
    lines = spark.read.text([_spark_path(f) for f in files]).select(
        "value", F.col("_metadata.file_path").alias("path")
    )
    schema = f"data string, {TIME} bigint, {DIFF} bigint, {NOTE} string"
    return lines.mapInArrow(_decode_jsonl, schema), ["data"], _size(files) // 60


def _decode_jsonl(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Parse lines as :func:`read_jsonl` does, in the executors."""
    for batch in batches:
        data: list[str | None] = []
        times: list[int | None] = []
        diffs: list[int | None] = []
        notes: list[str | None] = []
        for line, uri in zip(*(c.to_pylist() for c in batch.columns), strict=True):
            if not line.strip():
                continue
            path = _local(uri)
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InvalidInput(f"{path}: not JSON: {e.msg}") from None
            try:
                updates = obj.get("updates") if type(obj) is dict and len(obj) == 1 else None
                if type(updates) is list and _fast_updates(updates, data, times, diffs):
                    notes.extend([None] * len(updates))
                    continue
                message = message_from_json(obj)  # checks everything and raises if it must
                if isinstance(message, Updates):
                    _check_updates(message)
                elif _has_product(message):
                    raise InvalidInput(PRODUCT_TIMES)
            except ChangeflowError as e:
                raise type(e)(f"{path}: {e}") from None
            for column in (data, times, diffs):
                column.append(None)
            notes.append(canonical_json(message_to_json(message)))
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(data, pa.string()),
                pa.array(times, pa.int64()),
                pa.array(diffs, pa.int64()),
                pa.array(notes, pa.string()),
            ],
            names=["data", TIME, DIFF, NOTE],
        )


def _fast_updates(updates: list, data: list, times: list, diffs: list) -> bool:
    """Append plain int-time updates; False (appending nothing) if any needs the full check."""
    start = len(data)
    add_data, add_time, add_diff = data.append, times.append, diffs.append
    try:
        for u in updates:
            t, r = u["time"], u["diff"]
            if type(t) is not int or type(r) is not int or not 0 <= t <= MAX_TIME:
                raise ValueError
            if not -(2**63) <= r < 2**63:
                raise ValueError
            add_data(_canonical(u["data"]))
            add_time(t)
            add_diff(r)
    except (KeyError, TypeError, ValueError):
        del data[start:], times[start:], diffs[start:]
        return False
    return True


def _check_updates(message: Updates) -> None:
    """Raise for what the fast path refused in valid JSON-lines updates."""
    for data, t, r in message.updates:
        if isinstance(t, Product):
            raise InvalidInput(PRODUCT_TIMES)
        if not -(2**63) <= r < 2**63:
            raise InvalidInput(f"update {data} at time {t} has diff {r}, beyond 64 bits")
    raise InvalidInput("unexpected updates message")  # pragma: no cover - the fast path took it


def _has_product(p: Progress) -> bool:
    return any(isinstance(t, Product) for t in (*p.lower, *p.upper, *(t for t, _ in p.counts)))


def _avro_updates(spark: SparkSession, files: list[Path]) -> tuple[DataFrame, list[str], int]:
    """Update rows and progress notes of Avro files, decoded with fastavro in the executors;
    their data columns and (roughly) number."""
    schemas: dict[Path, list[tuple[str, str]]] = {}
    for path in files:
        try:
            with open(path, "rb") as f:
                schemas[path] = _avro_fields(fastavro.reader(f).writer_schema, path)
        except (ValueError, OSError, fastavro.read.SchemaResolutionError) as e:
            raise InvalidInput(f"{path}: not a readable Avro file: {e}") from None
        names, first = [n for n, _ in schemas[path]], [n for n, _ in schemas[files[0]]]
        if names != first:
            raise InvalidInput(
                f"{path}: its data columns {names} differ from the other files' {first}"
            )
    if len({tuple(f) for f in schemas.values()}) > 1:
        # A writer gives a column without values some type: files without updates don't count.
        schemas = {p: schemas[p] for p in [p for p in files if _has_updates(p)] or files[:1]}
    fields = reduce(lambda a, p: _widen(a, schemas[p], p), schemas, next(iter(schemas.values())))
    schema = pa.schema([(n, AVRO_TYPES[t]) for n, t in fields] + ROW_TAIL)
    contents = spark.read.format("binaryFile").load([_spark_path(f) for f in files])
    decoded = contents.select("path", "content").mapInArrow(
        _avro_decoder(schema), from_arrow_schema(schema)
    )
    return decoded, [n for n, _ in fields], _size(files) // 15


def _has_updates(path: Path) -> bool:
    with open(path, "rb") as f:
        return any(isinstance(r, list) and r for r in fastavro.reader(f))


def _avro_fields(schema: Any, path: Path) -> list[tuple[str, str]]:
    """The row fields of a CDC v2 Avro schema, with their (primitive) Avro types."""
    for branch in schema if isinstance(schema, list) else [schema]:
        if isinstance(branch, dict) and branch.get("type") == "array":
            for field in branch["items"].get("fields", []):
                if field["name"] == "data" and isinstance(field["type"], dict):
                    return [
                        (f["name"], _avro_type(f["type"], path)) for f in field["type"]["fields"]
                    ]
    raise InvalidInput(f"{path}: not a CDC v2 Avro file (no array of update records in its schema)")


def _avro_type(kind: Any, path: Path) -> str:
    options = [k for k in (kind if isinstance(kind, list) else [kind]) if k != "null"]
    if len(options) == 1 and isinstance(options[0], dict) and "logicalType" not in options[0]:
        options = [options[0].get("type")]
    if len(options) != 1 or options[0] not in AVRO_TYPES:
        raise InvalidInput(
            f"{path}: Avro field type {kind!r} is not read on Spark (primitive types only); "
            "use the single-threaded reader"
        )
    return options[0]


def _widen(a: list[tuple[str, str]], b: list[tuple[str, str]], path: Path) -> list[tuple[str, str]]:
    """Field types common to two files: ints widen to long, numbers to double."""
    out = []
    for (name, s), (_, t) in zip(a, b, strict=True):
        if s != t and {s, t} <= {"int", "long"}:
            s = "long"
        elif s != t and {s, t} <= {"int", "long", "float", "double"}:
            s = "double"
        elif s != t:
            raise InvalidInput(f"{path}: column {name!r} is {t} here and {s} in other files")
        out.append((name, s))
    return out


def _avro_decoder(schema: pa.Schema) -> Any:
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for uri, content in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                yield from _decode_avro_file(_local(uri), content, schema)

    return decode


def _decode_avro_file(path: str, content: bytes, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of one Avro file: its updates, and its progress records as notes."""
    columns = schema.names[:-3]
    values: list[list[Any]] = [[] for _ in columns]
    times: list[int | None] = []
    diffs: list[int | None] = []
    notes: list[str | None] = []
    try:
        for record in fastavro.reader(io.BytesIO(content)):
            if isinstance(record, list):
                for u in record:
                    row, t = u["data"], u["time"]
                    if not 0 <= t <= MAX_TIME:
                        raise InvalidTime(f"{path}: time {t} is outside 0 <= t < 2^63")
                    for column, name in zip(values, columns, strict=True):
                        column.append(row[name])
                    times.append(t)
                    diffs.append(u["diff"])
                    notes.append(None)
            elif isinstance(record, dict) and {"lower", "upper", "counts"} <= record.keys():
                for column in values:
                    column.append(None)
                times.append(None)
                diffs.append(None)
                notes.append(canonical_json({"progress": record}))
            else:
                raise InvalidInput(f"{path}: record is neither updates nor progress")
            if len(times) >= 65_536:
                yield _batch(schema, [*values, times, diffs, notes])
                values, times, diffs, notes = [[] for _ in columns], [], [], []
    except (ValueError, EOFError, KeyError, TypeError) as e:
        raise InvalidInput(f"{path}: bad Avro record: {e}") from None
    yield _batch(schema, [*values, times, diffs, notes])


def _batch(schema: pa.Schema, columns: list[list[Any]]) -> pa.RecordBatch:
    arrays = [pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# -- writing -----------------------------------------------------------------------------------


def write_cdc(
    frame: DataFrame,
    path: str | Path,
    lower: Antichain | int,
    upper: Antichain | int | None,
    format: str = "parquet",
    batch_size: int = 10_000,
) -> Path:
    """Write the updates of ``frame`` for the times ``[lower, upper)`` as CDC v2; return the
    subfolder of ``path`` that holds them (a new one for every call, so writers never clash).

    ``frame`` is an update frame; it is consolidated first. Updates files come from Spark's
    writers, one per partition (JSON lines: one Updates message per ``batch_size`` rows), then
    the driver writes the progress statements that tile ``[lower, upper)`` (``upper=None`` or
    ``Antichain()`` closes the stream). An update outside the interval raises
    :class:`FrontierViolation`.
    """
    lower, upper = _frontier(lower), _frontier(upper)
    if format not in ("parquet", "jsonl"):
        raise InvalidInput(f"write_cdc writes parquet or jsonl, not {format!r}")
    if batch_size < 1:
        raise InvalidInput(f"batch size must be at least 1, not {batch_size}")
    if not lower <= upper:
        raise FrontierViolation(f"write_cdc: lower {lower} is beyond upper {upper}")
    columns = _data_columns(frame)
    where = f"write_cdc to {path}"
    if dict(frame.dtypes)[TIME].startswith("array"):
        raise InvalidInput(PRODUCT_TIMES)
    with _friendly(where):
        updates = (
            frame.groupBy(*map(_col, columns), F.col(TIME).cast("bigint").alias(TIME))
            .agg(F.sum(F.col(DIFF).cast("bigint")).alias(DIFF))
            .filter(F.col(DIFF) != 0)
            .persist()
        )
        try:
            stats = updates.groupBy(TIME).count().toArrow().sort_by(TIME)
            if stats.column(TIME).null_count:
                raise InvalidInput(f"{where}: an update has a null time")
            times = stats.column(TIME).to_numpy()
            counts = stats.column("count").to_numpy()
            outside = times < lower.elements[0] if lower else np.ones(len(times), bool)
            if upper:
                outside |= times >= upper.elements[0]
            if outside.any():
                t = int(times[np.flatnonzero(outside)[0]])
                raise FrontierViolation(
                    f"{where}: an update at time {t} lies outside [lower {lower}, upper {upper})"
                )
            folder = Path(path) / f"cdc-{_name(lower)}-{_name(upper)}-{uuid.uuid4().hex[:12]}"
            if format == "parquet":
                updates.write.parquet(str(folder))
            else:
                encode = _jsonl_encoder(columns, batch_size, _json_text(frame, columns))
                updates.mapInArrow(encode, "value string").write.text(str(folder))
        finally:
            updates.unpersist()
    folder.mkdir(parents=True, exist_ok=True)  # progress last: a reader waits for the updates
    with open(folder / "progress.jsonl", "w", encoding="utf-8") as f:
        for statement in _statements(lower, upper, times.tolist(), counts.tolist()):
            f.write(json.dumps(message_to_json(statement)) + "\n")
    return folder


def _statements(lower: Antichain, upper: Antichain, times: list[int], counts: list[int]):
    """Progress statements that tile ``[lower, upper)``, each with at most a bounded count."""
    pairs = list(zip(times, counts, strict=True))
    chunks = [pairs[i : i + _MAX_COUNTS] for i in range(0, len(pairs), _MAX_COUNTS)] or [[]]
    bounds = [lower, *(Antichain([chunk[0][0]]) for chunk in chunks[1:]), upper]
    for chunk, lo, hi in zip(chunks, bounds, bounds[1:], strict=False):
        yield Progress(lo, hi, tuple(chunk))


def _jsonl_encoder(columns: list[str], batch_size: int, json_text: bool) -> Any:
    """Rows to JSON lines of Updates messages, ``batch_size`` updates a message."""

    def encode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[tuple[Any, int, int]] = []
        lines: list[str] = []
        for batch in batches:
            times, diffs = batch.column(TIME).to_pylist(), batch.column(DIFF).to_pylist()
            if json_text:
                try:
                    data = [json.loads(d) for d in batch.column(columns[0]).to_pylist()]
                except json.JSONDecodeError as e:
                    raise InvalidInput(
                        f"write_cdc: column 'data' holds text that is not JSON: {e.msg}"
                    ) from None
            else:
                data = batch.select(columns).to_pylist()
            pending.extend(zip(data, times, diffs, strict=True))
            while len(pending) >= batch_size:
                lines.append(_updates_line(pending[:batch_size]))
                del pending[:batch_size]
            if lines:
                yield pa.RecordBatch.from_pydict({"value": lines})
                lines = []
        if pending:
            yield pa.RecordBatch.from_pydict({"value": [_updates_line(pending)]})

    return encode


def _updates_line(updates: list[tuple[Any, int, int]]) -> str:
    body = [{"data": d, "time": t, "diff": r} for d, t, r in updates]
    try:
        return json.dumps({"updates": body}, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"write_cdc: data that JSON cannot hold: {e}") from None


def _json_text(frame: DataFrame, columns: list[str]) -> bool:
    """A lone string column named ``data`` holds JSON text (as read_cdc gives for JSON lines)."""
    return columns == ["data"] and dict(frame.dtypes)["data"] == "string"


def _data_columns(frame: DataFrame) -> list[str]:
    missing = [c for c in (TIME, DIFF) if c not in frame.columns]
    if missing:
        raise InvalidInput(
            f"an update frame needs columns {TIME!r} and {DIFF!r}; it has {frame.columns}"
        )
    columns = [c for c in frame.columns if c not in (TIME, DIFF)]
    odd = [c for c in columns if c.startswith("_")]
    if odd or not columns:
        raise InvalidInput(
            f"an update frame needs data columns not starting with '_'; it has {frame.columns}"
        )
    return columns


def _frontier(value: Antichain | int | None) -> Antichain:
    if value is None:
        return Antichain()
    if isinstance(value, Antichain):
        frontier = value
    elif isinstance(value, int) and not isinstance(value, bool):
        frontier = Antichain([check_time(value)])
    else:
        raise InvalidInput(f"a frontier is an Antichain or an int, not {value!r}")
    if any(isinstance(t, Product) for t in frontier):
        raise InvalidInput(PRODUCT_TIMES)
    return frontier


def _name(frontier: Antichain) -> str:
    return "_".join(map(str, frontier)) if frontier else "end"


# -- Spark plumbing ----------------------------------------------------------------------------


def _col(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _spark_path(path: Path) -> str:
    """A path Spark takes literally (it expands glob characters)."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", str(path.resolve()))


def _size(files: list[Path]) -> int:
    return sum(f.stat().st_size for f in files)


def _local(uri: str) -> str:
    return uri.removeprefix("file://").removeprefix("file:")


@contextmanager
def _conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session settings for the plans made inside (a persisted plan keeps them)."""
    old = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextmanager
def _friendly(where: str) -> Iterator[None]:
    """Spark's errors as changeflow's: ours raised in executors keep their class and message."""
    try:
        yield
    except (PySparkException, Py4JJavaError) as e:
        text = str(e)
        ours = re.findall(r"^changeflow\.errors\.(\w+): (.*)$", text, re.MULTILINE)
        if ours:
            cls = getattr(errors, ours[-1][0], InvalidInput)
            raise cls(ours[-1][1]) from None
        lines = [line for line in text.splitlines() if line.strip()] or [type(e).__name__]
        line = lines[-1] if isinstance(e, PythonException) else lines[0]
        raise InvalidInput(f"{where}: Spark failed: {line}") from None
