"""Joins: inner joins by delta (``dA ⋈ B + A ⋈ dB + dA ⋈ dB``) and outer joins by keyed
recomputation, both over arrangements of each side by key."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

from changeflow.compute import plan as P
from changeflow.compute.evaluate import Row, _matches
from changeflow.compute.expr import Cmp, Expr
from changeflow.compute.operators.base import (
    Operator,
    Stateful,
    Update,
    Version,
    _accumulate,
    _difference,
    _key,
)
from changeflow.compute.operators.batch import Batch, concat
from changeflow.compute.operators.join_batch import Arranged, delta_join
from changeflow.compute.operators.linear import Linear
from changeflow.compute.operators.outer_batch import batchable, outer_step
from changeflow.compute.scalars import compare_values
from changeflow.compute.types import SqlType


class Joined(Stateful):
    """A join's two inputs arranged by key (:class:`Arranged`: changed batches wait as
    batches until a step reads the arrangement)."""

    def __init__(
        self, left: Operator, right: Operator, keys: tuple[tuple[int, ...], tuple[int, ...]]
    ):
        super().__init__((left, right))
        self.keys = keys
        self.sides = (Arranged(keys[0]), Arranged(keys[1]))

    @property
    def arrangements(self) -> tuple[dict[Row, Counter], dict[Row, Counter]]:
        """Each side's rows by key (waiting batches added)."""
        return self.sides[0].arrangement(), self.sides[1].arrangement()

    @property
    def held(self) -> int:  # type: ignore[override]
        """Distinct rows in the arrangements (waiting batches added)."""
        self.arrangements  # noqa: B018
        return self.sides[0].held + self.sides[1].held

    @held.setter
    def held(self, value: int) -> None:
        """Set at construction only (nothing held): each side counts its own rows."""
        assert value == 0

    def rows_held(self) -> int:
        """Distinct rows arranged and rows waiting as batches (none added to the arrangements:
        a status read does not cost a step's worth of Python)."""
        return sum(side.held + side.waiting_rows for side in self.sides)

    def hydrate(self, collections: list[list[tuple[Row, int]]], as_of: int) -> None:
        _arrange(self.arrangements, self.keys, collections)
        for side in self.sides:
            side.held = sum(map(len, side.rows.values()))

    def _add(self, side: int, key: Row, row: Row, diff: int) -> None:
        arranged = self.sides[side]
        arranged.held += _accumulate(arranged.arrangement(), key, row, diff)


class InnerJoin(Joined):
    """Two inputs joined on key columns (NULL keys match nothing), a residual predicate on the
    pair: at each time, ``dA ⋈ B + A ⋈ dB + dA ⋈ dB`` with ``A`` and ``B`` arranged by key."""

    def __init__(
        self,
        left: Operator,
        right: Operator,
        keys: tuple[tuple[int, ...], tuple[int, ...]],
        match: Callable[[Row], bool],
        predicates: tuple[Expr, ...] = (),
        kinds: tuple[tuple[SqlType, ...], tuple[SqlType, ...]] | None = None,
    ):
        super().__init__(left, right, keys)
        self.match = match
        self.predicates, self.kinds = predicates, kinds  # ``match`` as expressions
        self.batches_exact = kinds is not None

    def step_batch(self, upper: int) -> Batch:
        assert self.kinds is not None
        out = []
        for t, batches in self.batches_by_time(upper):
            check = (self.predicates, self._kept)
            out.append(delta_join(t, batches, self.keys, self.sides, self.kinds, check))
        return concat(out, self.kinds[0] + self.kinds[1])

    def _kept(self, u: Update) -> list[Update]:
        return [u] if self.match(u[0]) else []

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
                    self._add(side, key, row, diff)
        return out

    def _pairs(
        self, t: int, lefts: list[tuple[Row, int]], rights: list[tuple[Row, int]]
    ) -> list[Update]:
        return [
            (lr + rr, t, lc * rc) for lr, lc in lefts for rr, rc in rights if self.match(lr + rr)
        ]


class OuterJoin(Joined):
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
        super().__init__(left, right, keys)
        self.join = join
        self.widths = (len(join.inputs_[0].schema), len(join.inputs_[1].schema))
        self.kinds = (_kinds(join.inputs_[0].schema), _kinds(join.inputs_[1].schema))
        self.batches_exact = join.residual is None and batchable(
            join.equivalences, self.widths[0], self.kinds
        )

    def step_batch(self, upper: int) -> Batch:
        out = [
            outer_step(t, batches, self.join.kind, self.keys, self.sides, self.kinds)
            for t, batches in self.batches_by_time(upper)
        ]
        return concat(out, self.kinds[0] + self.kinds[1])

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
                self._add(side, key, row, diff)
            out += _difference(t, before, self._output(key))
        return out

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
        kinds = (_kinds(join.schema[:width]), _kinds(join.inputs_[i].schema))
        predicates = _predicates(join, visible, last)
        current = InnerJoin(current, child, (left_keys, right_keys), match, predicates, kinds)
        current.input_plans = (left_plan, join.inputs_[i])
        left_plan = P.Join(join.inputs_[: i + 1], _restrict(join.equivalences, visible))
        width = visible
    if len(children) == 1:
        return Linear(children, lambda u: [u] if _matches(u[0], join) else [])
    return current


def _kinds(columns: tuple) -> tuple[SqlType, ...]:
    return tuple(c.type for c in columns)


def _predicates(join: P.Join, width: int, last: bool) -> tuple[Expr, ...]:
    """What ``_partial`` (or with ``last``, ``_matches``) checks, as expressions over the
    first ``width`` columns."""
    out: list[Expr] = []
    for klass in _restrict(join.equivalences, width):
        first = P.col(join.schema, klass[0])
        out += [Cmp("=", first, P.col(join.schema, i)) for i in klass[1:]]
    if last and join.residual is not None:
        out.append(join.residual)
    return tuple(out)


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
    for klass in _restrict(join.equivalences, width):
        values = [row[i] for i in klass]
        if any(v is None for v in values):
            return False
        if not all(compare_values("=", values[0], v) for v in values[1:]):
            return False
    return True
