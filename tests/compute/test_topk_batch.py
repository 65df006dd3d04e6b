"""Top-k over columnar inputs ranks a step in Arrow and gives a batch: against the reference
evaluator at every time on random histories (NULLs first and last, ties broken by the whole
row, OFFSET, multiplicities, numerics of several scales, text by code point, booleans, bytea,
timestamps), steps fed as frames or as rows, groups new and already held; and where Arrow
cannot order as the rows do (floats, a negative count), the rows."""

from __future__ import annotations

import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate_history
from changeflow.compute.operators import Inputs, TopK, build
from changeflow.compute.types import (
    BOOL,
    BYTEA,
    DATE,
    FLOAT8,
    INT4,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    Column,
)
from changeflow.errors import EvalError
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from plans import by_data_and_time, frame, live_history  # noqa: E402

R = P.Get(
    "r",
    (
        Column("k", INT4),
        Column("n", NUMERIC),
        Column("d", DATE),
        Column("s", TEXT),
        Column("b", BOOL),
        Column("x", BYTEA),
        Column("ts", TIMESTAMP),
    ),
)
TIMES = 5
VALUES = [
    [None, 1, 2],
    [None, Decimal("1.50"), Decimal("-2"), Decimal("0.5"), Decimal("1.5")],
    [None, date(2020, 1, 1), date(1999, 12, 31)],
    [None, "a", "B", "é", "a "],
    [None, True, False],
    [None, b"", b"\x00", b"\xff"],
    [None, datetime(2020, 1, 1, 12), datetime(2020, 1, 1)],
]


@st.composite
def _orders(draw: st.DrawFn) -> tuple[P.Order, ...]:
    columns = draw(st.lists(st.sampled_from(range(len(VALUES))), max_size=3, unique=True))
    nulls = st.sampled_from([None, True, False])
    return tuple(P.Order(c, draw(st.booleans()), draw(nulls)) for c in columns)


def _reference(plan: P.Plan, history: list) -> list:
    inputs = PTVC.empty(name="r")
    inputs.append(history, Antichain([TIMES]))
    return evaluate_history(plan, {"r": inputs}, 0, TIMES)


@settings(max_examples=400, deadline=None)
@given(
    order=_orders(),
    group=st.sampled_from([(), (0,), (4,), (0, 3)]),
    limit=st.sampled_from([None, 0, 1, 2, 3]),
    offset=st.integers(0, 2),
    history=st.data(),
    cuts=st.lists(st.integers(1, TIMES - 1), max_size=3),
    rows=st.sets(st.integers(0, TIMES - 1), max_size=2),
    compact=st.booleans(),
    large=st.booleans(),
)
def test_batch_topk_agrees_with_the_reference(
    order: tuple, group: tuple, limit: int | None, offset: int, history, cuts, rows, compact, large
) -> None:
    """Steps in ``rows`` (by their first time) are fed as rows; the others as frames, groups
    held as Arrow rows re-ranked with their changes (with ``compact``, all of them into one
    ranking after every step; with ``large``, never: they become sorted lists)."""
    updates = live_history(history.draw, VALUES, TIMES, counts=(1, 1, 2, 3))
    plan = P.TopK(R, group, order, limit, offset)
    expected = _reference(plan, updates)
    sources = Inputs()
    root = build(plan, sources, at=0)
    assert isinstance(root, TopK)
    if compact:
        root.cold.slack = -1
    if large:
        root.rerank = (0, -1)
    out, lower = [], 0
    for upper in [*sorted(set(cuts)), TIMES]:
        step = [u for u in updates if lower <= u[1] < upper]
        if lower in rows:
            sources.feed("r", step)
            assert not root.columnar
            out += root.step(upper)
        else:
            sources.feed_table("r", frame(R, step))
            assert root.columnar
            out += root.step_batch(upper).updates()
        lower = upper
    assert by_data_and_time(out) == by_data_and_time(expected), plan.explain()
    held = sum(len(c) for _, c in root.groups.values())
    assert root.held == held + sum(stop - start for _, start, stop in root.cold.values())
    assert root.cold.rows <= root.cold.buffered


def test_floats_take_the_rows() -> None:
    """Arrow tells -0.0 from 0.0 and places NaN its own way: a float top-k steps in rows
    (-0.0 and 0.0 one row of count 2, a NaN after every number)."""
    f = P.Get("f", (Column("x", FLOAT8),))
    plan = P.TopK(f, (), (P.Order(0),), 2)
    sources = Inputs()
    root = build(plan, sources, at=0)
    history = [((float("nan"),), 0, 1), ((1.0,), 0, 1), ((-0.0,), 0, 1), ((0.0,), 0, 1)]
    sources.feed_table("f", frame(f, history))
    assert not root.columnar
    assert [(row, c) for row, _, c in root.step(1)] == [((0.0,), 2)]


def test_a_negative_count_is_the_rows_error() -> None:
    """A retraction of a row never inserted: the rows' error, as the reference raises."""
    plan = P.TopK(R, (0,), (P.Order(1),), 1)
    row = (1, Decimal(1), None, "a", True, b"", None)
    history = [(row, 0, 1), ((2, *row[1:]), 1, -1)]
    with pytest.raises(EvalError) as expected:
        _reference(plan, history)
    sources = Inputs()
    root = build(plan, sources, at=0)
    sources.feed_table("r", frame(R, history[:1]))
    root.step_batch(1)
    sources.feed_table("r", frame(R, history[1:]))
    with pytest.raises(EvalError, match="negative count") as got:
        root.step_batch(2)
    assert got.value.sqlstate == expected.value.sqlstate == "XX000"
