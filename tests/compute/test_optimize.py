"""Plan rewrites keep the plan's meaning and key its joins."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from changeflow.collection import read
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate
from changeflow.compute.optimize import optimize
from changeflow.errors import EvalError

sys.path.insert(0, str(Path(__file__).parent))
from plans import R, S, histories, plans  # noqa: E402


def eq(schema, i: int, j: int) -> X.Expr:
    return X.Cmp("=", P.col(schema, i), P.col(schema, j))


def cross_then_filter() -> P.Plan:
    """``FROM r, s, r AS r2 WHERE r.k = s.k AND s.w = r2.v AND r.v > 0`` as SQL plans it."""
    inner = P.Join((R, S))
    three = P.Join((inner, R))
    schema = three.schema
    positive = X.Cmp(">", P.col(schema, 1), X.lit(0))
    return P.Filter(three, (eq(schema, 0, 2), eq(schema, 3, 5), positive))


def test_cross_joins_under_equalities_become_one_keyed_join() -> None:
    join = optimize(cross_then_filter())
    assert isinstance(join, P.Join) and len(join.inputs_) == 3
    assert join.equivalences == ((0, 2), (3, 5))


@given(history=histories(4), t=st.integers(0, 3))
def test_the_rewritten_join_means_the_same(history: dict, t: int) -> None:
    inputs = {name: read(updates, t) for name, updates in history.items()}
    plan = cross_then_filter()
    assert evaluate(optimize(plan), inputs, t) == evaluate(plan, inputs, t)


@given(plan=plans(3), history=histories(4), t=st.integers(0, 3))
def test_any_plan_means_the_same_after_optimizing(plan: P.Plan, history: dict, t: int) -> None:
    inputs = {name: read(updates, t) for name, updates in history.items()}
    try:
        expected = evaluate(plan, inputs, t)
    except EvalError:
        return
    assert evaluate(optimize(plan), inputs, t) == expected


def test_one_sided_predicates_move_below_the_join() -> None:
    join = optimize(cross_then_filter())
    assert isinstance(join, P.Join)
    first = join.inputs_[0]
    assert isinstance(first, P.Filter) and str(first.predicates[0]) == str(
        X.Cmp(">", P.col(R.schema, 1), X.lit(0))
    )


def test_map_columns_reaches_every_kind_of_child() -> None:
    from changeflow.compute.functions import Func

    schema = (*R.schema, *S.schema)
    k, w = P.col(schema, 2), P.col(schema, 3)
    e = X.Case(
        ((X.InList(k, (w, X.lit(1))), Func("abs", (w,))),),
        X.Coalesce((k, X.Arith("+", w, X.lit(2)))),
    )
    moved = X.map_columns(e, lambda i: i - 2)
    assert moved.columns() == {0, 1} and e.columns() == {2, 3}
    row = (None, None, 5, -7)
    assert moved.eval(row[2:]) == e.eval(row)


def disconnected_first() -> P.Plan:
    """``FROM r, r AS r2, s, s AS s2 WHERE r.k = s.k AND r2.k = s2.k AND s.w = s2.w``: as
    written, r and r2 share no equality, so running left to right starts with r x r2."""
    four = P.Join((P.Join((P.Join((R, R)), S)), S))
    schema = four.schema  # r: 0-1, r2: 2-3, s: 4-5, s2: 6-7
    return P.Filter(four, (eq(schema, 0, 4), eq(schema, 2, 6), eq(schema, 5, 7)))


def test_join_inputs_are_ordered_so_none_is_a_cross_product() -> None:
    plan = optimize(disconnected_first())
    assert isinstance(plan, P.Project)
    join = plan.input
    assert isinstance(join, P.Join)
    assert [p.name for p in join.inputs_] == ["r", "s", "s", "r"]
    widths = [len(p.schema) for p in join.inputs_]
    sides = [i for i, w in enumerate(widths) for _ in range(w)]
    for n in range(1, len(widths)):  # each input shares an equivalence with one before it
        assert any(
            n in {sides[c] for c in klass} and min(sides[c] for c in klass) < n
            for klass in join.equivalences
        )
    assert plan.schema == disconnected_first().schema


@given(history=histories(4), t=st.integers(0, 3))
def test_the_reordered_join_means_the_same(history: dict, t: int) -> None:
    inputs = {name: read(updates, t) for name, updates in history.items()}
    plan = disconnected_first()
    assert evaluate(optimize(plan), inputs, t) == evaluate(plan, inputs, t)
