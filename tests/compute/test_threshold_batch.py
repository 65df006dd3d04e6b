"""Distinct and Threshold over columnar inputs sum a step per distinct row in Arrow and give a
batch: against the reference evaluator on random histories with NULLs, numerics of several
scales, multiplicities above one, rows retracted to nothing and counts below zero."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate_history
from changeflow.compute.operators import Inputs, build
from changeflow.compute.types import FLOAT8, INT4, NUMERIC, TEXT, Column
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from plans import by_data_and_time, frame, live_history  # noqa: E402

R = P.Get("r", (Column("k", INT4), Column("n", NUMERIC), Column("s", TEXT)))
S = P.Get("s", R.schema)
INPUTS = {"r": R, "s": S}
TIMES = 5
PLANS = [
    P.Distinct(R),
    P.Threshold(R),
    P.Threshold(P.Union((R, P.Negate(S)))),  # EXCEPT ALL: counts go below zero
    P.Distinct(P.Union((P.Project(R, (0,)), P.Project(S, (0,))))),
]


@st.composite
def _histories(draw: st.DrawFn) -> dict[str, list]:
    numerics = [None, Decimal("1.50"), Decimal("1.5"), Decimal(0)]
    values = [[None, 1, 2], numerics, [None, "a", "b "]]
    return {name: live_history(draw, values, TIMES, counts=(1, 1, 2, 3)) for name in INPUTS}


@settings(max_examples=300, deadline=None)
@given(
    plan=st.sampled_from(PLANS),
    history=_histories(),
    cuts=st.lists(st.integers(1, TIMES - 1), max_size=3),
)
def test_batch_threshold_agrees_with_the_reference(plan: P.Plan, history: dict, cuts: list) -> None:
    inputs = {}
    for name, updates in history.items():
        inputs[name] = PTVC.empty(name=name)
        inputs[name].append(updates, Antichain([TIMES]))
    expected = evaluate_history(plan, inputs, 0, TIMES)
    sources = Inputs()
    root = build(plan, sources, at=0)
    out, lower = [], 0
    for upper in [*sorted(set(cuts)), TIMES]:
        for name in sources.names():
            step = [u for u in history[name] if lower <= u[1] < upper]
            sources.feed_table(name, frame(INPUTS[name], step))
        assert root.columnar
        out += root.step_batch(upper).updates()
        lower = upper
    assert by_data_and_time(out) == by_data_and_time(expected), plan.explain()
    assert root.held == sum(len(rows) for rows in root.arrangement.values())


def test_floats_take_the_rows() -> None:
    """Arrow groups -0.0 apart from 0.0: a float row is distinct in Python rows."""
    f = P.Get("f", (Column("x", FLOAT8),))
    sources = Inputs()
    root = build(P.Distinct(f), sources, at=0)
    sources.feed_table("f", frame(f, [((0.0,), 0, 1), ((-0.0,), 0, 1)]))
    assert not root.columnar
    assert [u[2] for u in root.step(1)] == [1]
