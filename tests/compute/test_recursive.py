"""WITH RECURSIVE's plan node: its operator equals the reference at every time, stepped from
the start and hydrated at an as_of; on Spark (bulk hydration) its rows are the reference's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from changeflow.collection import PTVC, consolidate
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate
from changeflow.compute.operators import Inputs, build, hydrate
from changeflow.compute.recursive import Recursive
from changeflow.compute.spark_eval import evaluate_spark
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from plans import INPUTS, R, histories  # noqa: E402
from test_operators import TIMES, reference  # noqa: E402
from test_spark_eval import R_ROWS, S_ROWS, frame, spark_version  # noqa: E402

S = INPUTS["s"]


@settings(max_examples=100)
@given(
    history=histories(TIMES),
    as_of=st.integers(0, TIMES - 2),
    cuts=st.lists(st.integers(1, TIMES - 1), max_size=3, unique=True),
)
def test_recursive_fixed_point_exact_at_every_time(
    history: dict[str, list], as_of: int, cuts: list[int]
) -> None:
    """The reachability of ``r``'s edges over ``s``'s (UNION): stepped from the start, and
    hydrated at ``as_of`` then stepped, the output equals the reference at every time."""
    last = P.Get("reach", R.schema)
    step = P.Project(P.Join((last, S), ((1, 2),)), (0, 3))
    plan = Recursive((R, S), step, "reach", True, R.schema)
    expected = reference(plan, history)
    sources = Inputs()
    root = build(plan, sources, at=0)
    out, lower = [], 0
    for upper in [*sorted(cuts), TIMES]:
        for name in sources.names():
            sources.feed(name, [u for u in history[name] if lower <= u[1] < upper])
        out += root.step(upper)
        lower = upper
    assert consolidate(u for u in out if u[1] < TIMES) == expected
    versions = {}
    for name, updates in history.items():
        versions[name] = PTVC.empty(name=name)
        versions[name].append(updates, Antichain([TIMES]))
    at = {n: v.read(as_of) for n, v in versions.items()}
    sources = Inputs()
    root = build(plan, sources, at=as_of)
    hydrate(root, lambda p: list(evaluate(p, at, as_of).items()), as_of)
    start = [(row, as_of, c) for row, c in (root.contents() or [])]
    out = []
    for name in sources.names():
        sources.feed(name, (u for u in history[name] if u[1] > as_of))
    out += root.step(TIMES)
    want = [(row, as_of, c) for row, c in evaluate(plan, at, as_of).items()]
    want += [u for u in expected if u[1] > as_of]
    assert consolidate([*start, *out]) == consolidate(want)


@pytest.mark.spark
def test_recursive_fixed_point_agrees_with_the_reference(spark: SparkSession) -> None:
    for distinct in (True, False):
        last = P.Get("walk", R.schema)
        step = P.Project(P.Join((last, S), ((0, 2),)), (3, 1))  # (k, v) -> (s.w, v)
        plan = Recursive((R, S), step, "walk", distinct, R.schema)
        versions = {"r": R_ROWS, "s": S_ROWS}
        inputs = {n: frame(spark, INPUTS[n].schema, v) for n, v in versions.items()}
        got = spark_version(evaluate_spark(plan, inputs, 5), len(plan.schema))
        assert got == evaluate(plan, versions, 5)
        assert got[(7, 10)] == (1 if distinct else 2)
