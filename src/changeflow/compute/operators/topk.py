"""TopK: per group, the rows ranked ``offset`` to ``offset + limit``, kept sorted.

A group's rows are sorted by :func:`~changeflow.compute.evaluate.sort_key` (each comparison
SQL's, in Python), or where every column is of a type Python compares as SQL does, by an
equal key of plain values (:func:`plain_key`), which the sorted list compares in C.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

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
from changeflow.compute.types import BOOL, DATE, INT2, INT4, INT8, NUMERIC, TEXT, SqlType

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
        kinds = tuple(c.type for c in top.schema)
        self.key = plain_key(order, kinds) or (lambda r: sort_key(r, order))

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
        for key, counts in grouped.items():
            counts = Counter(_positive({r: c for r, c in counts.items() if c}, "TopK"))
            if counts:
                rows = SortedKeyList(counts, key=self.key)
                self.groups[key] = (rows, counts)
                self.held += len(counts)

    def contents(self) -> list[tuple[Row, int]] | None:
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
