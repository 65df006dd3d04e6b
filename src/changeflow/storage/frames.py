"""Update frames in Arrow: the data columns of a shard's schema, then ``_time`` and ``_diff``.

Appends accept a list of ``(data, time, diff)`` triples, an Arrow table or a pandas DataFrame
(Spark DataFrames are handled by the shard); every input is checked against the schema and the
times against the frontiers, with errors that say what was wrong and where.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.errors import FrontierViolation, InvalidInput, InvalidTime
from changeflow.time import MAX_TIME, Antichain, Product

TIME, DIFF = "_time", "_diff"


def frame_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of an update frame for data columns ``schema``."""
    return schema.append(pa.field(TIME, pa.int64(), False)).append(
        pa.field(DIFF, pa.int64(), False)
    )


def check_data_schema(schema: pa.Schema) -> pa.Schema:
    """A shard's data schema: at least one column, none starting with ``_``."""
    if not isinstance(schema, pa.Schema):
        raise InvalidInput(f"a shard's schema is a pyarrow.Schema, not {type(schema).__name__}")
    if not len(schema):
        raise InvalidInput("a shard needs at least one data column")
    for name in schema.names:
        if name.startswith("_"):
            raise InvalidInput(f"data column {name!r} starts with '_', which update frames reserve")
    if len(set(schema.names)) != len(schema.names):
        raise InvalidInput(f"data columns repeat a name: {schema.names}")
    return schema


def bound(frontier: Antichain, what: str) -> int | None:
    """The single int time of a frontier, or None for the empty frontier."""
    if not frontier:
        return None
    (t,) = frontier.elements if len(frontier) == 1 else (None,)
    if t is None or isinstance(t, Product) or not isinstance(t, int):
        raise InvalidTime(
            f"{what} {frontier} is not a frontier of int times; shards hold int times"
        )
    return t


def to_frame(updates: Any, schema: pa.Schema, name: str) -> pa.Table:
    """Any supported input as an update frame of ``schema``; an error names what is wrong."""
    target = frame_schema(schema)
    if isinstance(updates, pa.Table):
        if updates.schema.equals(target) and not (
            updates.column(TIME).null_count or updates.column(DIFF).null_count
        ):
            return updates  # already an update frame of this schema
        table = updates
    elif type(updates).__module__.startswith("pandas"):
        table = pa.Table.from_pandas(updates, preserve_index=False)
    elif isinstance(updates, Sequence) or hasattr(updates, "__iter__"):
        return _from_triples(list(updates), schema, target, name)
    else:
        raise InvalidInput(
            f"{name}: updates are a list of (data, time, diff), an Arrow table, or a pandas or "
            f"Spark DataFrame, not {type(updates).__name__}"
        )
    missing = [c for c in target.names if c not in table.column_names]
    extra = [c for c in table.column_names if c not in target.names]
    if missing or extra:
        raise InvalidInput(
            f"{name}: the update frame's columns {table.column_names} do not match the shard's "
            f"{target.names}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unexpected {extra}" if extra else "")
        )
    table = table.select(target.names)
    for f in target:
        column = table.column(f.name)
        if column.null_count and f.name in (TIME, DIFF):
            raise InvalidInput(f"{name}: column {f.name} holds nulls")
        if not column.type.equals(f.type):
            try:
                table = table.set_column(
                    target.get_field_index(f.name), f.name, pc.cast(column, f.type, safe=True)
                )
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InvalidInput(
                    f"{name}: column {f.name} is {column.type}, the shard's schema says "
                    f"{f.type} ({e})"
                ) from None
    return table.cast(target)


def _from_triples(triples: list, schema: pa.Schema, target: pa.Schema, name: str) -> pa.Table:
    width = len(schema)
    columns: list[list[Any]] = [[] for _ in range(width + 2)]
    for i, update in enumerate(triples):
        try:
            data, time, diff = update
        except (TypeError, ValueError):
            raise InvalidInput(
                f"{name}: update {i} is not a (data, time, diff) triple: {update!r}"
            ) from None
        if isinstance(data, dict):
            data = tuple(data.get(c) for c in schema.names)
        elif width == 1 and not isinstance(data, (tuple, list)):
            data = (data,)
        if not isinstance(data, (tuple, list)) or len(data) != width:
            raise InvalidInput(
                f"{name}: update {i} has data {data!r}; the shard's rows have {width} columns "
                f"{schema.names}"
            )
        for column, value in zip(columns, (*data, time, diff), strict=True):
            column.append(value)
    for i, t in enumerate(columns[width]):
        if isinstance(t, bool) or not isinstance(t, int):
            raise InvalidTime(f"{name}: update {i} has time {t!r}; shards hold int times")
        if not 0 <= t <= MAX_TIME:
            raise InvalidTime(f"{name}: update {i} has time {t}, outside 0 <= t < 2^63")
    try:
        return pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(columns, target, strict=True)], schema=target
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
        raise InvalidInput(f"{name}: updates do not fit the shard's schema {schema}: {e}") from None


def check_times(table: pa.Table, lower: int, upper: int | None, name: str) -> None:
    """Every ``_time`` in ``[lower, upper)`` and every ``_diff`` non-null; else name the time."""
    if not table.num_rows:
        return
    times = table.column(TIME)
    low, high = pc.min_max(times).values()
    low, high = low.as_py(), high.as_py()
    if low < 0:
        raise InvalidTime(f"{name}: time {low} is negative; times are 0 <= t < 2^63")
    if low < lower:
        raise FrontierViolation(
            f"{name}: update at time {low} is before the write frontier [{lower}]; "
            "times must be at or beyond the capability's frontier"
        )
    if upper is not None and high >= upper:
        raise FrontierViolation(
            f"{name}: update at time {high} is at or beyond the new upper [{upper}]; "
            "times must be before the new upper"
        )


def consolidate(table: pa.Table, as_of: int | None = None) -> pa.Table:
    """Sum ``_diff`` per data and time (times advanced to ``as_of`` first) and drop zeros."""
    data = [c for c in table.column_names if c not in (TIME, DIFF)]
    if as_of is not None:
        times = pc.max_element_wise(table.column(TIME), pa.scalar(as_of, pa.int64()))
        table = table.set_column(table.schema.get_field_index(TIME), TIME, times)
    summed = table.group_by([*data, TIME], use_threads=False).aggregate([(DIFF, "sum")])
    summed = summed.rename_columns([*data, TIME, DIFF])
    summed = summed.filter(pc.not_equal(summed.column(DIFF), 0))
    return summed.sort_by([(TIME, "ascending")]).cast(table.schema)


def empty_frame(schema: pa.Schema) -> pa.Table:
    return frame_schema(schema).empty_table()
