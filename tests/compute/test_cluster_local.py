"""A cluster-tier small step's driver side on columns, against the same work on rows: a
reduce's running totals per group and time, and the consolidation of a step's changes."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import event, given, settings
from hypothesis import strategies as st

from changeflow.compute import columnar as C
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.cluster.local import consolidated, consolidated_batch
from changeflow.compute.cluster.reduce import Accumulated
from changeflow.compute.operators.batch import Batch
from changeflow.compute.types import INT4, INT8, NUMERIC, NUMERIC_SCALE, TEXT, Column

SCHEMA = (Column("k", TEXT), Column("i", INT4), Column("n", NUMERIC), Column("m", INT8))
INPUT = P.Get("t", SCHEMA)
KINDS = tuple(c.type for c in SCHEMA)

numerics = st.one_of(
    st.none(),
    st.decimals(-(10**6), 10**6, places=2, allow_nan=False, allow_infinity=False),
    st.decimals(-1, 1, places=12, allow_nan=False, allow_infinity=False),  # past ten places
)
rows = st.tuples(
    st.sampled_from([None, "a", "b"]),
    st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    numerics,
    st.one_of(st.none(), st.integers(-(2**40), 2**40)),
)
updates = st.lists(
    st.tuples(rows, st.integers(0, 3), st.sampled_from([-2, -1, 1, 1, 1, 3])), max_size=40
)
aggregates = st.lists(
    st.tuples(st.sampled_from(["count", "sum", "avg"]), st.sampled_from([None, 1, 2, 3])),
    min_size=1,
    max_size=4,
).map(
    lambda specs: tuple(
        P.Aggregate("count") if c is None else P.Aggregate(f, P.col(SCHEMA, c)) for f, c in specs
    )
)


@settings(max_examples=200, deadline=None)
@given(
    changes=updates,
    group_by=st.sampled_from([(), (0,), (0, 1)]),
    aggs=aggregates,
    product=st.booleans(),
)
def test_running_totals_on_columns_are_those_of_the_rows(changes, group_by, aggs, product):
    if product:  # a computed argument: a numeric times an integer
        arg = X.Arith("*", P.col(SCHEMA, 2), P.col(SCHEMA, 1))
        aggs = (*aggs, P.Aggregate("sum", arg))
    totals = Accumulated(P.Reduce(INPUT, group_by, aggs))
    try:
        on_columns = totals._batch_sums(Batch.of_updates(changes, KINDS))
    except C.Rows:  # where only the rows can tell (a multiplicity, eleven places)
        event("rows")
        return
    assert on_columns == totals._row_sums(changes)


def test_totals_of_integers_and_numerics_are_summed_on_columns():
    changes = [(("a", 3, Decimal("1.25"), 7), t, 1) for t in (0, 0, 1)]
    changes.append((("b", None, None, None), 1, -1))
    aggs = tuple(P.Aggregate(f, P.col(SCHEMA, c)) for f in ("sum", "avg") for c in (1, 2, 3))
    totals = Accumulated(P.Reduce(INPUT, (0,), (P.Aggregate("count"), *aggs)))
    sums = totals._batch_sums(Batch.of_updates(changes, KINDS))
    assert sums == totals._row_sums(changes)
    assert sums[("a", 0)]["_s2"] == Decimal("2.50") and sums[("b", 1)]["_n"] == -1


@settings(max_examples=100, deadline=None)
@given(changes=updates)
def test_a_batch_consolidates_as_its_rows_do(changes):
    """Equal numerics of different scales are one key: compared by value, not by repr."""
    batch = consolidated_batch(Batch.of_updates(changes, KINDS))
    on_columns = {(row, t): diff for row, t, diff in batch.updates()}
    assert len(on_columns) == len(batch.updates())
    assert on_columns == {(row, t): diff for row, t, diff in consolidated(changes)}


def test_a_numeric_past_the_stored_places_is_summed_by_the_rows():
    """The rows round each value half up to the total's places before summing: two halves
    of the last place make two units there, not one."""
    half = Decimal(5).scaleb(-NUMERIC_SCALE - 1)
    changes = [((None, 1, half, 1), 0, 1), (("x", 1, half, 1), 0, 1)]
    totals = Accumulated(P.Reduce(INPUT, (), (P.Aggregate("sum", P.col(SCHEMA, 2)),)))
    table = totals.local_totals(Batch.of_updates(changes, KINDS))
    assert table.column("_s0").to_pylist() == [Decimal(2).scaleb(-NUMERIC_SCALE)]
