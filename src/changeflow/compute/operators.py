"""Differential operators: a plan built into operators that turn their inputs' updates for a
step into the output's updates for the same step.

Times are ints, so a step ``[lower, upper)`` is processed time by time in order. Stateless
operators (Map, Filter, Project, Union, Negate, TemporalFilter) map each update on its own. Stateful
operators (Join, Reduce, Distinct, Threshold, TopK) keep an **arrangement**: their input
accumulated per key up to the last time processed, which is their input compacted to the
dataflow's frontier, so state is proportional to the live data, not to its history. An update at a
time at or beyond the step's upper (a temporal filter's retraction) waits in the operator that
needs time order until a step reaches it; stateless operators pass it on at once.

Each operator's output at every time equals :func:`changeflow.compute.evaluate.evaluate` of its
plan at that time; the tests check it on random plans and histories.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal, localcontext
from typing import Any

from sortedcontainers import SortedKeyList

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.evaluate import Row, _matches, _positive, aggregate_values, sort_key
from changeflow.compute.expr import Cmp, Lit, _as, check_range
from changeflow.compute.types import FLOAT8, INT8, SqlType
from changeflow.errors import EvalError, PlanError

Update = tuple[Row, int, int]
Version = dict[Row, int]


class Operator:
    """A built operator: ``step(upper)`` returns its output updates for the step below
    ``upper`` (and any later-time updates it can already tell)."""

    hydrates = False  # does it take state from its inputs' collections at an as_of?

    def __init__(self, inputs: tuple[Operator, ...]) -> None:
        self.inputs = inputs
        self.input_plans: tuple[P.Plan, ...] = ()  # the plans whose collections it reads

    def step(self, upper: int) -> list[Update]:
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
    """An input collection: the dataflow feeds it each step's updates."""

    def __init__(self, name: str) -> None:
        super().__init__(())
        self.name = name
        self.pending: list[Update] = []

    def feed(self, updates: Iterable[Update]) -> None:
        self.pending.extend(updates)

    def step(self, upper: int) -> list[Update]:
        out, self.pending = self.pending, []
        return out


class Inputs:
    """The input collections of a built plan: one :class:`Source` per place a plan reads a
    collection, all fed the same updates."""

    def __init__(self) -> None:
        self.readers: dict[str, list[Source]] = defaultdict(list)

    def reader(self, name: str) -> Source:
        source = Source(name)
        self.readers[name].append(source)
        return source

    def names(self) -> list[str]:
        return sorted(self.readers)

    def feed(self, name: str, updates: Iterable[Update]) -> None:
        batch = list(updates)
        for source in self.readers[name]:
            source.feed(batch)


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


class Linear(Operator):
    """A stateless operator: a function from one update to its output updates."""

    as_of = 0

    def __init__(self, inputs: tuple[Operator, ...], fn: Callable[[Update], Iterable[Update]]):
        super().__init__(inputs)
        self.fn = fn

    def step(self, upper: int) -> list[Update]:
        return [out for i in self.inputs for u in i.step(upper) for out in self.fn(u)]

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

    def __init__(self, child: Operator, lower: tuple, upper: tuple) -> None:
        super().__init__((child,), lambda u: _window(u, lower, upper))
        self.upper = upper
        self.owed: list[Update] = []
        self.live: list[tuple[Row, int]] | None = None

    def step(self, upper: int) -> list[Update]:
        owed, self.owed, self.live = self.owed, [], None  # the live rows served hydration only
        return owed + super().step(upper)

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


class Stateful(Operator):
    """An operator that needs its input in time order: it processes, time by time, the updates
    below ``upper`` and keeps later ones for a later step."""

    hydrates = True

    def __init__(self, inputs: tuple[Operator, ...]) -> None:
        super().__init__(inputs)
        self.waiting: list[list[Update]] = [[] for _ in inputs]
        self.held = 0  # rows in the arrangement, kept as they change (a status read is cheap)

    def step(self, upper: int) -> list[Update]:
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

    def state_size(self) -> int:
        return super().state_size() + sum(map(len, self.waiting)) + self.held


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


class Reduce(Stateful):
    """Group and aggregate with an accumulator per group and aggregate: counts, sums and
    averages are running totals (a step costs what its changes touch, not the group's size);
    DISTINCT, min, max, bool_and, bool_or and string_agg keep each group's values with their
    counts."""

    def __init__(self, child: Operator, reduce: P.Reduce) -> None:
        super().__init__((child,))
        self.reduce = reduce
        self.kinds = [c.type for c in reduce.schema[len(reduce.group_by) :]]
        self.groups: dict[Row, Group] = {}

    def apply(self, t: int, changes: list[list[Update]]) -> list[Update]:
        touched: dict[Row, list[Update]] = defaultdict(list)
        for u in changes[0]:
            touched[_key(u[0], self.reduce.group_by)].append(u)
        out: list[Update] = []
        for key, updates in touched.items():
            group = self.groups.get(key)
            self.held -= 0 if group is None else 1 + group.held()
            group = group or Group(self.reduce.aggregates)
            before = group.row(key, self.kinds)
            for row, _, diff in updates:
                group.add(row, diff)
            self.held += 1 + group.held() if group.count else 0
            after = group.row(key, self.kinds)
            if before != after:
                out += [(before, t, -1)] if before is not None else []
                out += [(after, t, 1)] if after is not None else []
            if group.count:
                self.groups[key] = group
            else:
                self.groups.pop(key, None)
        return out

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        for row, count in collections[0]:
            key = _key(row, self.reduce.group_by)
            self.groups.setdefault(key, Group(self.reduce.aggregates)).add(row, count)
        self.adopt(self.groups)

    def contents(self) -> list[tuple[Row, int]] | None:
        rows = (g.row(key, self.kinds) for key, g in self.groups.items())
        return [(row, 1) for row in rows if row is not None]

    def adopt(self, groups: dict[Row, Group]) -> None:
        """Take ``groups`` (computed in bulk) as the state."""
        self.groups = {k: g for k, g in groups.items() if g.count}
        self.held = sum(1 + g.held() for g in self.groups.values())


class Group:
    """One group's accumulators: its row count, then per aggregate the count of non-NULL values
    and their running total, or (when the aggregate needs them) the values and their counts."""

    def __init__(self, aggregates: tuple[P.Aggregate, ...]) -> None:
        self.aggregates = aggregates
        self.count = 0
        self.present = [0] * len(aggregates)
        self.totals: list[Any] = [0] * len(aggregates)
        self.values: list[Counter | None] = [
            Counter() if a.distinct or a.func not in ("count", "sum", "avg") else None
            for a in aggregates
        ]

    def add(self, row: Row, diff: int) -> None:
        self.count += diff
        for i, agg in enumerate(self.aggregates):
            if agg.arg is None:
                continue
            v = agg.arg.eval(row)
            if v is None:
                continue
            self.present[i] += diff
            values = self.values[i]
            if values is not None:
                values[v] += diff
                if not values[v]:
                    del values[v]
            elif agg.func != "count":
                self.totals[i] += v * diff

    def row(self, key: Row, kinds: list[SqlType]) -> Row | None:
        """The group's output row; None when it has no rows."""
        if self.count < 0 or any(c < 0 for v in self.values if v for c in v.values()):
            raise EvalError(f"Reduce: group {key!r} has a negative count", sqlstate="XX000")
        if not self.count:
            return None
        return key + tuple(self._result(i, k) for i, k in enumerate(kinds))

    def _result(self, i: int, kind: SqlType) -> Any:
        agg, values = self.aggregates[i], self.values[i]
        if agg.arg is None:
            return self.count
        if values is not None:
            return aggregate_values(agg, list(values.items()), kind)
        if agg.func == "count":
            return self.present[i]
        if not self.present[i]:
            return None
        if agg.func == "sum":
            return check_range(_as(self.totals[i], kind), kind)
        return _average(self.totals[i], self.present[i], kind)

    def held(self) -> int:
        return sum(len(v) for v in self.values if v)


def _average(total: Any, n: int, kind: SqlType) -> Any:
    if kind == FLOAT8:
        return float(total) / n
    with localcontext() as ctx:
        ctx.prec = 40
        return Decimal(total) / n


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


class InnerJoin(Stateful):
    """Two inputs joined on key columns (NULL keys match nothing), a residual predicate on the
    pair: at each time, ``dA ⋈ B + A ⋈ dB + dA ⋈ dB`` with ``A`` and ``B`` arranged by key."""

    def __init__(
        self,
        left: Operator,
        right: Operator,
        keys: tuple[tuple[int, ...], tuple[int, ...]],
        match: Callable[[Row], bool],
    ):
        super().__init__((left, right))
        self.keys, self.match = keys, match
        self.arrangements: tuple[dict[Row, Counter], dict[Row, Counter]] = ({}, {})

    def apply(self, t: int, changes: list[list[Update]]) -> list[Update]:
        out: list[Update] = []
        deltas: list[dict[Row, list[tuple[Row, int]]]] = [defaultdict(list), defaultdict(list)]
        for side in (0, 1):
            for row, _, diff in changes[side]:
                key = _key(row, self.keys[side])
                if None not in key:
                    deltas[side][key].append((row, diff))
        left, right = self.arrangements
        for key, rows in deltas[0].items():  # dA ⋈ B
            for other, oc in right.get(key, {}).items():
                out += self._pairs(t, rows, [(other, oc)])
        for key, rows in deltas[1].items():  # (A + dA) ⋈ dB
            others = list(left.get(key, {}).items()) + deltas[0].get(key, [])
            for row, diff in rows:
                out += self._pairs(t, others, [(row, diff)])
        for side in (0, 1):
            for key, rows in deltas[side].items():
                for row, diff in rows:
                    self.held += _accumulate(self.arrangements[side], key, row, diff)
        return out

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        self.held += _arrange(self.arrangements, self.keys, collections)

    def _pairs(
        self, t: int, lefts: list[tuple[Row, int]], rights: list[tuple[Row, int]]
    ) -> list[Update]:
        return [
            (lr + rr, t, lc * rc) for lr, lc in lefts for rr, rc in rights if self.match(lr + rr)
        ]


class OuterJoin(Stateful):
    """A left, right or full join of two inputs: at each time the touched keys' output (matched
    pairs, then the unmatched rows of the kept side padded with NULLs) is computed before and
    after. Rows with a NULL key match nothing and pass through padded."""

    def __init__(
        self,
        join: P.Join,
        left: Operator,
        right: Operator,
        keys: tuple[tuple[int, ...], tuple[int, ...]],
    ):
        super().__init__((left, right))
        self.join, self.keys = join, keys
        self.widths = (len(join.inputs_[0].schema), len(join.inputs_[1].schema))
        self.arrangements: tuple[dict[Row, Counter], dict[Row, Counter]] = ({}, {})

    def apply(self, t: int, changes: list[list[Update]]) -> list[Update]:
        touched: dict[Row, list[tuple[int, Row, int]]] = defaultdict(list)
        out: list[Update] = []
        for side in (0, 1):
            for row, _, diff in changes[side]:
                key = _key(row, self.keys[side])
                if None in key:
                    out += self._unmatched(side, row, t, diff)
                else:
                    touched[key].append((side, row, diff))
        for key, updates in touched.items():
            before = self._output(key)
            for side, row, diff in updates:
                self.held += _accumulate(self.arrangements[side], key, row, diff)
            out += _difference(t, before, self._output(key))
        return out

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        self.held += _arrange(self.arrangements, self.keys, collections)

    def _unmatched(self, side: int, row: Row, t: int, diff: int) -> list[Update]:
        keeps = {0: ("left", "full"), 1: ("right", "full")}[side]
        if self.join.kind not in keeps:
            return []
        pad = (None,) * self.widths[1 - side]
        return [((row + pad) if side == 0 else (pad + row), t, diff)]

    def _output(self, key: Row) -> Version:
        lefts = list(self.arrangements[0].get(key, {}).items())
        rights = list(self.arrangements[1].get(key, {}).items())
        out: Counter = Counter()
        matched_l: set[Row] = set()
        matched_r: set[Row] = set()
        for lr, lc in lefts:
            for rr, rc in rights:
                if _matches(lr + rr, self.join):
                    out[lr + rr] += lc * rc
                    matched_l.add(lr)
                    matched_r.add(rr)
        if self.join.kind in ("left", "full"):
            for lr, lc in lefts:
                if lr not in matched_l:
                    out[lr + (None,) * self.widths[1]] += lc
        if self.join.kind in ("right", "full"):
            for rr, rc in rights:
                if rr not in matched_r:
                    out[(None,) * self.widths[0] + rr] += rc
        return {r: c for r, c in out.items() if c}


def _arrange(
    arrangements: tuple[dict[Row, Counter], ...],
    keys: tuple[tuple[int, ...], ...],
    collections: list[list[tuple[Row, int]]],
) -> int:
    """Both sides of a join arranged by key (rows with a NULL key match nothing); the distinct
    rows they hold."""
    for side, rows in enumerate(collections):
        arrangement, columns = arrangements[side], keys[side]
        for row, count in rows:  # inlined: hydration feeds every row of the input through here
            key = _key(row, columns)
            if None not in key:
                held = arrangement.get(key)
                if held is None:
                    arrangement[key] = Counter({row: count})
                else:
                    held[row] = held.get(row, 0) + count
        for key in [k for k, held in arrangement.items() if 0 in held.values()]:
            arrangement[key] = Counter({r: c for r, c in arrangement[key].items() if c})
            if not arrangement[key]:
                del arrangement[key]
    return sum(len(held) for side in arrangements for held in side.values())


def hydrate(
    root: Operator,
    collection_at: Callable[[P.Plan], list[tuple[Row, int]]],
    as_of: int,
    groups_at: Callable[[Reduce], dict[Row, Group]] | None = None,
) -> None:
    """Give every operator under ``root`` the state its inputs' collections at ``as_of`` leave.
    Inputs first: an input whose state tells its output (a reduce's groups, a top-k's windows)
    hands it on; the other collections are computed by ``collection_at`` (in bulk: on Spark, or
    by the reference), a reduce's groups by ``groups_at`` where given."""
    for op in root.walk():
        if not op.hydrates:
            op.hydrate([], as_of)
            continue
        known = [child.contents() for child in op.inputs]
        if len(op.inputs) == len(op.input_plans) and all(k is not None for k in known):
            op.hydrate(known, as_of)
        elif groups_at is not None and isinstance(op, Reduce):
            op.adopt(groups_at(op))
        else:
            op.hydrate([collection_at(p) for p in op.hydration_inputs(as_of)], as_of)


def build(plan: P.Plan, sources: Inputs, at: int) -> Operator:
    """The operators of ``plan``, reading its collections through ``sources``; ``at`` is the
    first time (constants appear there)."""
    op = _build(plan, sources, at)
    if not op.input_plans and not isinstance(op, Source | Constant):
        op.input_plans = plan.inputs()
    return op


def _build(plan: P.Plan, sources: Inputs, at: int) -> Operator:
    """The operators of ``plan``, reading its collections through ``sources``; ``at`` is the
    first time (constants appear there)."""
    match plan:
        case P.Get(name=name):
            return sources.reader(name)
        case P.Constant(rows=rows):
            return Constant(rows, at)
    children = tuple(build(p, sources, at) for p in plan.inputs())
    match plan:
        case P.Map(exprs=exprs):
            return Linear(
                children, lambda u: [(u[0] + tuple(e.eval(u[0]) for _, e in exprs), u[1], u[2])]
            )
        case P.Project(columns=columns):
            return Linear(children, lambda u: [(_key(u[0], columns), u[1], u[2])])
        case P.Filter(predicates=predicates):
            return Linear(
                children, lambda u: [u] if all(p.eval(u[0]) is True for p in predicates) else []
            )
        case P.Union():
            return Linear(children, lambda u: [u])
        case P.Negate():
            return Linear(children, lambda u: [(u[0], u[1], -u[2])])
        case P.TemporalFilter(lower=lower, upper=upper):
            return Window(children[0], lower, upper)
        case P.Join():
            return _build_join(plan, children)
        case P.Reduce():
            return Reduce(children[0], plan)
        case P.Distinct():
            width = tuple(range(len(plan.schema)))
            return KeyedRecompute(
                children[0], width, lambda key, rows: {r: 1 for r, c in rows.items() if c > 0}
            )
        case P.Threshold():
            width = tuple(range(len(plan.schema)))
            return KeyedRecompute(
                children[0], width, lambda key, rows: {r: c for r, c in rows.items() if c > 0}
            )
        case P.TopK():
            return TopK(children[0], plan)
        case W.Window(partition_by=partition_by):  # a change recomputes its partition
            return KeyedRecompute(
                children[0], partition_by, lambda key, rows: dict(W.partition_output(plan, rows))
            )
    raise PlanError(f"no operator for {type(plan).__name__}")


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


def _build_join(join: P.Join, children: tuple[Operator, ...]) -> Operator:
    """Binary joins left to right, each on the equivalences that span its two sides; the
    residual and any equivalence left over are checked on each matched pair."""
    if join.kind != "inner":
        left_keys, right_keys = _split_keys(join.equivalences, len(join.inputs_[0].schema))
        return OuterJoin(join, *children, (left_keys, right_keys))
    left_plan = join.inputs_[0]
    current, width = children[0], len(join.inputs_[0].schema)
    for i, child in enumerate(children[1:], start=1):
        inner_width = len(join.inputs_[i].schema)
        visible = width + inner_width
        left_keys, right_keys = _split_keys(_restrict(join.equivalences, visible), width)
        last = i == len(children) - 1
        match = (
            (lambda row: _matches(row, join))
            if last
            else (lambda row, v=visible: _partial(row, join, v))
        )
        current = InnerJoin(current, child, (left_keys, right_keys), match)
        current.input_plans = (left_plan, join.inputs_[i])
        left_plan = P.Join(join.inputs_[: i + 1], _restrict(join.equivalences, visible))
        width = visible
    if len(children) == 1:
        return Linear(children, lambda u: [u] if _matches(u[0], join) else [])
    return current


def _restrict(classes: tuple[tuple[int, ...], ...], width: int) -> tuple[tuple[int, ...], ...]:
    """The equivalences among the first ``width`` columns (classes of two or more)."""
    kept = (tuple(i for i in klass if i < width) for klass in classes)
    return tuple(klass for klass in kept if len(klass) > 1)


def _split_keys(
    classes: tuple[tuple[int, ...], ...], width: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """For each class with members on both sides, one left column and one right column (the
    right ones renumbered from 0)."""
    left, right = [], []
    for klass in classes:
        lo = [i for i in klass if i < width]
        hi = [i - width for i in klass if i >= width]
        if lo and hi:
            left.append(lo[0])
            right.append(hi[0])
    return tuple(left), tuple(right)


def _partial(row: Row, join: P.Join, width: int) -> bool:
    """The equivalences among the first ``width`` columns hold (the residual comes last)."""
    from changeflow.compute.expr import compare_values

    for klass in _restrict(join.equivalences, width):
        values = [row[i] for i in klass]
        if any(v is None for v in values):
            return False
        if not all(compare_values("=", values[0], v) for v in values[1:]):
            return False
    return True
