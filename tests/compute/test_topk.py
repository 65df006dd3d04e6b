"""Top-k keeps each group's rows sorted by a key of plain values where every column's type
allows it: against the reference evaluator on random histories with NULLs, ties, numerics
of several scales, dates and text, ascending and descending, NULLs first and last."""

from __future__ import annotations

import sys
from datetime import date
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate_history
from changeflow.compute.operators import Inputs, TopK, build
from changeflow.compute.operators.topk import plain_key
from changeflow.compute.types import DATE, FLOAT8, INT4, NUMERIC, TEXT, Column
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from plans import by_data_and_time, frame, live_history  # noqa: E402

R = P.Get("r", (Column("k", INT4), Column("n", NUMERIC), Column("d", DATE), Column("s", TEXT)))
TIMES = 5


@st.composite
def _orders(draw: st.DrawFn) -> tuple[P.Order, ...]:
    columns = draw(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=3, unique=True))
    return tuple(
        P.Order(
            c,
            c != 3 and draw(st.booleans()),  # text descending has no plain key
            draw(st.sampled_from([None, True, False])),
        )
        for c in columns
    )


@st.composite
def _history(draw: st.DrawFn) -> list:
    numerics = [None, Decimal("1.50"), Decimal("-2"), Decimal("0.5")]
    dates = [None, date(2020, 1, 1), date(1999, 12, 31)]
    return live_history(draw, [[None, 1, 2], numerics, dates, [None, "a", "B", "é"]], TIMES)


@settings(max_examples=300, deadline=None)
@given(
    order=_orders(),
    group=st.sampled_from([(), (0,)]),
    limit=st.sampled_from([None, 1, 2]),
    offset=st.integers(0, 1),
    history=_history(),
    cuts=st.lists(st.integers(1, TIMES - 1), max_size=3),
    columnar=st.booleans(),
)
def test_topk_agrees_with_the_reference(
    order: tuple,
    group: tuple,
    limit: int | None,
    offset: int,
    history: list,
    cuts: list,
    columnar: bool,
) -> None:
    plan = P.TopK(R, group, order, limit, offset)
    inputs = PTVC.empty(name="r")
    inputs.append(history, Antichain([TIMES]))
    expected = evaluate_history(plan, {"r": inputs}, 0, TIMES)
    sources = Inputs()
    root = build(plan, sources, at=0)
    assert isinstance(root, TopK)
    out, lower = [], 0
    for upper in [*sorted(set(cuts)), TIMES]:
        step = [u for u in history if lower <= u[1] < upper]
        sources.feed_table("r", frame(R, step)) if columnar else sources.feed("r", step)
        out += root.step(upper)
        lower = upper
    assert by_data_and_time(out) == by_data_and_time(expected), plan.explain()


def test_plain_keys_only_where_python_orders_as_sql() -> None:
    """Floats (NaN) and descending text keep the comparisons of SQL."""
    assert plain_key((P.Order(0),), (INT4, TEXT)) is not None
    assert plain_key((P.Order(1, True),), (INT4, TEXT)) is None
    assert plain_key((P.Order(0),), (FLOAT8,)) is None
