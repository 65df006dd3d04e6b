"""Keyed recomputation: Distinct and Threshold, whose output for a key depends only on that
key's input rows."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

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
