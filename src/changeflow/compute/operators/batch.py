"""Updates a column at a time: the batch that columnar stateless operators pass on, and the
stateless operator families on it (Map, Filter, Project, Negate, Union and the temporal
filter's windows), each equal to its row form (:mod:`linear`) update for update.

A kernel that cannot tell what the rows would (an error among them: an overflow, a division by
zero) hands the batch to the operator's row form, so errors are the rows' own, in their order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import columnar as C
from changeflow.compute.evaluate import Row
from changeflow.compute.expr import Expr
from changeflow.compute.scaled import round_half_even
from changeflow.compute.types import BOOL, NUMERIC, SqlType
from changeflow.compute.values import python_values
from changeflow.errors import EvalError
from changeflow.updates import DIFF, TIME

Update = tuple[Row, int, int]
_FIT_LIMIT = 10**17  # numerics below this are rounded by the kernels, larger ones by the rows


@dataclass
class Batch:
    """``(row, time, diff)`` updates as columns: data columns by position, then times and
    diffs (int64)."""

    columns: list[pa.Array]
    times: pa.Array
    diffs: pa.Array
    kinds: tuple[SqlType, ...]

    def __len__(self) -> int:
        return len(self.times)

    @staticmethod
    def of_table(table: pa.Table, kinds: tuple[SqlType, ...]) -> Batch:
        """An update frame's updates (data columns are those not starting with ``_``)."""
        data = [_array(table.column(n)) for n in table.column_names if not n.startswith("_")]
        return Batch(data, _array(table.column(TIME)), _array(table.column(DIFF)), kinds)

    @staticmethod
    def of_updates(updates: list[Update], kinds: tuple[SqlType, ...]) -> Batch:
        """Updates as a batch (numerics kept exactly, at their largest scale)."""
        columns = [C.to_array([u[0][i] for u in updates], k) for i, k in enumerate(kinds)]
        times = pa.array([u[1] for u in updates], pa.int64())
        return Batch(columns, times, pa.array([u[2] for u in updates], pa.int64()), kinds)

    def updates(self) -> list[Update]:
        """The updates as ``(row, time, diff)`` with Python values."""
        n = len(self)
        values = [python_values(c) for c in self.columns]
        rows = zip(*values, strict=True) if values else (() for _ in range(n))
        return list(zip(rows, self.times.to_pylist(), self.diffs.to_pylist(), strict=True))

    def filter(self, mask: pa.Array) -> Batch:
        """The updates where ``mask`` holds: one record batch filtered, so the mask becomes
        a selection once for all the columns (half the time of a filter per column)."""
        arrays = [*self.columns, self.times, self.diffs]
        kept = pa.RecordBatch.from_arrays(arrays, names=[str(i) for i in range(len(arrays))])
        out = kept.filter(mask).columns
        return Batch(out[:-2], out[-2], out[-1], self.kinds)

    def table(self, schema: pa.Schema) -> pa.Table | None:
        """An update frame of ``schema`` (numerics rounded to its scale, half to even, as
        the rows' output is); None where only the rows can tell (a numeric out of range)."""
        arrays: list[pa.Array] = []
        for column, field in zip(self.columns, schema, strict=True):
            if pa.types.is_decimal(column.type) and column.type != field.type:
                fast = round_half_even(column, field.type, _FIT_LIMIT)
                if fast is not None:
                    arrays.append(fast)
                    continue
                biggest = pc.max(pc.abs(column)).as_py()
                if biggest is not None and biggest >= _FIT_LIMIT:
                    return None
                scale = field.type.scale
                column = pc.round(column, ndigits=scale, round_mode="half_to_even")
            arrays.append(column.cast(field.type))
        arrays += [self.times, self.diffs]
        return pa.Table.from_arrays(arrays, names=[*schema.names, TIME, DIFF])


def _array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks()
    return column


def concat(batches: list[Batch], kinds: tuple[SqlType, ...]) -> Batch:
    """One batch of several (numerics of different scales brought to the largest)."""
    batches = [b for b in batches if len(b)]
    if not batches:
        return Batch([pa.array([], k.arrow) for k in kinds], _empty(), _empty(), kinds)
    if len(batches) == 1:
        return batches[0]
    columns = [unify([b.columns[i] for b in batches], k) for i, k in enumerate(kinds)]
    times = pa.concat_arrays([b.times for b in batches])
    return Batch(columns, times, pa.concat_arrays([b.diffs for b in batches]), kinds)


def unify(parts: list[pa.Array], kind: SqlType) -> pa.Array:
    """Arrays of one SQL type as one (numerics of different scales brought to the largest)."""
    types = {p.type for p in parts if p.type != pa.null()}
    if len(types) > 1 and kind == NUMERIC:
        target: pa.DataType = pa.decimal256(76, max(t.scale for t in types))
    else:
        target = next(iter(types), kind.arrow)
    return pa.concat_arrays([p.cast(target) for p in parts])


def _empty() -> pa.Array:
    return pa.array([], pa.int64())


def groups_as_rows(kind: pa.DataType) -> bool:
    """Whether Arrow's group-by tells values of ``kind`` apart exactly as Python rows do
    (floats do not: -0.0 and 0.0, NaN; nor do nested and struct values)."""
    t = pa.types
    return (
        t.is_integer(kind)
        or t.is_decimal(kind)
        or t.is_string(kind)
        or t.is_large_string(kind)
        or t.is_boolean(kind)
        or t.is_date(kind)
        or t.is_timestamp(kind)
        or t.is_binary(kind)
        or t.is_fixed_size_binary(kind)
    )


def summed(batch: Batch, timed: bool = True) -> Batch | None:
    """The batch's updates summed per distinct row and time (per row alone, times made zero,
    where not ``timed``: an arrangement has none), none whose sum is zero; None where Arrow
    cannot tell the rows apart as Python does."""
    if not all(groups_as_rows(c.type) for c in batch.columns):
        return None
    names = [f"c{i}" for i in range(len(batch.columns))]
    keys = [*names, TIME] if timed else names
    times = [batch.times] if timed else []
    table = pa.Table.from_arrays([*batch.columns, *times, batch.diffs], names=[*keys, DIFF])
    try:
        sums = table.group_by(keys, use_threads=False).aggregate([(DIFF, "sum")])
    except pa.ArrowException:
        return None
    diffs = sums.column(f"{DIFF}_sum").combine_chunks()
    nonzero = pc.not_equal(diffs, 0)
    columns = [sums.column(n).combine_chunks().filter(nonzero) for n in keys]
    diffs = diffs.filter(nonzero)
    if not timed:
        columns.append(pa.repeat(pa.scalar(0, pa.int64()), len(diffs)))
    return Batch(columns[:-1], columns[-1], diffs, batch.kinds)


RowFn = Callable[[Update], Iterable[Update]]


def by_rows(batch: Batch, fn: RowFn, kinds: tuple[SqlType, ...]) -> Batch:
    """The row form of an operator over the batch: the rows' values and errors exactly."""
    return Batch.of_updates([out for u in batch.updates() for out in fn(u)], kinds)


def map_batch(batch: Batch, exprs: tuple[Expr, ...], fn: RowFn, kinds: tuple) -> Batch:
    """Map: the batch's columns, then each expression's."""
    n, added = len(batch), []
    try:
        for e in exprs:
            added.append(C.evaluate(e, batch.columns, n))
    except (C.Rows, EvalError):  # let the rows raise the first failing row's error
        return by_rows(batch, fn, kinds)
    return Batch(batch.columns + added, batch.times, batch.diffs, kinds)


def filter_batch(batch: Batch, predicates: tuple[Expr, ...], fn: RowFn) -> Batch:
    """Filter: the updates every predicate holds for; a predicate sees only the rows the
    ones before it kept, as the rows' evaluation stops at the first that fails."""
    out = batch
    try:
        for p in predicates:
            if not len(out):
                break
            mask = C.evaluate(p, out.columns, len(out))
            out = out.filter(pc.fill_null(mask, False))
    except (C.Rows, EvalError):
        return by_rows(batch, fn, batch.kinds)
    return out


def project_batch(batch: Batch, columns: tuple[int, ...], kinds: tuple) -> Batch:
    return Batch([batch.columns[i] for i in columns], batch.times, batch.diffs, kinds)


def negate_batch(batch: Batch) -> Batch:
    return Batch(batch.columns, batch.times, pc.negate(batch.diffs), batch.kinds)


def window_batch(batch: Batch, lower: tuple, upper: tuple, fn: RowFn) -> Batch:
    """A temporal filter: each row from ``max(t, lower…)`` until ``max(t, min(upper…))``,
    nothing where a bound is NULL or the window is empty."""
    n = len(batch)
    try:
        lows = [C.evaluate(e, batch.columns, n) for e in lower]
        highs = [C.evaluate(e, batch.columns, n) for e in upper]
    except (C.Rows, EvalError):
        return by_rows(batch, fn, batch.kinds)
    bounds = [b.cast(pa.int64()) for b in (*lows, *highs)]
    valid: Any = pa.scalar(True)
    for b in bounds:
        valid = pc.and_(valid, pc.is_valid(b))
    start = pc.max_element_wise(batch.times, *bounds[: len(lows)]) if lows else batch.times
    if not highs:
        kept = batch.filter(C.full(valid, n, BOOL))
        return Batch(kept.columns, start.filter(C.full(valid, n, BOOL)), kept.diffs, kept.kinds)
    end = pc.max_element_wise(batch.times, pc.min_element_wise(*bounds[len(lows) :]))
    keep = pc.fill_null(C.full(pc.and_(valid, pc.greater(end, start)), n, BOOL), False)
    return _open_and_close(batch, keep.to_numpy(zero_copy_only=False), start, end)


def _open_and_close(batch: Batch, keep: np.ndarray, start: pa.Array, end: pa.Array) -> Batch:
    """The kept rows twice, opened at ``start`` and closed at ``end``: one gather per
    column (no filter and concatenation of the data)."""
    at = np.flatnonzero(keep)
    both = pa.array(np.concatenate([at, at]))
    starts, ends = (pc.fill_null(b, 0).to_numpy(zero_copy_only=False) for b in (start, end))
    diffs = batch.diffs.to_numpy(zero_copy_only=False)[at]
    return Batch(
        [c.take(both) for c in batch.columns],
        pa.array(np.concatenate([starts[at], ends[at]])),
        pa.array(np.concatenate([diffs, -diffs])),
        batch.kinds,
    )
