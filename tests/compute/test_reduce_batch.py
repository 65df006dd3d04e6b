"""A reduce over a columnar input sums each step per group in Arrow: against the reference
evaluator on random histories with NULL keys and values, numerics, multiplicities above one
and groups retracted to nothing."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.compute import columnar as C
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate_history
from changeflow.compute.expr import Arith, lit
from changeflow.compute.operators import Inputs, build
from changeflow.compute.operators.batch import Batch
from changeflow.compute.operators.reduce_batch import _places, accumulate
from changeflow.compute.types import INT4, INT8, NUMERIC, Column
from changeflow.errors import EvalError
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from plans import by_data_and_time, frame, live_history  # noqa: E402

R = P.Get("r", (Column("k", INT4), Column("n", NUMERIC), Column("i", INT8)))
TIMES = 6


def _col(i: int) -> P.Expr:
    return P.col(R.schema, i)


def _plans() -> st.SearchStrategy[P.Plan]:
    price = Arith("*", _col(1), Arith("-", lit(1), lit(Decimal("0.05"))))
    mapped = P.Map(R, (("price", price),))
    aggs = st.sampled_from(
        [
            (P.Aggregate("count"), P.Aggregate("sum", _col(1)), P.Aggregate("avg", _col(2))),
            (P.Aggregate("sum", _col(2)), P.Aggregate("count", _col(1))),
            (P.Aggregate("min", _col(1)), P.Aggregate("max", _col(2))),
            (P.Aggregate("count", _col(1), distinct=True), P.Aggregate("avg", _col(1))),
            (P.Aggregate("sum", _col(1), distinct=True), P.Aggregate("count")),
        ]
    )
    keys = st.sampled_from([(), (0,), (0, 2)])
    over_map = st.builds(
        lambda k: P.Reduce(mapped, k, (P.Aggregate("sum", P.col(mapped.schema, 3)),)), keys
    )
    return st.one_of(st.builds(lambda k, a: P.Reduce(R, k, a), keys, aggs), over_map)


@st.composite
def _history(draw: st.DrawFn) -> list:
    """Inserts and retractions of rows (several copies at once at times), counts never below
    zero; NULL keys and values."""
    numerics = [None, Decimal("1.50"), Decimal("-2.25"), Decimal("0"), Decimal("7")]
    values = [[None, 1, 2], numerics, [None, -3, 0, 5, 2**40]]
    return live_history(draw, values, TIMES, per_time=4)


@settings(max_examples=300, deadline=None)
@given(plan=_plans(), history=_history(), cuts=st.lists(st.integers(1, TIMES - 1), max_size=3))
def test_batch_reduce_agrees_with_the_reference(plan: P.Plan, history: list, cuts: list) -> None:
    try:
        inputs = PTVC.empty(name="r")
        inputs.append(history, Antichain([TIMES]))
        expected = evaluate_history(plan, {"r": inputs}, 0, TIMES)
    except EvalError:
        return
    sources = Inputs()
    root = build(plan, sources, at=0)
    out, lower = [], 0
    for upper in [*sorted(set(cuts)), TIMES]:
        sources.feed_table("r", frame(R, [u for u in history if lower <= u[1] < upper]))
        out += root.step(upper)
        lower = upper
    assert by_data_and_time(out) == by_data_and_time(expected), plan.explain()
    assert root.held == sum(1 + g.held() for g in root.groups.values())


def _batch(updates: list) -> Batch:
    return Batch.of_table(frame(R, updates), tuple(c.type for c in R.schema))


def test_a_step_is_summed_per_group_in_arrow() -> None:
    """NULL keys group together; NULL values count as rows but not as values; kept values
    carry their change in count."""
    plan = P.Reduce(
        R,
        (0,),
        (P.Aggregate("count"), P.Aggregate("sum", _col(1)), P.Aggregate("min", _col(2))),
    )
    updates = [
        ((None, Decimal("1.5"), 3), 0, 1),
        ((None, None, 3), 0, 1),
        ((1, Decimal("2.25"), None), 0, 1),
        ((1, Decimal("0.25"), 4), 0, -1),
    ]
    changes = accumulate(plan, _batch(updates))
    nulls, ones = changes[(None,)], changes[(1,)]
    assert (nulls.count, nulls.present, nulls.totals[1]) == (2, [0, 1, 2], Decimal("1.5"))
    assert nulls.values[2] == [(3, 2)]
    assert (ones.count, ones.present[1], ones.totals[1]) == (0, 0, Decimal(2))
    assert ones.values[2] == [(4, -1)]


def test_numeric_multiplicities_and_float_keys_take_the_rows() -> None:
    """A numeric sum over several copies of a row is the rows' (they multiply)."""
    plan = P.Reduce(R, (0,), (P.Aggregate("sum", _col(1)),))
    try:
        accumulate(plan, _batch([((1, Decimal("1.5"), 0), 0, 2)]))
    except C.Rows:
        return
    raise AssertionError("a multiplicity above one was summed in Arrow")


def test_a_sums_decimal_places_are_those_of_its_most_precise_value() -> None:
    """Trailing zeros do not count; a value past the first ones read decides; so does one
    with more digits than Python's 28-digit context holds."""
    ten = pa.decimal128(38, 10)
    assert _places(pa.array([Decimal("1.5000"), None, Decimal("0E-10")], ten)) == 1
    assert _places(pa.array([Decimal(7)] * 200 + [Decimal("0.001")], ten)) == 3
    assert _places(pa.array([Decimal("1.25")] * 100 + [Decimal("1E-10")], ten)) == 10
    assert _places(pa.array([None, None], ten)) == 0
    long = Decimal("1234567890123456789012345678901.5")
    assert _places(pa.array([long], pa.decimal256(40, 5))) == 1


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.none(),
            st.integers(0, 10).flatmap(
                lambda p: st.decimals(-(10**8), 10**8, places=p, allow_nan=False)
            ),
            st.sampled_from([Decimal(0), Decimal("92233720.3685477580")]),
        ),
        min_size=1,
        max_size=8,
    ),
    signs=st.lists(st.sampled_from([1, -1]), min_size=8, max_size=8),
    scale=st.sampled_from([10, 20]),
)
def test_decimal_sums_on_scaled_ints_are_the_decimal_kernels(values, signs, scale) -> None:
    """A numeric sum's weighted values taken on scaled int64s have the decimal kernels' values
    and type (or both send the step to the rows)."""
    from changeflow.compute.operators import reduce_batch

    arg = pa.array(values, pa.decimal128(38, scale))
    diffs = pa.array(signs[: len(values)], pa.int64())
    valid = pc.is_valid(arg)

    def weighted(fast: bool) -> object:
        saved = reduce_batch._weighted_ints
        if not fast:
            reduce_batch._weighted_ints = lambda *_: None
        try:
            out = reduce_batch._weighted(arg, diffs, valid)
        except C.Rows:
            return "rows"
        finally:
            reduce_batch._weighted_ints = saved
        return out.type, out.to_pylist()

    assert weighted(True) == weighted(False)
