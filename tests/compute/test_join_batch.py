"""Inner and outer joins over columnar inputs probe with a step's keys and give a batch:
against the reference evaluator on random histories with few keys (many rows meet in one
step), NULL keys (NULL-padded rows of outer joins), numerics, multiplicities above one and rows
retracted to nothing; a reduce above a join sums the batch per group."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate_history
from changeflow.compute.expr import Arith, Cmp, lit
from changeflow.compute.operators import Inputs, build
from changeflow.compute.operators import join_batch as J
from changeflow.compute.types import INT4, NUMERIC, Column
from changeflow.errors import EvalError
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from plans import by_data_and_time, frame, live_history  # noqa: E402

R = P.Get("r", (Column("k", INT4), Column("n", NUMERIC)))
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))
INPUTS = {"r": R, "s": S}
TIMES = 5


def _plans() -> st.SearchStrategy[P.Plan]:
    two = P.Join((R, S), ((0, 2),))
    residual = P.Join((R, S), ((0, 2),), residual=Cmp("<", P.col(two.schema, 3), lit(2)))
    three = P.Join((R, S, S), ((0, 2, 4),))
    chained = P.Join((R, S, R), ((0, 2), (3, 4)))  # the second key is the first join's output
    revenue = P.Map(
        two, (("rev", Arith("*", P.col(two.schema, 1), Arith("-", lit(1), lit(Decimal("0.1"))))),)
    )
    summed = P.Reduce(revenue, (0,), (P.Aggregate("sum", P.col(revenue.schema, 4)),))
    outer = [P.Join((R, S), ((0, 2),), kind) for kind in ("left", "right", "full")]
    counted = P.Reduce(
        outer[2], (2,), (P.Aggregate("count"), P.Aggregate("sum", P.col(two.schema, 1)))
    )
    return st.sampled_from([two, residual, three, chained, summed, *outer, counted])


@st.composite
def _histories(draw: st.DrawFn) -> dict[str, list]:
    out = {}
    for name, get in INPUTS.items():
        second = [None, Decimal("1.5"), Decimal("-2")] if get is R else [None, 0, 1, 2]
        out[name] = live_history(draw, [[None, 1, 2], second], TIMES, per_time=5)
    return out


@settings(max_examples=300, deadline=None)
@given(
    plan=_plans(),
    history=_histories(),
    cuts=st.lists(st.integers(1, TIMES - 1), max_size=4),
    limit=st.sampled_from([0, 1 << 16]),
    grouped=st.sampled_from([0, J._GROUPED_ROWS]),
)
def test_batch_join_agrees_with_the_reference(
    plan: P.Plan, history: dict, cuts: list, limit: int, grouped: int
) -> None:
    """A side's changes wait as batches until probed (with a limit of 0, summed in Arrow as
    they double); a step's rows are grouped by key in Arrow from ``grouped`` rows on."""
    default, J._GROUPED_ROWS = J._GROUPED_ROWS, grouped
    try:
        _agrees(plan, history, cuts, limit)
    finally:
        J._GROUPED_ROWS = default


def _agrees(plan: P.Plan, history: dict, cuts: list, limit: int) -> None:
    inputs = {}
    for name, updates in history.items():
        inputs[name] = PTVC.empty(name=name)
        inputs[name].append(updates, Antichain([TIMES]))
    try:
        expected = evaluate_history(plan, inputs, 0, TIMES)
    except EvalError:
        return
    sources = Inputs()
    root = build(plan, sources, at=0)
    for op in root.walk():
        for side in getattr(op, "sides", ()):
            side.limit = limit
    out, lower = [], 0
    for upper in [*sorted(set(cuts)), TIMES]:
        for name in sources.names():
            step = [u for u in history[name] if lower <= u[1] < upper]
            sources.feed_table(name, frame(INPUTS[name], step))
        assert root.columnar or isinstance(plan, P.Reduce)
        out += root.step(upper)
        lower = upper
    assert by_data_and_time(out) == by_data_and_time(expected), plan.explain()
    for op in root.walk():
        if hasattr(op, "arrangements"):
            assert op.held == sum(len(rows) for side in op.arrangements for rows in side.values())
