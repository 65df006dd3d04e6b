"""TopK: per group, the rows ranked ``offset`` to ``offset + limit``, kept sorted."""

from __future__ import annotations

from collections import Counter, defaultdict

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


class TopK(Stateful):
    """Per group, the rows ranked ``offset`` to ``offset + limit``. Each group's rows are kept
    sorted (a sorted list of the distinct rows, their counts beside it), so a step costs its
    changes times the log of the group's size plus the window it reads, not the group's size."""

    def __init__(self, child: Operator, top: P.TopK) -> None:
        super().__init__((child,))
        self.top = top
        self.end = None if top.limit is None else top.offset + top.limit
        self.groups: dict[Row, tuple[SortedKeyList, Counter]] = {}

    def _group(self, key: Row) -> tuple[SortedKeyList, Counter]:
        group = self.groups.get(key)
        if group is None:
            order = self.top.order_by
            group = self.groups[key] = (SortedKeyList(key=lambda r: sort_key(r, order)), Counter())
        return group

    def _add(self, key: Row, row: Row, diff: int) -> None:
        rows, counts = self._group(key)
        before = counts[row]
        counts[row] = after = before + diff
        if not after:
            del counts[row]
            rows.remove(row)
            self.held -= 1
        elif not before:
            rows.add(row)
            self.held += 1

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
            before = self._window(key)
            for row, _, diff in updates:
                self._add(key, row, diff)
            counts = self.groups[key][1]
            _positive({row: counts[row] for row, _, _ in updates if row in counts}, "TopK")
            if not counts:
                del self.groups[key]
            out += _difference(t, before, self._window(key))
        return out

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        grouped: dict[Row, Counter] = defaultdict(Counter)
        for row, count in collections[0]:
            grouped[_key(row, self.top.group_by)][row] += count
        order = self.top.order_by
        for key, counts in grouped.items():
            counts = Counter(_positive({r: c for r, c in counts.items() if c}, "TopK"))
            if counts:
                rows = SortedKeyList(counts, key=lambda r: sort_key(r, order))
                self.groups[key] = (rows, counts)
                self.held += len(counts)

    def contents(self) -> list[tuple[Row, int]] | None:
        return [rc for key in self.groups for rc in self._window(key).items()]
