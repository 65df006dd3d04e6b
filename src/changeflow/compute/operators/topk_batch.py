"""Top-k on a batch: a step's rows sorted by one ``sort_indices`` (group, then the order's
columns with their directions and NULL places, then the whole row with NULLs first, as
:func:`~changeflow.compute.evaluate.sort_key` sorts), so equal rows are adjacent and summed as
runs, and each row's share of its group's window found from running sums of the counts: a
group new to the state (all of them at hydration) costs no Python per row.

Arrow orders what the rows order alike where it groups alike (:func:`batch.groups_as_rows`):
integers, numerics (by value; a column holds one scale), text (UTF-8 bytes sort by code point,
as Python's strings), booleans, dates, timestamps, bytea and uuid (bytewise). Floats take the
rows (Arrow tells -0.0 from 0.0 and has its own NaN place; the rows sort a NaN after every
number), as do intervals, jsonb and arrays (structs and lists Arrow cannot sort), and a step
that leaves a new group's row with a negative count (the rows raise its error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import plan as P
from changeflow.compute.evaluate import Row
from changeflow.compute.operators.batch import Batch, groups_as_rows
from changeflow.compute.types import SqlType
from changeflow.compute.values import python_values


def orderable(kinds: tuple[SqlType, ...]) -> bool:
    """Whether Arrow sorts and groups values of every one of ``kinds`` as the rows do."""
    return bool(kinds) and all(groups_as_rows(k.arrow) for k in kinds)


@dataclass
class Ranked:
    """A step's distinct rows, sorted by group, then by the order, then by the whole row."""

    columns: list[pa.Array]
    counts: np.ndarray  # each distinct row's summed diff
    starts: np.ndarray  # the index of each group's first row
    kept: np.ndarray  # each row's count in its group's window, were the group only these rows

    def stops(self) -> np.ndarray:
        if not len(self.starts):
            return self.starts
        return np.append(self.starts[1:], len(self.counts)).astype(np.int64)

    def keys(self, group_by: tuple[int, ...]) -> list[Row]:
        """Each group's key, as rows hold it."""
        values = [python_values(self.columns[i].take(pa.array(self.starts))) for i in group_by]
        return list(zip(*values, strict=True)) if values else [()] * len(self.starts)

    def rows(self, at: np.ndarray) -> list[Row]:
        """The rows at positions ``at``, as Python values."""
        values = [python_values(c.take(pa.array(at, pa.int64()))) for c in self.columns]
        return list(zip(*values, strict=True))

    def window(self, groups: np.ndarray, t: int, kinds: tuple[SqlType, ...]) -> Batch:
        """The windows of the ``groups`` (a flag per group), at ``t``."""
        sizes = self.stops() - self.starts
        at = np.flatnonzero(np.repeat(groups, sizes) & (self.kept > 0))
        taken = pa.array(at, pa.int64())
        times = pa.repeat(pa.scalar(t, pa.int64()), len(at))
        diffs = pa.array(self.kept[at], pa.int64())
        return Batch([c.take(taken) for c in self.columns], times, diffs, kinds)


def rank(batch: Batch, top: P.TopK, end: int | None) -> Ranked | None:
    """The batch's distinct rows ranked per group (one time's updates); None where only the
    rows can tell (see the module's docstring)."""
    if not batch.columns or not all(groups_as_rows(c.type) for c in batch.columns):
        return None
    columns = batch.columns
    keys: list[tuple[pa.Array, str]] = []
    for i in top.group_by:
        keys += [(pc.is_null(columns[i]), "ascending"), (columns[i], "ascending")]
    for o in top.order_by:
        value = columns[o.column]
        keys.append((pc.is_null(value), "ascending" if o.nulls_at_end else "descending"))
        keys.append((value, "descending" if o.desc else "ascending"))
    for value in columns:  # ties: the whole row, a NULL before every value
        keys += [(pc.is_valid(value), "ascending"), (value, "ascending")]
    names = [f"k{i}" for i in range(len(keys))]
    table = pa.Table.from_arrays([k for k, _ in keys], names=names)
    try:
        order = pc.sort_indices(
            table, sort_keys=[(n, d) for n, (_, d) in zip(names, keys, strict=True)]
        )
    except pa.ArrowException:  # a type Arrow cannot sort
        return None
    columns = [c.take(order) for c in columns]
    diffs = batch.diffs.take(order).to_numpy(zero_copy_only=False)
    runs = _starts(columns, len(diffs))  # equal rows, adjacent: summed per run
    counts = np.add.reduceat(diffs, runs) if len(runs) else diffs
    kept = runs[counts != 0]
    columns = [c.take(pa.array(kept, pa.int64())) for c in columns]
    counts = counts[counts != 0]
    starts = _starts([columns[i] for i in top.group_by], len(counts))
    return Ranked(columns, counts, starts, _kept(counts, starts, top.offset, end))


def _starts(keys: list[pa.Array], n: int) -> np.ndarray:
    """Where each run of equal keys (NULL equal to NULL) begins in sorted columns."""
    if not n:
        return np.zeros(0, np.int64)
    new = np.zeros(n, bool)
    new[0] = True
    for key in keys:
        a, b = key.slice(1), key.slice(0, n - 1)
        differ = pc.or_(
            pc.not_equal(pc.is_null(a), pc.is_null(b)), pc.fill_null(pc.not_equal(a, b), False)
        )
        new[1:] |= differ.to_numpy(zero_copy_only=False)
    return np.flatnonzero(new).astype(np.int64)


def _kept(counts: np.ndarray, starts: np.ndarray, offset: int, end: int | None) -> np.ndarray:
    """Each row's count between positions ``offset`` and ``end`` of its group."""
    if not len(counts):
        return np.zeros(0, np.int64)
    before = np.cumsum(counts) - counts  # units before each row, over all the groups
    sizes = np.diff(np.append(starts, len(counts)))
    low = before - np.repeat(before[starts], sizes)  # the row's first position in its group
    high = low + counts
    if end is not None:
        high = np.minimum(high, end)
    return np.maximum(high - np.maximum(low, offset), 0)
