"""Update frames in Arrow (the data columns of a shard's schema, then ``_time`` and ``_diff``)
and the one rule that every input to a shard obeys before anything is written.

The rule, the same for ``(data, time, diff)`` triples (data a tuple, a dict or, for one column,
a value), Arrow tables and record batches, pandas DataFrames and Spark DataFrames:

- **Columns**: exactly the shard's data columns plus ``_time`` and ``_diff``; none unknown,
  none missing (a dict row too).
- **Types**: a value has its column's type, or is cast to it without loss: an int into a
  narrower int or into a float column if it fits exactly; a float into another float column
  (rounded to the nearest if that column is narrower, since Python's floats are all double;
  never overflowing to infinity); an integral float into an int *data* column (``1.0`` ->
  ``1``, because pandas holds an int column with gaps as floats; ``1.9`` never); string,
  binary, timestamp (same time zone), date, time, duration and decimal values between the
  variants of their own kind when nothing is truncated; all-null values into any column.
  Nothing else: no bool as an int, no string parsed as a number.
- **NOT NULL**: a column the schema declares not nullable, and ``_time`` and ``_diff``, hold
  no null.
- **Times and diffs** are integers (never bool or float): times in ``0 <= t < 2^63``, diffs
  in int64.

Each violation is one :class:`InvalidInput` naming the column, the row and the value (also its
fields ``column``, ``row``, ``value``). A row is its index in the input (pandas: position, not
the index label); in a Spark DataFrame, which has no row order, it is the row itself as JSON.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute.values import arrow_values
from changeflow.errors import FrontierViolation, InvalidInput, InvalidTime
from changeflow.time import MAX_TIME
from changeflow.time import to_bound as bound
from changeflow.updates import DIFF, TIME

__all__ = [
    "DIFF",
    "TIME",
    "bound",
    "check_data_schema",
    "check_times",
    "consolidate",
    "empty_frame",
    "frame_schema",
    "to_frame",
]

MIN_DIFF, MAX_DIFF = -(2**63), 2**63 - 1
SEARCH_BLOCK = 4096  # rows checked at once while looking for the first bad row


@functools.lru_cache(maxsize=256)
def frame_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of an update frame for data columns ``schema`` (kept for the last few:
    Arrow's calls give up the GIL, and taking it back waits behind busy threads)."""
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


# -- the rule's vocabulary -------------------------------------------------------------------


def refuse(name: str, column: str, row: Any, value: Any, why: str) -> InvalidInput:
    """The one error of a bad value: where (column, row), what (value) and why."""
    kind = InvalidTime if column == TIME else InvalidInput
    return kind(f"{name}: column {column}, row {row}: {why}", column=column, row=row, value=value)


def type_refused(
    name: str, column: str, actual: str, expected: str, row: Any, value: Any
) -> InvalidInput:
    why = "diffs are integers" if column == DIFF else "times are integers"
    said = why if column in (TIME, DIFF) else f"the shard's schema says {expected}"
    kind = InvalidTime if column == TIME else InvalidInput
    return kind(
        f"{name}: column {column} is {actual}, {said} (row {row}: {value!r})",
        column=column,
        row=row,
        value=value,
    )


def columns_refused(name: str, given: Sequence[Any], expected: Sequence[str]) -> None:
    """An error unless ``given`` holds each of ``expected`` once and nothing else."""
    missing = [c for c in expected if c not in given]
    extra = [c for c in given if c not in expected]
    repeated = sorted({c for c in given if list(given).count(c) > 1}, key=str)
    if missing or extra or repeated:
        raise InvalidInput(
            f"{name}: the update frame's columns {list(given)} do not match the shard's "
            f"{list(expected)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unexpected {extra}" if extra else "")
            + (f"; repeated {repeated}" if repeated else ""),
            missing=missing,
            unexpected=[str(c) for c in extra],
        )


_STRING = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
_BINARY = (
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_binary_view,
    pa.types.is_fixed_size_binary,
)
_KINDS: tuple[tuple[str, tuple[Callable[[pa.DataType], bool], ...]], ...] = (
    ("null", (pa.types.is_null,)),
    ("bool", (pa.types.is_boolean,)),
    ("int", (pa.types.is_integer,)),
    ("float", (pa.types.is_floating,)),
    ("decimal", (pa.types.is_decimal,)),
    ("string", _STRING),
    ("binary", _BINARY),
    ("date", (pa.types.is_date,)),
    ("time", (pa.types.is_time,)),
    ("duration", (pa.types.is_duration,)),
)


def _kind(t: pa.DataType) -> str:
    """The family of ``t`` within which lossless casts are allowed (nested types: ``t``)."""
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.tz}]"
    for kind, tests in _KINDS:
        if any(test(t) for test in tests):
            return kind
    return str(t)


def _castable(source: pa.DataType, target: pa.DataType, integers_only: bool) -> bool:
    """May values of ``source`` be cast to ``target`` at all (each then checked for loss)?"""
    s, t = _kind(source), _kind(target)
    if integers_only:
        return s in ("int", "null")
    return s in (t, "null") or (s, t) in (("int", "float"), ("float", "int"))


def _lossless(values: pa.Array | pa.ChunkedArray, target: pa.DataType) -> Any:
    """``values`` cast to ``target`` if no value changes on the way, else None (a float into
    a narrower float rounds, as float arithmetic does, but may not overflow to infinity)."""
    if pa.types.is_floating(values.type) and pa.types.is_floating(target):
        out = pc.cast(values, target, safe=False)
        overflow = pc.and_(pc.is_inf(out), pc.invert(pc.is_inf(values)))
        return None if pc.any(overflow).as_py() else out
    try:
        out = pc.cast(values, target, safe=True)
        if pa.types.is_null(values.type):
            return out
        back = pc.cast(out, values.type, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    same = pc.equal(back, values)
    if pa.types.is_floating(values.type):
        same = pc.or_kleene(same, pc.and_(pc.is_nan(back), pc.is_nan(values)))
    return None if pc.all(same).as_py() is False else out


def _first(values: pa.Array | pa.ChunkedArray, bad: Callable[[Any], bool]) -> int:
    """The index of the first value for which ``bad`` holds (blocks first, then values)."""
    for start in range(0, len(values), SEARCH_BLOCK):
        block = values.slice(start, SEARCH_BLOCK)
        if bad(block):
            return start + next(i for i in range(len(block)) if bad(block.slice(i, 1)))
    raise AssertionError("no bad value although the whole column is bad")


def _example_row(values: Any, target: pa.DataType) -> int:
    """The row to show for a column of the wrong type: its first value that would not even
    cast without loss, else its first non-null value (0 for an empty or all-null column)."""
    if len(values) and _lossless(values, target) is None:
        return _first(values, lambda part: _lossless(part, target) is None)
    return max(pc.index(pc.is_valid(values), True).as_py(), 0) if len(values) else 0


def _conform(values: Any, field: pa.Field, name: str, offset: int = 0) -> Any:
    """``values`` (an Arrow array) as ``field`` requires, or the error of its first bad row."""
    if pa.types.is_dictionary(values.type):
        values = pc.cast(values, values.type.value_type)
    integers = field.name in (TIME, DIFF)
    if values.null_count and (integers or not field.nullable):
        row = pc.index(pc.is_null(values), True).as_py()
        raise refuse(name, field.name, offset + row, None, "NULL in a NOT NULL column")
    if values.type.equals(field.type):
        out = values
    elif not _castable(values.type, field.type, integers):
        row = _example_row(values, field.type)
        value = values[row].as_py() if len(values) else None
        raise type_refused(name, field.name, str(values.type), str(field.type), row + offset, value)
    else:
        out = _lossless(values, field.type)
        if out is None:
            row = _first(values, lambda part: _lossless(part, field.type) is None)
            raise refuse(
                name,
                field.name,
                offset + row,
                values[row].as_py(),
                f"{values[row].as_py()!r} does not fit {field.type} without loss",
            )
    if field.name == TIME and len(out) and pc.min(out).as_py() < 0:
        row = pc.index(pc.less(out, 0), True).as_py()
        raise refuse(
            name,
            TIME,
            offset + row,
            out[row].as_py(),
            f"time {out[row]} is negative; times are 0 <= t < 2^63",
        )
    return out


# -- every input path ------------------------------------------------------------------------


def to_frame(updates: Any, schema: pa.Schema, name: str) -> pa.Table:
    """Any supported input as an update frame of ``schema``, checked by the module's rule.

    Spark DataFrames go through :func:`~changeflow.storage.spark_write.write_spark_frame`
    instead: they are written by Spark.
    """
    target = frame_schema(schema)
    if isinstance(updates, pa.RecordBatch):
        updates = pa.Table.from_batches([updates])
    if isinstance(updates, pa.Table):
        columns_refused(name, updates.column_names, target.names)
        columns = [_conform(updates.column(f.name), f, name) for f in target]
    elif type(updates).__module__.startswith("pandas"):
        columns_refused(name, list(updates.columns), target.names)
        columns = [_from_pandas(updates[f.name], f, name) for f in target]
    elif isinstance(updates, Sequence) or hasattr(updates, "__iter__"):
        columns = _from_triples(list(updates), schema, name)
        columns = [_from_values(c, f, name) for c, f in zip(columns, target, strict=True)]
    else:
        raise InvalidInput(
            f"{name}: updates are a list of (data, time, diff), an Arrow table, or a pandas or "
            f"Spark DataFrame, not {type(updates).__name__}"
        )
    return pa.Table.from_arrays(columns, schema=target)


def _from_pandas(series: Any, field: pa.Field, name: str) -> Any:
    try:
        values = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # mixed Python objects
        return _from_values(series.tolist(), field, name)
    return _conform(values, field, name)


def _from_values(values: list[Any], field: pa.Field, name: str) -> pa.Array:
    """Python values as ``field`` requires: inferred as Arrow infers them, then conformed
    (arrays are built as the field's list type, a uuid as its 16 bytes, an interval as
    its struct)."""
    values = arrow_values(values, field.type)
    exact = _exact(values, field.type)
    if exact is not None:
        return _conform(exact, field, name)
    if (
        pa.types.is_list(field.type)
        or pa.types.is_struct(field.type)
        or pa.types.is_time(field.type)
    ):
        try:  # (times as microseconds where one is 24:00:00)
            return _conform(pa.array(values, field.type), field, name)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            pass  # refused below, as Arrow infers them
    try:
        inferred = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # mixed types: value by value
        return pa.concat_arrays(
            [_conform(_one(v, field, name, i), field, name, i) for i, v in enumerate(values)]
            or [pa.array([], field.type)]
        )
    return _conform(inferred, field, name)


_EXACT = {
    **dict.fromkeys((pa.int8(), pa.int16(), pa.int32(), pa.int64()), {int}),
    pa.float64(): {float},
    pa.string(): {str},
    pa.large_string(): {str},
    pa.bool_(): {bool},
}


def _exact(values: list[Any], kind: pa.DataType) -> pa.Array | None:
    """``values`` built as ``kind`` directly where each is None or of the one Python type
    that holds such values exactly (an int for an integer column, a float for a double, a
    str for text); None otherwise, or where one does not fit (the rule's path then names
    it)."""
    kinds = _EXACT.get(kind)
    if kinds is None or not set(map(type, values)) <= kinds | {type(None)}:
        return None
    try:
        return pa.array(values, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, UnicodeEncodeError):
        return None


def _one(value: Any, field: pa.Field, name: str, row: int) -> pa.Array:
    try:
        return pa.array([value])
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        raise refuse(
            name, field.name, row, value, f"{value!r} is not a value of type {field.type}"
        ) from None


def _from_triples(triples: list[Any], schema: pa.Schema, name: str) -> list[list[Any]]:
    """The columns (data, then times, then diffs) of ``(data, time, diff)`` triples: checked
    all at once when they are plain, else row by row, which names the first bad one."""
    plain = _plain_columns(triples, len(schema))
    return plain if plain is not None else _checked_columns(triples, schema, name)


def _plain_columns(triples: list[Any], width: int) -> list[list[Any]] | None:
    """The columns of ``triples`` if each is a tuple ``(row, time, diff)`` whose row is a
    tuple or list of ``width`` values (or, for one column, a bare value) and whose time and
    diff are ints in range; else None."""
    if not triples:
        return [[] for _ in range(width + 2)]
    if set(map(type, triples)) - {tuple, list} or set(map(len, triples)) != {3}:
        return None
    data, times, diffs = (list(map(itemgetter(j), triples)) for j in range(3))
    if set(map(type, times)) != {int} or set(map(type, diffs)) != {int}:
        return None
    if min(times) < 0 or max(times) > MAX_TIME or min(diffs) < MIN_DIFF or max(diffs) > MAX_DIFF:
        return None
    kinds = set(map(type, data))
    if width == 1 and not kinds & {tuple, list, dict}:
        return [data, times, diffs]
    if kinds - {tuple, list} or set(map(len, data)) != {width}:
        return None
    return [list(map(itemgetter(j), data)) for j in range(width)] + [times, diffs]


def _checked_columns(triples: list[Any], schema: pa.Schema, name: str) -> list[list[Any]]:
    """The columns of ``triples``, each checked in turn; the first bad one is refused."""
    width = len(schema)
    columns: list[list[Any]] = [[] for _ in range(width + 2)]
    for i, update in enumerate(triples):
        try:
            data, time, diff = update
        except (TypeError, ValueError):
            raise InvalidInput(
                f"{name}: row {i} is not a (data, time, diff) triple: {update!r}", row=i
            ) from None
        data = _row_values(data, schema, name, i)
        _check_int(time, TIME, 0, MAX_TIME, name, i)
        _check_int(diff, DIFF, MIN_DIFF, MAX_DIFF, name, i)
        for column, value in zip(columns, (*data, time, diff), strict=True):
            column.append(value)
    return columns


def _row_values(data: Any, schema: pa.Schema, name: str, row: int) -> tuple[Any, ...]:
    """A row's data values in the schema's order: from a dict (exactly its columns), a tuple or
    list (exactly its width) or, for one column, a bare value."""
    names = schema.names
    if isinstance(data, dict):
        unknown = [k for k in data if k not in names]
        if unknown:
            raise InvalidInput(
                f"{name}: column {unknown[0]}, row {row}: unknown column (value "
                f"{data[unknown[0]]!r}); the shard's columns are {names}",
                column=unknown[0],
                row=row,
                value=data[unknown[0]],
            )
        missing = [c for c in names if c not in data]
        if missing:
            raise InvalidInput(
                f"{name}: column {missing[0]}, row {row}: missing from the row (write None for "
                f"NULL); the shard's columns are {names}",
                column=missing[0],
                row=row,
                value=None,
            )
        return tuple(data[c] for c in names)
    if len(names) == 1 and not isinstance(data, (tuple, list)):
        return (data,)
    if not isinstance(data, (tuple, list)) or len(data) != len(names):
        raise InvalidInput(
            f"{name}: row {row} has data {data!r}; the shard's rows have {len(names)} columns "
            f"{names}",
            row=row,
            value=data,
        )
    return tuple(data)


def _check_int(value: Any, column: str, low: int, high: int, name: str, row: int) -> None:
    """``value`` is an int (not a bool, not a float) in ``[low, high]``."""
    what = "int times" if column == TIME else "integer diffs"
    if value is None:
        raise refuse(name, column, row, value, "NULL in a NOT NULL column")
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(name, column, row, value, f"{value!r} is not an int; shards hold {what}")
    if not low <= value <= high:
        bounds = "0 <= t < 2^63" if column == TIME else "-2^63 <= d < 2^63"
        raise refuse(name, column, row, value, f"{value} is outside {bounds}")


# -- times against frontiers -----------------------------------------------------------------


def check_times(table: pa.Table, lower: int, upper: int | None, name: str) -> None:
    """Every ``_time`` in ``[lower, upper)``; else name the time that is not."""
    if table.num_rows:
        low, high = (v.as_py() for v in pc.min_max(table.column(TIME)).values())
        check_time_range(low, high, lower, upper, name)


def check_time_range(low: int, high: int, lower: int, upper: int | None, name: str) -> None:
    if low < 0:
        raise InvalidTime(f"{name}: time {low} is negative; times are 0 <= t < 2^63", value=low)
    if low < lower:
        raise FrontierViolation(
            f"{name}: update at time {low} is before the write frontier [{lower}]; "
            "times must be at or beyond the capability's frontier",
            time=low,
        )
    if upper is not None and high >= upper:
        raise FrontierViolation(
            f"{name}: update at time {high} is at or beyond the new upper [{upper}]; "
            "times must be before the new upper",
            time=high,
        )


# -- consolidation ---------------------------------------------------------------------------


def consolidate(table: pa.Table, as_of: int | None = None) -> pa.Table:
    """Sum ``_diff`` per data and time (times advanced to ``as_of`` first) and drop zeros."""
    data = [c for c in table.column_names if c not in (TIME, DIFF)]
    if as_of is not None:
        times = pc.max_element_wise(table.column(TIME), pa.scalar(as_of, pa.int64()))
        table = table.set_column(table.schema.get_field_index(TIME), TIME, times)
    lists = [c for c in data if pa.types.is_nested(table.schema.field(c).type)]
    if lists:
        return _consolidate_lists(table, data, lists)
    summed = table.group_by([*data, TIME], use_threads=False).aggregate([(DIFF, "sum")])
    summed = summed.rename_columns([*data, TIME, DIFF])
    summed = summed.filter(pc.not_equal(summed.column(DIFF), 0))
    return summed.sort_by([(TIME, "ascending")]).cast(table.schema)


def list_text(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A list column as text that is equal exactly where the lists are: what Arrow groups
    and sorts by in their place (the order is not the lists' SQL order)."""
    return pa.array([None if v is None else repr(v) for v in column.to_pylist()], pa.string())


def sortable(table: pa.Table) -> pa.Table:
    """``table`` with its list and struct (interval) columns as :func:`list_text`, so that
    Arrow can sort it."""
    for i, f in enumerate(table.schema):
        if pa.types.is_nested(f.type):
            table = table.set_column(i, f.name, list_text(table.column(i)))
    return table


def _consolidate_lists(table: pa.Table, data: list[str], lists: list[str]) -> pa.Table:
    """:func:`consolidate` of a frame with list (array) or struct (interval) columns, which
    Arrow cannot group by: each is grouped by its text, and the group's first row gives the
    values back."""
    keyed = table.append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    keys = []
    for c in data:
        if c in lists:
            keyed = keyed.append_column(f"__{c}", list_text(table.column(c)))
            keys.append(f"__{c}")
        else:
            keys.append(c)
    aggs = [(DIFF, "sum"), ("__row", "min")]
    summed = keyed.group_by([*keys, TIME], use_threads=False).aggregate(aggs)
    summed = summed.filter(pc.not_equal(summed.column(f"{DIFF}_sum"), 0))
    summed = summed.sort_by([(TIME, "ascending")])
    rows = table.take(summed.column("__row_min"))
    return rows.set_column(rows.schema.get_field_index(DIFF), DIFF, summed.column(f"{DIFF}_sum"))


def empty_frame(schema: pa.Schema) -> pa.Table:
    return frame_schema(schema).empty_table()
