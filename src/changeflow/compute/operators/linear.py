"""Stateless operators: a function from one update to its output updates (Map, Filter,
Project, Union, Negate), and the temporal filter (:class:`Window`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from changeflow.compute import plan as P
from changeflow.compute.evaluate import Row
from changeflow.compute.expr import Cmp, Lit
from changeflow.compute.operators.base import Operator, Update
from changeflow.compute.operators.batch import Batch, concat, window_batch
from changeflow.compute.types import INT8, SqlType


class Linear(Operator):
    """A stateless operator: a function from one update to its output updates, and where it
    has one (``on_batch``), the same function on a batch, used while its inputs give batches
    (an input fed rows keeps the rows: no conversion there and back)."""

    as_of = 0

    def __init__(
        self,
        inputs: tuple[Operator, ...],
        fn: Callable[[Update], Iterable[Update]],
        on_batch: Callable[[Batch], Batch] | None = None,
        kinds: tuple[SqlType, ...] = (),
    ):
        super().__init__(inputs)
        self.fn, self.on_batch, self.kinds = fn, on_batch, kinds

    @property
    def columnar(self) -> bool:  # type: ignore[override]
        return self.on_batch is not None and all(i.columnar for i in self.inputs)

    def step(self, upper: int) -> list[Update]:
        if self.columnar:
            return self.step_batch(upper).updates()
        return [out for i in self.inputs for u in i.step(upper) for out in self.fn(u)]

    def step_batch(self, upper: int) -> Batch:
        assert self.on_batch is not None
        parts = [i.step_batch(upper) for i in self.inputs]
        return self.on_batch(parts[0] if len(parts) == 1 else concat(parts, self.kinds))

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        self.as_of = as_of

    def contents(self) -> list[tuple[Row, int]] | None:
        known = [i.contents() for i in self.inputs]
        if any(k is None for k in known):
            return None
        updates = (u for rows in known for row, c in rows for u in self.fn((row, self.as_of, c)))
        return [(row, c) for row, _, c in updates]


class Window(Linear):
    """A temporal filter: each row from the start of its window until its end. Hydrated, it
    owes the updates its input's rows at ``as_of`` make later (insertions of windows that start
    later, retractions of those that end) and emits them with its next step."""

    hydrates = True

    def __init__(
        self, child: Operator, lower: tuple, upper: tuple, kinds: tuple[SqlType, ...]
    ) -> None:
        def fn(u: Update) -> list[Update]:
            return _window(u, lower, upper)

        super().__init__((child,), fn, lambda b: window_batch(b, lower, upper, fn), kinds)
        self.upper = upper
        self.owed: list[Update] = []
        self.live: list[tuple[Row, int]] | None = None

    def step(self, upper: int) -> list[Update]:
        if self.columnar:
            return self.step_batch(upper).updates()
        owed, self.owed, self.live = self.owed, [], None  # the live rows served hydration only
        return owed + super().step(upper)

    def step_batch(self, upper: int) -> Batch:
        owed, self.owed, self.live = self.owed, [], None
        fresh = super().step_batch(upper)
        return concat([Batch.of_updates(owed, self.kinds), fresh], self.kinds) if owed else fresh

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        updates = [u for row, c in collections[0] for u in self.fn((row, as_of, c))]
        self.owed = [u for u in updates if u[1] > as_of]
        self.live = [(row, c) for row, t, c in updates if t == as_of]

    def contents(self) -> list[tuple[Row, int]] | None:
        return self.live

    def hydration_inputs(self, as_of: int) -> tuple[P.Plan, ...]:
        """Only the rows whose window has not ended by ``as_of`` make later updates."""
        (child,) = self.input_plans
        if not self.upper:
            return (child,)
        return (P.Filter(child, tuple(Cmp(">", e, Lit(as_of, INT8)) for e in self.upper)),)

    def state_size(self) -> int:
        return super().state_size() + len(self.owed)


def _window(u: Update, lower: tuple, upper: tuple) -> list[Update]:
    """The row from ``max(t, lower)`` until ``max(t, upper)``: an insertion and a (later)
    retraction, or nothing if the window is empty or a bound is NULL."""
    row, t, diff = u
    lows, highs = [e.eval(row) for e in lower], [e.eval(row) for e in upper]
    if any(v is None for v in (*lows, *highs)):
        return []
    start = max([t, *lows])
    end = max(t, min(highs)) if highs else None
    if end is not None and end <= start:
        return []
    out = [(row, start, diff)]
    return out + ([(row, end, -diff)] if end is not None else [])
