"""The operator of a recursive query: its inputs kept whole, the fixed point recomputed from
them at each time they change, and the difference emitted."""

from __future__ import annotations

from changeflow.compute.evaluate import Row, evaluate
from changeflow.compute.operators.base import Operator, Stateful, Update, Version, _difference
from changeflow.compute.recursive import Recursive, fixed_point


class RecursiveOp(Stateful):
    """:class:`~changeflow.compute.recursive.Recursive`: exact at every time."""

    def __init__(self, children: tuple[Operator, ...], plan: Recursive) -> None:
        super().__init__(children)
        self.plan = plan
        self.versions: list[Version] = [{} for _ in children]
        self.output: Version = {}

    def apply(self, t: int, changes: list[list[Update]]) -> list[Update]:
        for version, updates in zip(self.versions, changes, strict=True):
            for row, _, diff in updates:
                self._add(version, row, diff)
        before, self.output = self.output, self._compute(t)
        self.held = sum(map(len, self.versions)) + len(self.output)
        return _difference(t, before, self.output)

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        for version, rows in zip(self.versions, collections, strict=True):
            for row, count in rows:
                self._add(version, row, count)
        self.output = self._compute(as_of)
        self.held = sum(map(len, self.versions)) + len(self.output)

    def contents(self) -> list[tuple[Row, int]] | None:
        return list(self.output.items())

    def _compute(self, t: int) -> Version:
        reads = {g.name: v for g, v in zip(self.plan.inputs_[1:], self.versions[1:], strict=True)}
        run = lambda step, env: evaluate(step, env, t)  # noqa: E731
        return fixed_point(self.plan, dict(self.versions[0]), reads, run)

    @staticmethod
    def _add(version: Version, row: Row, diff: int) -> None:
        count = version.get(row, 0) + diff
        if count:
            version[row] = count
        else:
            version.pop(row, None)
