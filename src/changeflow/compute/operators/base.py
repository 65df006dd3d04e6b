"""The operator interface and what every family shares: sources fed by the dataflow,
constants, the time-ordered stepping of stateful operators and the keyed arrangement helpers."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import plan as P
from changeflow.compute.evaluate import Row
from changeflow.compute.operators.batch import Batch, Update, concat
from changeflow.compute.types import SqlType

Version = dict[Row, int]


class Operator:
    """A built operator: ``step(upper)`` returns its output updates for the step below
    ``upper`` (and any later-time updates it can already tell)."""

    hydrates = False  # does it take state from its inputs' collections at an as_of?
    columnar = False  # does it give its output a batch at a time (:meth:`step_batch`)?

    def __init__(self, inputs: tuple[Operator, ...]) -> None:
        self.inputs = inputs
        self.input_plans: tuple[P.Plan, ...] = ()  # the plans whose collections it reads

    def step(self, upper: int) -> list[Update]:
        raise NotImplementedError

    def step_batch(self, upper: int) -> Batch:
        """:meth:`step`'s updates as a batch (only where :attr:`columnar`)."""
        raise NotImplementedError

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        """Take on the state that the inputs' ``collections`` at ``as_of`` leave (one list of
        ``(row, count)`` per input), emitting nothing for them: a dataflow that hydrates in
        bulk hands the output's contents at ``as_of`` to its sink itself."""

    def contents(self) -> list[tuple[Row, int]] | None:
        """After hydration, the output's collection at the as_of, if the state tells it (so a
        dataflow need not compute it again); None if it does not."""
        return None

    def hydration_inputs(self, as_of: int) -> tuple[P.Plan, ...]:
        """The plans of the collections :meth:`hydrate` needs at ``as_of``."""
        return self.input_plans

    def walk(self) -> Iterator[Operator]:
        """This operator and every operator below it, inputs first."""
        for i in self.inputs:
            yield from i.walk()
        yield self

    def state_size(self) -> int:
        """Rows held in this operator's arrangements and waiting updates, inputs included."""
        return sum(i.state_size() for i in self.inputs)


class Source(Operator):
    """An input collection: the dataflow feeds it each step's updates, as rows or as update
    frames (which become rows only if an operator above asks for rows)."""

    def __init__(self, name: str, kinds: tuple[SqlType, ...]) -> None:
        super().__init__(())
        self.name, self.kinds = name, kinds
        self.pending: list[list[Update] | Batch] = []

    def feed(self, updates: Iterable[Update] | Batch) -> None:
        self.pending.append(updates if isinstance(updates, Batch) else list(updates))

    @property
    def columnar(self) -> bool:  # type: ignore[override]
        """Fed update frames only (rows fed stay rows)."""
        return all(isinstance(p, Batch) for p in self.pending)

    def step(self, upper: int) -> list[Update]:
        out: list[Update] = []
        for part in self._take():
            out += part.updates() if isinstance(part, Batch) else part
        return out

    def step_batch(self, upper: int) -> Batch:
        parts = self._take()
        batches = [p if isinstance(p, Batch) else Batch.of_updates(p, self.kinds) for p in parts]
        return concat(batches, self.kinds)

    def _take(self) -> list[list[Update] | Batch]:
        out, self.pending = self.pending, []
        return out


class Inputs:
    """The input collections of a built plan: one :class:`Source` per place a plan reads a
    collection, all fed the same updates."""

    def __init__(self) -> None:
        self.readers: dict[str, list[Source]] = defaultdict(list)

    def reader(self, name: str, kinds: tuple[SqlType, ...] = ()) -> Source:
        source = Source(name, kinds)
        self.readers[name].append(source)
        return source

    def names(self) -> list[str]:
        return sorted(self.readers)

    def feed(self, name: str, updates: Iterable[Update] | Batch) -> None:
        batch = updates if isinstance(updates, Batch) else list(updates)
        for source in self.readers[name]:
            source.feed(batch)

    def feed_table(self, name: str, updates: pa.Table) -> None:
        """An update frame of the collection's updates (its data columns, ``_time``,
        ``_diff``), kept as columns."""
        for source in self.readers[name]:
            source.feed(Batch.of_table(updates, source.kinds))


class Constant(Operator):
    """Fixed rows, all at the first step's first time."""

    def __init__(self, rows: tuple[tuple[Row, int], ...], at: int) -> None:
        super().__init__(())
        self.rows, self.at, self.done = rows, at, False

    def step(self, upper: int) -> list[Update]:
        if self.done:
            return []
        self.done = True
        return [(row, self.at, c) for row, c in self.rows if c]

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        self.done = True  # its rows are in the contents at as_of

    def contents(self) -> list[tuple[Row, int]] | None:
        return [(row, c) for row, c in self.rows if c]


class Stateful(Operator):
    """An operator that needs its input in time order: it processes, time by time, the updates
    below ``upper`` and keeps later ones for a later step."""

    hydrates = True
    batches_exact = False  # does Arrow treat its values as the rows do (so it may take batches)?

    def __init__(self, inputs: tuple[Operator, ...]) -> None:
        super().__init__(inputs)
        self.waiting: list[list[Update]] = [[] for _ in inputs]
        self.held = 0  # rows in the arrangement, kept as they change (a status read is cheap)

    @property
    def columnar(self) -> bool:  # type: ignore[override]
        """Batches in, a batch out, where :attr:`batches_exact` holds, every input gives
        batches and nothing waits."""
        return self.batches_exact and self.steps_batches()

    def step(self, upper: int) -> list[Update]:
        if self.columnar:
            return self.step_batch(upper).updates()
        return self.step_rows(upper)

    def step_rows(self, upper: int) -> list[Update]:
        """The step in rows: each time's updates through :meth:`apply`, in order."""
        by_time: dict[int, list[list[Update]]] = defaultdict(lambda: [[] for _ in self.inputs])
        for side, child in enumerate(self.inputs):
            fresh, self.waiting[side] = self.waiting[side] + child.step(upper), []
            for u in fresh:
                if u[1] < upper:
                    by_time[u[1]][side].append(u)
                else:
                    self.waiting[side].append(u)
        out: list[Update] = []
        for t in sorted(by_time):
            out += self.apply(t, by_time[t])
        return out

    def apply(self, t: int, changes: list[list[Update]]) -> list[Update]:
        """The output updates at ``t`` for each input's ``changes`` at ``t``."""
        raise NotImplementedError

    def batches_by_time(self, upper: int) -> list[tuple[int, list[Batch]]]:
        """Each input's step as batches (its inputs columnar and nothing waiting), one list
        per time below ``upper`` in order; updates at or beyond ``upper`` wait (as rows)."""
        batches = []
        for side, child in enumerate(self.inputs):
            batch = child.step_batch(upper)
            later = pc.greater_equal(batch.times, upper)
            if pc.any(later).as_py():
                self.waiting[side] = batch.filter(later).updates()
                batch = batch.filter(pc.invert(later))
            batches.append(batch)
        times = sorted(set().union(*(pc.unique(b.times).to_pylist() for b in batches)))
        if len(times) == 1:
            return [(times[0], batches)]
        return [(t, [b.filter(pc.equal(b.times, t)) for b in batches]) for t in times]

    def steps_batches(self) -> bool:
        """Whether this step can take its inputs as batches."""
        return all(i.columnar for i in self.inputs) and not any(self.waiting)

    def state_size(self) -> int:
        return super().state_size() + sum(map(len, self.waiting)) + self.rows_held()

    def step_batch(self, upper: int) -> Batch:
        """A one-input step of batches: :meth:`apply_batch` of each time's batch, in order."""
        parts = [self.apply_batch(t, b) for t, (b,) in self.batches_by_time(upper)]
        return concat(parts, self.kinds)

    def apply_batch(self, t: int, batch: Batch) -> Batch:
        """The output batch at ``t`` for the input's ``batch`` at ``t``."""
        raise NotImplementedError

    def rows_held(self) -> int:
        """The rows its state holds, read without changing the state."""
        return self.held


def _key(row: Row, columns: tuple[int, ...]) -> Row:
    if len(columns) == 1:
        return (row[columns[0]],)
    return tuple(map(row.__getitem__, columns))


def _accumulate(arrangement: dict[Row, Counter], key: Row, row: Row, diff: int) -> int:
    """Add ``diff`` copies of ``row`` under ``key``; the change in distinct rows held."""
    rows = arrangement.setdefault(key, Counter())
    before = rows[row]
    rows[row] = before + diff
    if rows[row]:
        return 0 if before else 1
    del rows[row]
    if not rows:
        del arrangement[key]
    return -1 if before else 0


def _difference(t: int, before: Version, after: Version) -> list[Update]:
    out = [(r, t, c - before.get(r, 0)) for r, c in after.items() if c != before.get(r, 0)]
    return out + [(r, t, -c) for r, c in before.items() if r not in after]
