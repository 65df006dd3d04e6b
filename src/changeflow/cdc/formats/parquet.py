"""Parquet, CDC v2's bulk format: one Parquet file of updates is one Updates message.

Columns: the data columns, then ``_time`` (int64, or list of int64 for product times) and
``_diff`` (int64); files from other writers may name them ``time`` and ``diff``. Progress
statements live beside them in small JSON-lines files (which hold nothing else). Rows are held
as tuples of column values. On Spark the files are read by Spark's own Parquet reader.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from changeflow.cdc.formats.base import FILE, PRODUCT_TIMES, Format, SparkRows, check_diffs
from changeflow.cdc.formats.jsonl import JsonLines, read_progress, write_jsonl
from changeflow.cdc.messages import Message, Progress, Updates, UpdateTable, freeze, without_gc
from changeflow.errors import InvalidInput, InvalidTime
from changeflow.time import MAX_TIME, Product, check_time
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PROGRESS = ".progress"  # a progress file is <stem>.progress.jsonl beside <stem>.parquet


def split_columns(names: Sequence[str], where: object) -> tuple[list[str], str, str]:
    """The data columns and the time and diff column names of an update table."""
    for time_col, diff_col in ((TIME, DIFF), ("time", "diff")):
        if time_col in names and diff_col in names:
            data = [n for n in names if n not in (time_col, diff_col)]
            if not data:
                raise InvalidInput(f"{where}: an update table needs at least one data column")
            return data, time_col, diff_col
    raise InvalidInput(
        f"{where}: an update table needs columns {TIME!r} and {DIFF!r} "
        f"(or 'time' and 'diff'); it has {list(names)}"
    )


def check_update_types(schema: pa.Schema, path: Path, product: bool = True) -> tuple[str, str]:
    """The time and diff column names of a Parquet update file, checked to hold integers (a
    list of integers for product times, unless ``product`` is False)."""
    _, time_col, diff_col = split_columns(schema.names, path)
    for name in (time_col, diff_col):
        kind = schema.field(name).type
        if name == time_col and pa.types.is_list(kind):
            if not product:
                raise InvalidInput(f"{path}: {PRODUCT_TIMES}")
            kind = kind.value_type
        if not pa.types.is_integer(kind):
            raise InvalidInput(
                f"{path}: column {name!r} holds {schema.field(name).type}; CDC v2 "
                f"{'times' if name == time_col else 'diffs'} are integers (int64)"
            )
    return time_col, diff_col


def read_update_table(path: Path) -> tuple[list[str], pa.Table, str, str]:
    """The data column names of a Parquet update file, its table (checked: integer times and
    diffs, no nulls there) and the names of its time and diff columns."""
    try:
        # one file at a time, for a reader that is CPU-bound itself: Arrow's threads would
        # cost more CPU than they save time
        table = pq.read_table(path, use_threads=False)
    except (pa.ArrowInvalid, OSError) as e:
        raise InvalidInput(f"{path}: not a readable Parquet file: {e}") from None
    columns, _, _ = split_columns(table.column_names, path)
    time_col, diff_col = check_update_types(table.schema, path)
    for c in (time_col, diff_col):
        if table.column(c).null_count:
            raise InvalidInput(f"{path}: column {c!r} holds nulls")
    return columns, table, time_col, diff_col


def read_columnar(path: Path) -> tuple[list[str], UpdateTable]:
    """A Parquet update file as one columnar message (data columns, ``_time``, ``_diff``)."""
    columns, table, time_col, diff_col = read_update_table(path)
    table = table.select([*columns, time_col, diff_col]).rename_columns([*columns, TIME, DIFF])
    return columns, UpdateTable(table)


def read_parquet(path: Path) -> tuple[list[str], Updates]:
    """The data column names of a Parquet update file, and its updates as one message."""
    columns, table, time_col, diff_col = read_update_table(path)
    times = _values(table.column(time_col))
    if pa.types.is_list(table.schema.field(time_col).type):
        times = [Product(t) for t in times]
    diffs = _values(table.column(diff_col))
    data = zip(*(_frozen(table.column(c)) for c in columns), strict=True)
    with without_gc():
        updates = tuple(zip(data, times, diffs, strict=True))
    return columns, Updates(updates)


def _values(column: pa.ChunkedArray) -> list[Any]:
    """A column as Python values (through numpy where that is exact, which is much faster)."""
    kind = column.type
    if not column.null_count and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return column.to_numpy().tolist()
    return column.to_pylist()


def _frozen(column: pa.ChunkedArray) -> list[Hashable]:
    """A column's values, nested ones (lists, structs, maps) frozen into hashable tuples."""
    kind = column.type
    if pa.types.is_nested(kind):
        return [freeze(v) for v in column.to_pylist()]
    return _values(column)


def updates_table(columns: Sequence[str], updates: Sequence[tuple[Any, Any, int]]) -> pa.Table:
    """An Arrow update table from ``(row tuple, time, diff)`` triples."""
    rows = [d for d, _, _ in updates]
    arrays: dict[str, Any] = {}
    for i, c in enumerate(columns):
        try:
            arrays[c] = pa.array([r[i] for r in rows]) if rows else pa.array([], pa.null())
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise InvalidInput(f"column {c!r} holds a value Parquet cannot hold: {e}") from None
    times = [check_time(t) for _, t, _ in updates]
    if times and isinstance(times[0], Product):
        arrays[TIME] = pa.array([list(t) for t in times], pa.list_(pa.int64()))
    else:
        arrays[TIME] = pa.array(times, pa.int64())
    arrays[DIFF] = pa.array([r for _, _, r in updates], pa.int64())
    return pa.table(arrays)


def write_parquet(path: Path, columns: Sequence[str], updates: Updates) -> None:
    """Write one Updates message as a Parquet file; the table is built whole first, so a value
    Parquet cannot hold leaves no file behind."""
    check_diffs([updates])
    table = updates_table(columns, updates.updates)
    pq.write_table(table, path)


class Parquet(Format):
    name = "parquet"
    extensions = (".parquet",)
    companions = JsonLines.extensions
    spark_writes = True

    def read(self, path: Path) -> tuple[list[str] | None, Iterator[Message]]:
        if path.suffix in self.companions:
            return None, read_progress(path, "Parquet")
        columns, updates = read_parquet(path)
        return columns, iter([updates])

    def read_columnar(
        self, path: Path, seen: set[bytes] | None = None
    ) -> tuple[list[str] | None, Iterator[Any]]:
        if path.suffix in self.companions:
            return None, read_progress(path, "Parquet", seen)
        columns, table = read_columnar(path)
        return columns, iter([table])

    def write(
        self, stem: Path, messages: Sequence[Message], columns: Sequence[str] | None
    ) -> list[Path]:
        """The progress statements in ``<stem>.progress.jsonl``, the Updates merged into one
        (a re-batching, the same statements) in ``<stem>.parquet``."""
        if columns is None:
            raise InvalidInput("parquet needs the data column names")
        check_diffs(messages)
        written = []
        progress = [m for m in messages if isinstance(m, Progress)]
        if progress:
            written.append(stem.with_name(stem.name + PROGRESS + JsonLines.extensions[0]))
            with open(written[-1], "w", encoding="utf-8") as f:
                write_jsonl(f, progress)
        updates = [u for m in messages if isinstance(m, Updates) for u in m.updates]
        if updates:
            written.append(stem.with_suffix(self.extensions[0]))
            write_parquet(written[-1], columns, Updates(tuple(updates)))
        return written

    def spark_read(self, spark: SparkSession, files: list[Path]) -> SparkRows:
        """Spark reads the Parquet files; the driver reads the progress files beside them."""
        seen: set[bytes] = set()  # copies of a statement's line are parsed once
        companions = [f for f in files if f.suffix in self.companions]
        statements = [p for f in companions for p in read_progress(f, "Parquet", seen)]
        frame, columns, rows = _spark_updates(spark, [f for f in files if f.suffix == ".parquet"])
        return SparkRows(frame, columns, rows, statements)

    def spark_write(
        self, updates: DataFrame, folder: Path, columns: list[str], batch_size: int
    ) -> None:
        updates.write.parquet(str(folder))

    def bad_time(self, files: list[Path]) -> NoReturn:
        """Raise for the first Parquet file with a null or negative time."""
        for path in files:
            if path.suffix != ".parquet":
                continue
            _, time_col, _ = split_columns(pq.read_schema(path).names, path)
            times = pq.read_table(path, columns=[time_col]).column(0)
            if times.null_count:
                raise InvalidInput(f"{path}: column {time_col!r} holds a null time")
            low = pc.min(times).as_py()
            if low is not None and not 0 <= low <= MAX_TIME:
                raise InvalidTime(f"{path}: time {low} is outside 0 <= t < 2^63")
        raise InvalidInput("an update has a null or negative time")


def _spark_updates(spark: SparkSession, files: list[Path]) -> tuple[DataFrame, list[str], int]:
    """The update rows of Parquet files, their data columns and number (footers checked here,
    so errors name the file)."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from changeflow.spark import col, spark_path

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
        data, _, _ = split_columns(schema.names, path)
        if columns is None:
            columns = data
        elif data != columns:
            raise InvalidInput(
                f"{path}: its data columns {data} differ from the other files' {columns}"
            )
        time_col, diff_col = check_update_types(schema, path, product=False)
        groups.setdefault((time_col, diff_col, str(schema.remove_metadata())), []).append(path)
    if columns is None:
        return spark.createDataFrame([], f"{TIME} bigint, {DIFF} bigint, {FILE} string"), [], 0
    frames = [
        spark.read.parquet(*map(spark_path, group)).select(
            *map(col, columns),
            F.col(time_col).cast("bigint").alias(TIME),
            F.col(diff_col).cast("bigint").alias(DIFF),
            F.col("_metadata.file_path").alias(FILE),
        )
        for (time_col, diff_col, _), group in groups.items()
    ]
    return reduce(DataFrame.unionByName, frames), columns, rows


FORMAT = Parquet()
