"""Keyed recomputation: Distinct and Threshold, whose output for a key depends only on that
key's input rows.

Distinct and Threshold step on batches (:class:`Threshold`): a step's updates are summed per
distinct row by Arrow's hash group-by, so Python runs once per changed row value, and the
output is those rows' columns, taken where their output count changes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute.evaluate import Row
from changeflow.compute.operators.base import (
    Operator,
    Stateful,
    Update,
    Version,
    _accumulate,
    _difference,
    _key,
)
from changeflow.compute.operators.batch import Batch, groups_as_rows
from changeflow.compute.types import SqlType
from changeflow.compute.values import python_values


class KeyedRecompute(Stateful):
    """A one-input operator whose output for a key depends only on that key's input rows: at
    each time, the touched keys' output is computed before and after, and the difference
    emitted. Reduce, Distinct, Threshold and TopK are of this kind."""

    def __init__(
        self, child: Operator, key: tuple[int, ...], output: Callable[[Row, Version], Version]
    ):
        super().__init__((child,))
        self.key, self.output = key, output
        self.arrangement: dict[Row, Counter] = {}

    def apply(self, t: int, changes: list[list[Update]]) -> list[Update]:
        touched: dict[Row, list[Update]] = defaultdict(list)
        for u in changes[0]:
            touched[_key(u[0], self.key)].append(u)
        out: list[Update] = []
        for key, updates in touched.items():
            before = self._output(key)
            for row, _, diff in updates:
                self.held += _accumulate(self.arrangement, key, row, diff)
            out += _difference(t, before, self._output(key))
        return out

    def _output(self, key: Row) -> Version:
        rows = self.arrangement.get(key)
        return self.output(key, dict(rows)) if rows else {}

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        for row, count in collections[0]:
            self.held += _accumulate(self.arrangement, _key(row, self.key), row, count)

    def contents(self) -> list[tuple[Row, int]] | None:
        return [rc for key in self.arrangement for rc in self._output(key).items()]


class Threshold(KeyedRecompute):
    """Distinct (each row once while its count is positive) or Threshold (each row its count
    while positive); a columnar input's step is taken as a batch."""

    def __init__(self, child: Operator, kinds: tuple[SqlType, ...], distinct: bool) -> None:
        width = tuple(range(len(kinds)))
        super().__init__(child, width, self._kept)
        self.kinds, self.distinct = kinds, distinct
        self.batches_exact = all(groups_as_rows(k.arrow) for k in kinds)

    def _kept(self, key: Row, rows: Version) -> Version:
        return {r: self._clip(c) for r, c in rows.items() if c > 0}

    def _clip(self, count: int) -> int:
        return (1 if count > 0 else 0) if self.distinct else max(count, 0)

    def apply_batch(self, t: int, batch: Batch) -> Batch:
        """The output at ``t``: each distinct changed row's change in output count."""
        names = [f"c{i}" for i in range(len(self.kinds))]
        table = pa.Table.from_arrays([*batch.columns, batch.diffs], names=[*names, "_d"])
        try:
            summed = table.group_by(names, use_threads=False).aggregate([("_d", "sum")])
        except pa.ArrowException:  # a type Arrow cannot group
            return Batch.of_updates(self.apply(t, [batch.updates()]), self.kinds)
        columns = [summed.column(n).combine_chunks() for n in names]
        values = [python_values(c) for c in columns]
        rows = zip(*values, strict=True) if values else [()] * summed.num_rows
        before, after = self._counts(rows, summed.column("_d_sum").to_pylist())
        if self.distinct:
            out = np.greater(after, 0).astype(np.int64) - np.greater(before, 0)
        else:
            out = np.maximum(after, 0) - np.maximum(before, 0)
        diffs = pa.array(out, pa.int64())
        changed = pc.not_equal(diffs, 0)
        kept = [c.filter(changed) for c in columns]
        diffs = diffs.filter(changed)
        times = pa.repeat(pa.scalar(t, pa.int64()), len(diffs))
        return Batch(kept, times, diffs, self.kinds)

    def _counts(self, rows: Iterable[Row], diffs: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Each distinct row's count before and after its diff is added to the arrangement
        (``base._accumulate`` inlined: a row is its own key, one Counter per row)."""
        arrangement, counts, held = self.arrangement, [], 0
        for row, diff in zip(rows, diffs, strict=True):
            rows_of = arrangement.get(row)
            before = rows_of[row] if rows_of else 0
            counts.append(before)
            if not diff:
                continue
            if rows_of is None:
                rows_of = arrangement[row] = Counter()
                held += 1
            if before + diff:
                rows_of[row] = before + diff
            else:
                del arrangement[row]
                held -= 1
        self.held += held
        before = np.array(counts, np.int64)
        return before, before + np.array(diffs, np.int64)
