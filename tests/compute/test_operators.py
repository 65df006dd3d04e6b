"""Differential operators against the reference evaluator: random plans, random histories,
random step boundaries; the output must be right at every time."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC, consolidate
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate, evaluate_history
from changeflow.compute.expr import Arith, lit
from changeflow.compute.operators import Inputs, Operator, Reduce, TopK, build, hydrate
from changeflow.errors import EvalError
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from plans import INPUTS, R, frame, histories, plans  # noqa: E402

TIMES = 8


def run_steps(
    plan: P.Plan, history: dict[str, list], bounds: list[int], columnar: bool = False
) -> list:
    """The operators' output over steps ending at each of ``bounds``; ``columnar``: the inputs
    fed as update frames, so the stateless operators above them run on Arrow batches."""
    sources = Inputs()
    root = build(plan, sources, at=0)
    out, lower = [], 0
    for upper in bounds:
        for name in sources.names():
            updates = [u for u in history[name] if lower <= u[1] < upper]
            if columnar:
                sources.feed_table(name, frame(INPUTS[name], updates))
            else:
                sources.feed(name, updates)
        out += root.step(upper)
        lower = upper
        for op in root.walk():
            assert getattr(op, "held", 0) == recount(op), type(op).__name__
    return out


def recount(op: Operator) -> int:
    """The distinct rows an operator's state holds, counted afresh (its ``held`` is kept up to
    date as the state changes)."""
    if isinstance(op, Reduce):
        return sum(1 + g.held() for g in op.groups.values())
    if isinstance(op, TopK):
        cold = sum(stop - start for _, start, stop in op.cold.values())  # sorted Arrow rows
        return cold + sum(len(counts) for _, counts in op.groups.values())
    sides = getattr(op, "arrangements", None) or [getattr(op, "arrangement", {})]
    return sum(len(rows) for side in sides for rows in side.values())


def reference(plan: P.Plan, history: dict[str, list]) -> list:
    inputs = {}
    for name, updates in history.items():
        inputs[name] = PTVC.empty(name=name)
        inputs[name].append(updates, Antichain([TIMES]))
    return evaluate_history(plan, inputs, 0, TIMES)


@settings(max_examples=300)
@given(
    plan=plans(3),
    history=histories(TIMES),
    cuts=st.lists(st.integers(1, TIMES - 1), max_size=4, unique=True),
    columnar=st.booleans(),
)
def test_operators_agree_with_the_reference_at_every_time(
    plan: P.Plan, history: dict[str, list], cuts: list[int], columnar: bool
) -> None:
    bounds = [*sorted(cuts), TIMES]
    try:
        expected = reference(plan, history)
    except EvalError as e:  # e.g. a reduce over negative counts: the operators refuse it too
        try:
            run_steps(plan, history, bounds, columnar)
        except EvalError as ours:
            assert type(ours) is type(e)
            return
        raise AssertionError(f"the reference refused ({e}), the operators did not") from None
    got = run_steps(plan, history, bounds, columnar)
    within = consolidate(u for u in got if u[1] < TIMES)
    assert within == expected, plan.explain()
    assert all(u[1] >= 0 for u in got)


def test_state_is_the_live_data_not_its_history() -> None:
    """A reduce over a key inserted and deleted many times holds nothing at the end."""
    from changeflow.compute.types import INT4, Column

    r = P.Get("r", (Column("k", INT4), Column("v", INT4)))
    plan = P.Reduce(r, (0,), (P.Aggregate("count"),))
    sources = Inputs()
    root = build(plan, sources, at=0)
    for t in range(100):
        sources.feed("r", [((1, t), t, 1)] + ([((1, t - 1), t, -1)] if t else []))
        root.step(t + 1)
    assert root.state_size() == 1
    sources.feed("r", [((1, 99), 100, -1)])
    assert root.step(101) == [((1, 1), 100, -1)]
    assert root.state_size() == 0


@settings(max_examples=200)
@given(
    plan=plans(3),
    history=histories(TIMES),
    as_of=st.integers(0, TIMES - 2),
    cuts=st.lists(st.integers(1, TIMES - 1), max_size=3, unique=True),
)
def test_operators_hydrated_in_bulk_continue_exactly(
    plan: P.Plan, history: dict[str, list], as_of: int, cuts: list[int]
) -> None:
    """Hydrated from the collections at ``as_of`` (as Spark computes them in bulk), then
    stepped: the output after ``as_of`` equals the reference at every time."""
    try:
        expected = reference(plan, history)
    except EvalError:
        return
    versions = {}
    for name, updates in history.items():
        versions[name] = PTVC.empty(name=name)
        versions[name].append(updates, Antichain([TIMES]))
    at = {n: v.read(as_of) for n, v in versions.items()}
    sources = Inputs()
    root = build(plan, sources, at=as_of)
    hydrate(root, lambda p: list(evaluate(p, at, as_of).items()), as_of)
    assert all(getattr(op, "held", 0) == recount(op) for op in root.walk())
    known = root.contents()  # what the state tells of the output at the as_of, where it can
    if known is not None:
        assert consolidate((row, as_of, c) for row, c in known) == consolidate(
            (row, as_of, c) for row, c in evaluate(plan, at, as_of).items()
        ), plan.explain()
    out, lower = [], as_of + 1
    for upper in [*sorted(c for c in cuts if c > as_of + 1), TIMES]:
        for name in sources.names():
            sources.feed(name, (u for u in history[name] if lower <= u[1] < upper))
        out += root.step(upper)
        lower = upper
    start = [(row, as_of, c) for row, c in evaluate(plan, at, as_of).items()]
    got = consolidate([*start, *(u for u in out if u[1] < TIMES)])
    want = consolidate(
        [(row, as_of, c) for row, c in evaluate(plan, at, as_of).items()]
        + [u for u in expected if u[1] > as_of]
    )
    assert got == want, plan.explain()


def test_temporal_filter_on_batches_with_null_and_empty_windows() -> None:
    """Rows whose bound is NULL or whose window is empty make nothing; the others open and
    close, on batches as in rows."""
    lower, upper = P.col(R.schema, 1), Arith("+", P.col(R.schema, 0), lit(5))
    plan = P.TemporalFilter(R, (lower,), (upper,))
    history = {
        "r": [((1, None), 0, 1), ((2, 1), 0, 1), ((3, -5), 1, 1), ((4, 3), 1, -1), ((6, 20), 0, 1)],
        "s": [],
    }
    rows = run_steps(plan, history, [1, 3, 9])
    assert sorted(run_steps(plan, history, [1, 3, 9], columnar=True)) == sorted(rows)
    assert sorted(rows) == [
        ((2, 1), 1, 1), ((2, 1), 7, -1), ((3, -5), 1, 1), ((3, -5), 8, -1), ((4, 3), 3, -1),
        ((4, 3), 9, 1),
    ]  # fmt: skip
