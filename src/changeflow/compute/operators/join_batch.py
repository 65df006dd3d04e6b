"""An inner join's step on batches: ``dA ⋈ B + A ⋈ dB + dA ⋈ dB`` probed with the step's
keys against the arrangements, the output a batch (so the operators above stay columnar).

A side's changed batches wait as batches (:class:`Arranged`) until a step probes that side: a
side that only changes (the facts beside a dimension that does not, a snapshot hydrating it)
costs no Python per changed row.

The changed rows come from the batches by position (Arrow ``take``), the arranged rows they
meet from the arrangements' rows; the join's equivalences and residual are checked on the
output batch with the filter's kernels (which hand the rows over where only they can tell).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import columnar as C
from changeflow.compute.evaluate import Row
from changeflow.compute.expr import Expr
from changeflow.compute.operators.base import Update
from changeflow.compute.operators.batch import (
    Batch,
    concat,
    filter_batch,
    groups_as_rows,
    summed,
)
from changeflow.compute.types import SqlType
from changeflow.compute.values import python_values

Arrangement = dict[Row, Counter]
_WAITING_ROWS = 1 << 16  # waiting rows below which they are never summed
_GROUPED_ROWS = 2048  # a step's rows from which Arrow groups them by key (a fixed ~0.3 ms)


class Arranged:
    """One side of a join by key: its arrangement (distinct rows and their counts per key)
    and the changed batches not yet added to it. The waiting batches are summed per distinct
    row in Arrow whenever they double (past :attr:`limit` rows), so they stay within about
    twice the rows they leave, however the rows churn; where Arrow cannot sum them as the
    rows would (:func:`groups_as_rows`), they are added to the arrangement instead."""

    def __init__(self, columns: tuple[int, ...]) -> None:
        self.columns = columns
        self.rows: Arrangement = {}
        self.held = 0  # distinct rows in ``rows``
        self.waiting: list[Batch] = []
        self.waiting_rows = 0
        self.settled = 0  # waiting rows when last summed (or first found past the limit)
        self.limit = _WAITING_ROWS

    def arrangement(self) -> Arrangement:
        """The arrangement with every waiting batch added."""
        if self.waiting:
            batch = concat(self.waiting, self.waiting[0].kinds)
            self.waiting, self.waiting_rows, self.settled = [], 0, 0
            self.held += _arrange(self.rows, batch, self.columns)
        return self.rows

    def empty(self) -> bool:
        """Whether nothing is arranged or waiting (a hydrating join's sides)."""
        return not self.rows and not self.waiting

    def add(self, batch: Batch) -> None:
        """Changes to add before the arrangement is next read."""
        if not len(batch):
            return
        self.waiting.append(batch)
        self.waiting_rows += len(batch)
        if self.waiting_rows <= max(2 * self.settled, self.limit):
            return
        if not self.settled:  # the first past the limit (a snapshot, say) is taken as it is
            self.settled = self.waiting_rows
            return
        sums = summed(concat(self.waiting, batch.kinds), timed=False)
        if sums is None:
            self.arrangement()
        else:
            self.waiting, self.waiting_rows, self.settled = [sums], len(sums), len(sums)


class Side:
    """One input's changes at a time: the batch and, by key, the positions of its rows (none
    with a NULL key column: it matches nothing), grouped by Arrow where there are enough and
    it tells the keys apart as Python does, so Python runs once per distinct key."""

    def __init__(self, batch: Batch, columns: tuple[int, ...]) -> None:
        self.batch = batch
        self.at = _positions(batch, columns)


def _row_keys(batch: Batch, columns: tuple[int, ...]) -> list[Row | None]:
    """Each row's key (None where a key column is NULL)."""
    values = [python_values(batch.columns[c]) for c in columns]
    if not values:
        return [()] * len(batch)
    if len(values) == 1:
        return [None if v is None else (v,) for v in values[0]]
    return [None if None in k else k for k in zip(*values, strict=True)]


def _positions(batch: Batch, columns: tuple[int, ...]) -> dict[Row, np.ndarray]:
    keys = [batch.columns[c] for c in columns]
    if columns and len(batch) >= _GROUPED_ROWS and all(groups_as_rows(k.type) for k in keys):
        names = [f"k{i}" for i in range(len(keys))]
        table = pa.Table.from_arrays([*keys, pa.array(np.arange(len(batch)))], [*names, "i"])
        for n in names:
            table = table.filter(pc.is_valid(table.column(n)))
        grouped = table.group_by(names, use_threads=False).aggregate([("i", "list")])
        lists = grouped.column("i_list").combine_chunks()
        offsets = lists.offsets.to_numpy()
        flat = lists.values.to_numpy()
        values = [python_values(grouped.column(n)) for n in names]
        rows = zip(*values, strict=True)
        return {k: flat[a:b] for k, a, b in zip(rows, offsets[:-1], offsets[1:], strict=True)}
    at: dict[Row, list[int]] = defaultdict(list)
    for i, key in enumerate(_row_keys(batch, columns)):
        if key is not None:
            at[key].append(i)
    return {k: np.array(v, np.int64) for k, v in at.items()}


def delta_join(
    t: int,
    batches: list[Batch],
    keys: tuple[tuple[int, ...], tuple[int, ...]],
    sides: tuple[Arranged, Arranged],
    kinds: tuple[tuple[SqlType, ...], tuple[SqlType, ...]],
    check: tuple[tuple[Expr, ...], Callable[[Update], list[Update]]],
    changed: tuple[Side, Side] | None = None,
) -> Batch:
    """The output at ``t`` of both inputs' changes at ``t`` (``batches``, or as ``changed``
    if given), which are then added to the ``sides``. Where both sides hold nothing yet (a
    join hydrating), the output is ``dA ⋈ dB`` alone, paired by Acero's hash join."""
    out_kinds = kinds[0] + kinds[1]
    if changed is None and sides[0].empty() and sides[1].empty():
        pairs = _hash_pairs(batches, keys)
        if pairs is not None:
            a, b = _taken(batches[0], pairs[0]), _taken(batches[1], pairs[1])
            out = Batch(
                a.columns + b.columns, _at(t, len(a)), pc.multiply(a.diffs, b.diffs), out_kinds
            )
            sides[0].add(batches[0])
            sides[1].add(batches[1])
            return filter_batch(out, *check) if len(out) else out
    left, right = changed or (Side(batches[0], keys[0]), Side(batches[1], keys[1]))
    parts = []
    # dA ⋈ B: the left's changes by position, the right's arranged rows
    arranged_right = sides[1].arrangement() if left.at else {}
    part = _meet(left, arranged_right, kinds[1], t, out_kinds, False)
    if part is not None:
        parts.append(part)
    # A ⋈ dB: the left's arranged rows (before the step), the right's changes by position
    arranged_left = sides[0].arrangement() if right.at else {}
    part = _meet(right, arranged_left, kinds[0], t, out_kinds, True)
    if part is not None:
        parts.append(part)
    # dA ⋈ dB: both by position
    lefts, rights = [], []
    for key, at in right.at.items():
        mine = left.at.get(key)
        if mine is not None:
            lefts.append(np.repeat(mine, len(at)))
            rights.append(np.tile(at, len(mine)))
    if lefts:
        a = _taken(left.batch, np.concatenate(lefts))
        b = _taken(right.batch, np.concatenate(rights))
        diffs = pc.multiply(a.diffs, b.diffs)
        parts.append(Batch(a.columns + b.columns, _at(t, len(a)), diffs, out_kinds))
    sides[0].add(left.batch)
    sides[1].add(right.batch)
    out = concat(parts, out_kinds)
    predicates, by_row = check
    return filter_batch(out, predicates, by_row) if len(out) else out


def _hash_pairs(
    batches: list[Batch], keys: tuple[tuple[int, ...], tuple[int, ...]]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The positions of the rows of ``batches[0]`` and ``batches[1]`` whose keys are equal
    (none with a NULL key column), by Acero's hash join; None for a small step (Python's
    grouping costs less), a cross join, or keys Arrow may not match as Python does (floats,
    types that differ between the sides)."""
    if not keys[0] or sum(map(len, batches)) < _GROUPED_ROWS:
        return None
    names = [f"k{i}" for i in range(len(keys[0]))]
    tables = []
    for batch, columns, at in zip(batches, keys, ("i", "j"), strict=True):
        key = [batch.columns[c] for c in columns]
        if not all(groups_as_rows(k.type) for k in key):
            return None
        table = pa.Table.from_arrays([*key, pa.array(np.arange(len(batch)))], [*names, at])
        valid = None
        for k in key:
            valid = pc.is_valid(k) if valid is None else pc.and_(valid, pc.is_valid(k))
        tables.append(table.filter(valid))
    try:
        joined = tables[0].join(tables[1], keys=names, join_type="inner", use_threads=False)
    except pa.ArrowException:  # types that differ between the sides
        return None
    return tuple(joined.column(c).to_numpy() for c in ("i", "j"))  # type: ignore[return-value]


def _meet(
    changes: Side,
    arrangement: Arrangement,
    kinds: tuple[SqlType, ...],
    t: int,
    out_kinds: tuple[SqlType, ...],
    flip: bool,
) -> Batch | None:
    """The changed rows beside the arranged rows of their key (None if they meet none)."""
    picks, rows, counts = [], [], []
    for key, at in changes.at.items():
        for other, count in arrangement.get(key, {}).items():
            picks.append(at)
            rows.append(other)
            counts.append(count)
    if not picks:
        return None
    sizes = [len(p) for p in picks]
    which = np.repeat(np.arange(len(rows)), sizes)
    arranged = _built(rows, which, kinds)
    changed = _taken(changes.batch, np.concatenate(picks))
    return _pairs(changed, arranged, np.repeat(counts, sizes), t, out_kinds, flip)


def _taken(batch: Batch, positions: np.ndarray) -> Batch:
    at = pa.array(positions, pa.int64())
    columns = [c.take(at) for c in batch.columns]
    return Batch(columns, batch.times.take(at), batch.diffs.take(at), batch.kinds)


def _built(rows: list[Row], which: np.ndarray, kinds: tuple[SqlType, ...]) -> list[pa.Array]:
    """Columns of the arranged ``rows`` at the positions ``which`` (each distinct row is
    converted once)."""
    at = pa.array(which, pa.int64())
    return [C.to_array([r[i] for r in rows], k).take(at) for i, k in enumerate(kinds)]


def _pairs(
    changed: Batch, arranged: list[pa.Array], counts: np.ndarray, t: int, kinds: tuple, flip: bool
) -> Batch:
    """Changed rows beside the arranged rows they meet (the arranged ones first if ``flip``),
    each pair's diff the change's times the arranged count."""
    columns = arranged + changed.columns if flip else changed.columns + arranged
    diffs = pc.multiply(changed.diffs, pa.array(counts, pa.int64()))
    return Batch(columns, _at(t, len(diffs)), diffs, kinds)


def _at(t: int, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(t, pa.int64()), n)


def _arrange(arrangement: Arrangement, batch: Batch, columns: tuple[int, ...]) -> int:
    """Add the changes to the arrangement by their key ``columns`` (as ``base._accumulate``
    row by row, inlined: every changed row passes here); the change in distinct rows held."""
    held, n = 0, len(batch)
    values = [python_values(c) for c in batch.columns]
    rows = zip(*values, strict=True) if values else (() for _ in range(n))
    keys = _row_keys(batch, columns)
    for key, row, diff in zip(keys, rows, batch.diffs.to_pylist(), strict=True):
        if key is None or not diff:
            continue
        counts = arrangement.get(key)
        if counts is None:
            arrangement[key] = Counter({row: diff})
            held += 1
            continue
        before = counts.get(row, 0)
        if before + diff:
            counts[row] = before + diff
            held += 0 if before else 1
        else:
            del counts[row]
            held -= 1
            if not counts:
                del arrangement[key]
    return held
