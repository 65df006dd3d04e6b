"""An inner join's step on batches: ``dA ⋈ B + A ⋈ dB + dA ⋈ dB`` probed with the step's
keys against the arrangements, the output a batch (so the operators above stay columnar).

A side's changed batches wait as batches (:class:`Arranged`) until a step probes that side or
they outgrow its arrangement: a side that only changes (the facts beside a dimension that
does not) costs no Python per changed row.

The changed rows come from the batches by position (Arrow ``take``), the arranged rows they
meet from the arrangements' rows; the join's equivalences and residual are checked on the
output batch with the filter's kernels (which hand the rows over where only they can tell).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from itertools import repeat

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import columnar as C
from changeflow.compute.evaluate import Row
from changeflow.compute.expr import Expr
from changeflow.compute.operators.base import Update
from changeflow.compute.operators.batch import Batch, concat, filter_batch
from changeflow.compute.types import SqlType
from changeflow.compute.values import python_values

Arrangement = dict[Row, Counter]
_WAITING_ROWS = 1 << 16  # changed rows a side keeps as batches at least, however small it is


class Arranged:
    """One side of a join by key: its arrangement (distinct rows and their counts per key)
    and the changed batches not yet added to it."""

    def __init__(self, columns: tuple[int, ...]) -> None:
        self.columns = columns
        self.rows: Arrangement = {}
        self.held = 0  # distinct rows in ``rows``
        self.waiting: list[Batch] = []
        self.waiting_rows = 0
        self.limit = _WAITING_ROWS

    def arrangement(self) -> Arrangement:
        """The arrangement with every waiting batch added."""
        if self.waiting:
            batch = concat(self.waiting, self.waiting[0].kinds)
            self.waiting, self.waiting_rows = [], 0
            self.held += _arrange(self.rows, Side(batch, self.columns))
        return self.rows

    def add(self, batch: Batch) -> None:
        """Changes to add before the arrangement is next read (at once if the waiting rows
        outnumber the arranged ones and :attr:`limit`)."""
        if len(batch):
            self.waiting.append(batch)
            self.waiting_rows += len(batch)
            if self.waiting_rows > max(self.held, self.limit):
                self.arrangement()


class Side:
    """One input's changes at a time: the batch, each row's key (None where a key column is
    NULL: it matches nothing) and, by key, the positions of its rows."""

    def __init__(self, batch: Batch, columns: tuple[int, ...]) -> None:
        self.batch = batch
        values = [python_values(batch.columns[c]) for c in columns]
        if len(values) == 1:
            self.keys = [None if v is None else (v,) for v in values[0]]
        else:
            self.keys = [None if None in k else k for k in zip(*values, strict=True)]
        self.at: dict[Row, list[int]] = defaultdict(list)
        for i, key in enumerate(self.keys):
            if key is not None:
                self.at[key].append(i)


def delta_join(
    t: int,
    batches: list[Batch],
    keys: tuple[tuple[int, ...], tuple[int, ...]],
    sides: tuple[Arranged, Arranged],
    kinds: tuple[tuple[SqlType, ...], tuple[SqlType, ...]],
    check: tuple[tuple[Expr, ...], Callable[[Update], list[Update]]],
) -> Batch:
    """The output at ``t`` of both inputs' changes at ``t`` (``batches``), which are then
    added to the ``sides``."""
    left, right = Side(batches[0], keys[0]), Side(batches[1], keys[1])
    out_kinds = kinds[0] + kinds[1]
    parts = []
    # dA ⋈ B: the left's changes by position, the right's arranged rows
    picks, rows, which, counts = [], [], [], []
    arranged_right = sides[1].arrangement() if left.at else {}
    for key, at in left.at.items():
        for other, oc in arranged_right.get(key, {}).items():
            picks += at
            which += repeat(len(rows), len(at))
            rows.append(other)
            counts += repeat(oc, len(at))
    if picks:
        arranged = _built(rows, which, kinds[1])
        parts.append(_pairs(_taken(left.batch, picks), arranged, counts, t, out_kinds, False))
    # A ⋈ dB: the left's arranged rows (before the step), the right's changes by position
    picks, rows, which, counts = [], [], [], []
    arranged_left = sides[0].arrangement() if right.at else {}
    for key, at in right.at.items():
        for other, oc in arranged_left.get(key, {}).items():
            picks += at
            which += repeat(len(rows), len(at))
            rows.append(other)
            counts += repeat(oc, len(at))
    if picks:
        arranged = _built(rows, which, kinds[0])
        parts.append(_pairs(_taken(right.batch, picks), arranged, counts, t, out_kinds, True))
    # dA ⋈ dB: both by position
    lefts, rights = [], []
    for key, at in right.at.items():
        for i in left.at.get(key, ()):
            lefts += repeat(i, len(at))
            rights += at
    if lefts:
        a, b = _taken(left.batch, lefts), _taken(right.batch, rights)
        diffs = pc.multiply(a.diffs, b.diffs)
        parts.append(Batch(a.columns + b.columns, _at(t, len(lefts)), diffs, out_kinds))
    sides[0].add(left.batch)
    sides[1].add(right.batch)
    out = concat(parts, out_kinds)
    predicates, by_row = check
    return filter_batch(out, predicates, by_row) if len(out) else out


def _taken(batch: Batch, positions: list[int]) -> Batch:
    at = pa.array(positions, pa.int64())
    columns = [c.take(at) for c in batch.columns]
    return Batch(columns, batch.times.take(at), batch.diffs.take(at), batch.kinds)


def _built(rows: list[Row], which: list[int], kinds: tuple[SqlType, ...]) -> list[pa.Array]:
    """Columns of the arranged ``rows`` at the positions ``which`` (each distinct row is
    converted once)."""
    at = pa.array(which, pa.int64())
    return [C.to_array([r[i] for r in rows], k).take(at) for i, k in enumerate(kinds)]


def _pairs(
    changed: Batch, arranged: list[pa.Array], counts: list, t: int, kinds: tuple, flip: bool
) -> Batch:
    """Changed rows beside the arranged rows they meet (the arranged ones first if ``flip``),
    each pair's diff the change's times the arranged count."""
    columns = arranged + changed.columns if flip else changed.columns + arranged
    diffs = pc.multiply(changed.diffs, pa.array(counts, pa.int64()))
    return Batch(columns, _at(t, len(diffs)), diffs, kinds)


def _at(t: int, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(t, pa.int64()), n)


def _arrange(arrangement: Arrangement, changes: Side) -> int:
    """Add the changes to the arrangement (as ``base._accumulate`` row by row, inlined: every
    changed row passes here); the change in distinct rows held."""
    if not changes.at:
        return 0
    batch, held = changes.batch, 0
    rows = zip(*(python_values(c) for c in batch.columns), strict=True)
    for key, row, diff in zip(changes.keys, rows, batch.diffs.to_pylist(), strict=True):
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
