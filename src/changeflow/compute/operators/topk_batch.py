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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import plan as P
from changeflow.compute.evaluate import Row
from changeflow.compute.operators.batch import Batch, concat, groups_as_rows, summed
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


class ArrowGroups:
    """Groups held as sorted Arrow rows: each a slice ``[start, stop)`` of a :class:`Ranked`
    that several groups share. A step re-ranks the groups it touches (their rows and its
    changes, in one sort) and gives the change of their windows; a Ranked no group refers to
    any more is dropped, and when the Ranked kept hold twice the rows of the groups, they are
    re-ranked into one."""

    def __init__(self, top: P.TopK, end: int | None, kinds: tuple[SqlType, ...]) -> None:
        self.top, self.end, self.kinds = top, end, kinds
        self.slices: dict[Row, tuple[Ranked, int, int]] = {}
        self._owners: dict[int, list] = {}  # id of a Ranked: [it, how many groups refer to it]
        self.rows = 0  # rows of the groups
        self.buffered = 0  # rows of the Ranked they refer to
        self.slack = 4096  # rows the Ranked may hold beyond twice the groups' before compacting

    def __contains__(self, key: Row) -> bool:
        return key in self.slices

    def __len__(self) -> int:
        return len(self.slices)

    def __iter__(self) -> Iterator[Row]:
        return iter(list(self.slices))

    def values(self) -> Iterable[tuple[Ranked, int, int]]:
        return self.slices.values()

    def size(self, keys: list[Row]) -> int:
        """Rows of the held groups ``keys``."""
        return sum(stop - start for _, start, stop in map(self.slices.__getitem__, keys))

    def hold(self, ranked: Ranked, keys: list[Row], groups: np.ndarray) -> None:
        """Hold the ``groups`` (a flag per group) of ``ranked``, whose keys are ``keys``."""
        at = np.flatnonzero(groups)
        if not len(at):
            return
        starts, stops = ranked.starts[at].tolist(), ranked.stops()[at].tolist()
        for i, start, stop in zip(at.tolist(), starts, stops, strict=True):
            self.slices[keys[i]] = (ranked, start, stop)
        owner = self._owners.get(id(ranked))
        if owner is None:
            owner = self._owners[id(ranked)] = [ranked, 0]
            self.buffered += len(ranked.counts)
        owner[1] += len(at)
        self.rows += sum(stops) - sum(starts)

    def pop(self, key: Row) -> tuple[Ranked, int, int] | None:
        held = self.slices.pop(key, None)
        if held is not None:
            ranked, start, stop = held
            self.rows -= stop - start
            owner = self._owners[id(ranked)]
            owner[1] -= 1
            if not owner[1]:
                del self._owners[id(ranked)]
                self.buffered -= len(ranked.counts)
        return held

    def step(self, t: int, ranked: Ranked, keys: list[Row], touched: np.ndarray) -> Batch | None:
        """The change at ``t`` of the windows of the held groups ``touched`` (a flag per group
        of ``ranked``, this step's changes), their new rows held; None (nothing changed)
        where only the rows can tell (a row's count turns negative)."""
        at = np.flatnonzero(touched)
        held = [self.slices[keys[i]] for i in at.tolist()]
        parts, before = self._parts(held, t)
        sizes = ranked.stops() - ranked.starts
        mine = np.flatnonzero(np.repeat(touched, sizes))
        parts.append(_rows(ranked, mine, t, ranked.counts[mine], self.kinds))
        merged = rank(concat(parts, self.kinds), self.top, self.end)
        if merged is None or (merged.counts < 0).any():
            return None
        for i in at.tolist():
            self.pop(keys[i])
        self.hold(merged, merged.keys(self.top.group_by), np.ones(len(merged.starts), bool))
        after = merged.window(np.ones(len(merged.starts), bool), t, self.kinds)
        change = summed(concat([after, *before], self.kinds))
        assert change is not None  # the columns group as rows: they were ranked
        if self.buffered > 2 * self.rows + self.slack:
            self._compact()
        return change

    def _parts(self, held: list[tuple[Ranked, int, int]], t: int) -> tuple[list, list]:
        """The rows of the ``held`` slices (as updates at ``t``), and their windows negated."""
        by_ranked: dict[int, tuple[Ranked, list[np.ndarray]]] = {}
        for ranked, start, stop in held:
            by_ranked.setdefault(id(ranked), (ranked, []))[1].append(np.arange(start, stop))
        rows, windows = [], []
        for ranked, ranges in by_ranked.values():
            at = np.concatenate(ranges)
            rows.append(_rows(ranked, at, t, ranked.counts[at], self.kinds))
            shown = at[ranked.kept[at] > 0]
            windows.append(_rows(ranked, shown, t, -ranked.kept[shown], self.kinds))
        return rows, windows

    def _compact(self) -> None:
        """Re-rank every held group into one Ranked (their windows stay as they are)."""
        keys = list(self.slices)
        parts, _ = self._parts([self.slices[k] for k in keys], 0)
        merged = rank(concat(parts, self.kinds), self.top, self.end)
        if merged is None:
            return
        for key in keys:
            self.pop(key)
        self.hold(merged, merged.keys(self.top.group_by), np.ones(len(merged.starts), bool))


def _rows(ranked: Ranked, at: np.ndarray, t: int, diffs: np.ndarray, kinds: tuple) -> Batch:
    """The rows of ``ranked`` at positions ``at`` as updates at ``t`` with ``diffs``."""
    taken = pa.array(at, pa.int64())
    times = pa.repeat(pa.scalar(t, pa.int64()), len(at))
    return Batch([c.take(taken) for c in ranked.columns], times, pa.array(diffs, pa.int64()), kinds)
