"""TopK: per group, the rows ranked ``offset`` to ``offset + limit``, kept sorted.

A group's rows are sorted by :func:`~changeflow.compute.evaluate.sort_key` (each comparison
SQL's, in Python), or where every column is of a type Python compares as SQL does, by an
equal key of plain values (:func:`plain_key`), which the sorted list compares in C.

A columnar input's step is ranked in Arrow (:mod:`topk_batch`): a group new to the state (all
of them when a dataflow hydrates by stepping its inputs' snapshots) gives its window without
Python per row and is kept as its sorted Arrow rows. A later columnar step re-ranks the groups
it touches with their held rows in one Arrow sort, its output the change of their windows,
while those groups are not much larger than the step (:data:`RERANK`); larger ones, and any
group a step fed as rows touches, become sorted lists (at the cost of their size, once), which
take a step's rows of their groups one by one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from sortedcontainers import SortedKeyList

from changeflow.compute import plan as P
from changeflow.compute.evaluate import Row, _positive, sort_key
from changeflow.compute.operators.base import (
    Operator,
    Stateful,
    Update,
    Version,
    _difference,
    _key,
)
from changeflow.compute.operators.batch import Batch, concat
from changeflow.compute.operators.topk_batch import ArrowGroups, orderable, rank
from changeflow.compute.types import BOOL, DATE, INT2, INT4, INT8, NUMERIC, TEXT, SqlType

# A step re-ranks the groups it touches that are held as Arrow rows while they hold at most
# this many rows per changed row, or this many in all (beyond, a step of a few changes to large
# groups would cost their size: their sorted lists take it, at a log of their size per change).
RERANK, RERANK_ROWS = 16, 4096
_PLAIN = (BOOL, INT2, INT4, INT8, NUMERIC, DATE, TEXT)  # Python orders their values as SQL
_NEGATABLE = (BOOL, INT2, INT4, INT8, NUMERIC, DATE)  # a descending key is the value negated


class TopK(Stateful):
    """Per group, the rows ranked ``offset`` to ``offset + limit``. Each group's rows are kept
    sorted (a sorted list of the distinct rows, their counts beside it), so a step costs its
    changes times the log of the group's size plus the window it reads, not the group's size."""

    def __init__(self, child: Operator, top: P.TopK) -> None:
        super().__init__((child,))
        self.top = top
        self.end = None if top.limit is None else top.offset + top.limit
        self.groups: dict[Row, tuple[SortedKeyList, Counter]] = {}
        order = top.order_by
        self.kinds = tuple(c.type for c in top.schema)
        self.cold = ArrowGroups(top, self.end, self.kinds)  # groups held as sorted Arrow rows
        self.listed = 0  # rows of the sorted lists
        self.rerank = (RERANK, RERANK_ROWS)
        self.key = plain_key(order, self.kinds) or (lambda r: sort_key(r, order))
        self.batches_exact = orderable(self.kinds)

    def apply_batch(self, t: int, batch: Batch) -> Batch:
        """The output at ``t``: new groups' windows from the ranking, the changes of groups
        held as Arrow rows by re-ranking them with theirs, the other groups' changes through
        their sorted lists."""
        ranked = rank(batch, self.top, self.end)
        if ranked is None:
            return Batch.of_updates(self.apply(t, [batch.updates()]), self.kinds)
        keys = ranked.keys(self.top.group_by)
        new = np.array([k not in self.groups and k not in self.cold for k in keys], bool)
        cold = np.array([k in self.cold for k in keys], bool)
        sizes = ranked.stops() - ranked.starts
        if (np.repeat(new, sizes) & (ranked.counts < 0)).any():  # the rows raise its error
            return Batch.of_updates(self.apply(t, [batch.updates()]), self.kinds)
        parts = [ranked.window(new, t, self.kinds)]
        rows = ~new & ~cold
        if cold.any():
            touched = [keys[i] for i in np.flatnonzero(cold).tolist()]
            change = None
            per_row, rows_at_most = self.rerank
            if self.cold.size(touched) <= per_row * len(batch) + rows_at_most:
                change = self.cold.step(t, ranked, keys, cold)
            if change is None:
                # the groups dwarf the step, or a count turns negative (the rows raise its
                # error): their sorted lists take it
                for key in touched:
                    self._warm(key)
                rows = ~new
            else:
                parts.append(change)
        self.cold.hold(ranked, keys, new)
        if rows.any():
            old = np.flatnonzero(np.repeat(rows, sizes))
            updates = list(
                zip(ranked.rows(old), [t] * len(old), ranked.counts[old].tolist(), strict=True)
            )
            parts.append(Batch.of_updates(self.apply(t, [updates]), self.kinds))
        self.held = self.cold.rows + self.listed
        return concat(parts, self.kinds) if len(parts) > 1 else parts[0]

    def _warm(self, key: Row) -> None:
        """A group held as sorted Arrow rows becomes its sorted list (at its size, once)."""
        cold = self.cold.pop(key)
        if cold is None:
            return
        ranked, start, stop = cold
        rows = ranked.rows(np.arange(start, stop))
        counts = Counter(dict(zip(rows, ranked.counts[start:stop].tolist(), strict=True)))
        self.groups[key] = (SortedKeyList(rows, key=self.key), counts)
        self.listed += len(rows)

    def _group(self, key: Row) -> tuple[SortedKeyList, Counter]:
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = (SortedKeyList(key=self.key), Counter())
        return group

    def _add(self, key: Row, row: Row, diff: int) -> None:
        rows, counts = self._group(key)
        before = counts[row]
        counts[row] = after = before + diff
        if not after:
            del counts[row]
            rows.remove(row)
            self.listed -= 1
        elif not before:
            rows.add(row)
            self.listed += 1

    def _window(self, key: Row) -> Version:
        """The group's output: its rows from position ``offset`` up to ``offset + limit``."""
        group = self.groups.get(key)
        if group is None:
            return {}
        kept: Version = {}
        position, offset, end = 0, self.top.offset, self.end
        for row in group[0]:
            count = group[1][row]
            hi = position + count if end is None else min(position + count, end)
            if hi > max(position, offset):
                kept[row] = hi - max(position, offset)
            position += count
            if end is not None and position >= end:
                break
        return kept

    def apply(self, t: int, changes: list[list[Update]]) -> list[Update]:
        touched: dict[Row, list[Update]] = defaultdict(list)
        for u in changes[0]:
            touched[_key(u[0], self.top.group_by)].append(u)
        out: list[Update] = []
        for key, updates in touched.items():
            self._warm(key)
            before = self._window(key)
            for row, _, diff in updates:
                self._add(key, row, diff)
            counts = self.groups[key][1]
            _positive({row: counts[row] for row, _, _ in updates if row in counts}, "TopK")
            if not counts:
                del self.groups[key]
            out += _difference(t, before, self._window(key))
        self.held = self.cold.rows + self.listed
        return out

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        grouped: dict[Row, Counter] = defaultdict(Counter)
        for row, count in collections[0]:
            grouped[_key(row, self.top.group_by)][row] += count
        for key, counts in grouped.items():
            counts = Counter(_positive({r: c for r, c in counts.items() if c}, "TopK"))
            if counts:
                rows = SortedKeyList(counts, key=self.key)
                self.groups[key] = (rows, counts)
                self.listed += len(counts)
        self.held = self.cold.rows + self.listed

    def contents(self) -> list[tuple[Row, int]] | None:
        for key in list(self.cold):
            self._warm(key)
        return [rc for key in self.groups for rc in self._window(key).items()]


def plain_key(
    order: tuple[P.Order, ...], kinds: tuple[SqlType, ...]
) -> Callable[[Row], tuple] | None:
    """A key of plain values that sorts rows as ``sort_key`` does (NULL placement, descending
    values negated, ties by the whole row with NULLs first), where every column's type allows
    it; None where not."""
    if not all(k in _PLAIN for k in kinds):
        return None
    if any(o.desc and kinds[o.column] not in _NEGATABLE for o in order):
        return None
    parts = [
        (o.column, o.desc, 1 if o.nulls_at_end else -1, kinds[o.column] is DATE) for o in order
    ]

    def key(row: Row) -> tuple:
        out: list[Any] = []
        for column, desc, null_rank, days in parts:
            v = row[column]
            if v is None:
                out.append((null_rank,))
            elif desc:
                out.append((0, -v.toordinal() if days else -v))
            else:
                out.append((0, v))
        out.append(tuple((0,) if v is None else (1, v) for v in row))
        return tuple(out)

    def nan_key(row: Row) -> tuple:  # a numeric NaN after every number (before, descending)
        out: list[Any] = []
        for column, desc, null_rank, days in parts:
            v = row[column]
            if v is None:
                out.append((null_rank,))
            elif v != v:
                out.append((-0.5,) if desc else (0.5,))
            elif desc:
                out.append((0, -v.toordinal() if days else -v))
            else:
                out.append((0, v))
        out.append(tuple((0,) if v is None else (2,) if v != v else (1, v) for v in row))
        return tuple(out)

    return nan_key if NUMERIC in kinds else key
