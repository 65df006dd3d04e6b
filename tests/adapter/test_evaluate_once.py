"""A query's one-shot evaluation by the dataflow operators equals the reference evaluator's."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from changeflow.adapter.rows import evaluate_once
from changeflow.collection import read
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate
from changeflow.errors import EvalError

sys.path.insert(0, str(Path(__file__).parents[1] / "compute"))
from plans import histories, plans  # noqa: E402

TIMES = 6


@given(plan=plans(3), history=histories(TIMES), ts=st.integers(0, TIMES - 1))
def test_one_shot_operators_agree_with_the_reference(plan: P.Plan, history: dict, ts: int) -> None:
    inputs = {name: read(updates, ts) for name, updates in history.items()}
    try:
        expected = evaluate(plan, inputs, ts)
    except EvalError:
        return  # e.g. a reduce over a negative count: the operators refuse it as well
    assert evaluate_once(plan, inputs, ts) == expected
