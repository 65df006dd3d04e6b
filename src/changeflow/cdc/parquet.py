"""The Parquet codec of CDC v2, the bulk path: one Parquet file of updates is one Updates message.

Columns: the data columns, then ``_time`` (int64, or list of int64 for product times) and
``_diff`` (int64); files from other writers may name them ``time`` and ``diff``. Progress
statements live beside them in small JSON-lines files. Rows are held as tuples of column values.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from changeflow.cdc.messages import Updates, freeze, without_gc
from changeflow.errors import InvalidInput
from changeflow.time import Product, check_time

TIME, DIFF = "_time", "_diff"


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


def read_parquet(path: Path) -> tuple[list[str], Updates]:
    """The data column names of a Parquet update file, and its updates as one message."""
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise InvalidInput(f"{path}: not a readable Parquet file: {e}") from None
    columns, time_col, diff_col = split_columns(table.column_names, path)
    for c in (time_col, diff_col):
        if table.column(c).null_count:
            raise InvalidInput(f"{path}: column {c!r} holds nulls")
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
    arrays: dict[str, Any] = {
        c: pa.array([r[i] for r in rows]) if rows else pa.array([], pa.null())
        for i, c in enumerate(columns)
    }
    times = [check_time(t) for _, t, _ in updates]
    if times and isinstance(times[0], Product):
        arrays[TIME] = pa.array([list(t) for t in times], pa.list_(pa.int64()))
    else:
        arrays[TIME] = pa.array(times, pa.int64())
    arrays[DIFF] = pa.array([r for _, _, r in updates], pa.int64())
    return pa.table(arrays)


def write_parquet(path: Path, columns: Sequence[str], updates: Updates) -> None:
    """Write one Updates message as a Parquet file."""
    pq.write_table(updates_table(columns, updates.updates), path)
