"""The Correction buffer against the plain reference, its invariants, and the seed's examples."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.compute.correction import Correction
from changeflow.errors import FrontierViolation
from changeflow.testing.correction import CorrectionReference

SCHEMA = pa.schema([("key", pa.string())])
FAR = 2**40


def triples(table: pa.Table) -> list:
    return [((r["key"],), r["_time"], r["_diff"]) for r in table.to_pylist()]


def updates(max_size: int = 12):
    time = st.one_of(st.integers(0, 40), st.integers(0, 40).map(lambda t: t + FAR))
    update = st.tuples(st.sampled_from("abcde").map(lambda k: (k,)), time, st.integers(-2, 2))
    return st.lists(update.filter(lambda u: u[2] != 0), max_size=max_size)


operation = st.one_of(
    st.tuples(st.just("insert"), updates()),
    st.tuples(st.just("negate"), updates()),
    st.tuples(st.just("read"), st.integers(0, 45)),
    st.tuples(st.just("read"), st.just(None)),
    st.tuples(st.just("since"), st.integers(0, 12)),
    st.tuples(st.just("jump"), st.integers(10, 40)),
    st.tuples(st.just("consolidate"), st.just(0)),
    st.tuples(st.just("feedback"), st.integers(0, 45)),
)


@settings(max_examples=2500)
@given(
    ops=st.lists(operation, max_size=25),
    chunk_rows=st.sampled_from([1, 2, 3, 64]),
    proportionality=st.sampled_from([2, 3]),
)
def test_matches_the_reference(ops, chunk_rows, proportionality) -> None:
    buffer = Correction(SCHEMA, chunk_rows=chunk_rows, chain_proportionality=proportionality)
    reference = CorrectionReference()
    for op, arg in ops:
        if op == "insert":
            buffer.insert(arg)
            reference.insert(arg)
        elif op == "negate":
            buffer.insert_negated(arg)
            reference.insert_negated(arg)
        elif op == "read":
            assert triples(buffer.updates_before(arg)) == reference.updates_before(arg)
        elif op in ("since", "jump"):
            since = reference.since + arg
            buffer.advance_since(since)
            reference.advance_since(since)
        elif op == "consolidate":
            buffer.consolidate_at_since()
        else:  # what a sink does: read, then insert the negation of what it wrote
            written = buffer.updates_before(arg)
            assert triples(written) == reference.updates_before(arg)
            buffer.insert_negated(written)
            reference.insert_negated(triples(written))
        buffer.check_invariants()
    assert triples(buffer.updates_before(None)) == reference.updates_before(None)
    buffer.check_invariants()


def test_the_seeds_worked_example() -> None:
    """Two chains whose times, advanced to since [2], are neither sorted nor consolidated."""
    buffer = Correction(SCHEMA, chunk_rows=3)
    buffer.insert([(("c",), 1, 1), (("b",), 2, -1), (("a",), 3, -1)])
    buffer.updates_before(4)  # the first chain is emitted ...
    buffer.insert([(("b",), 1, 1), (("a",), 2, 1), (("c",), 2, -1)])
    assert buffer.emitted.count == 3 and len(buffer.pending_low) == 1  # ... the second is low
    buffer.advance_since(2)
    assert triples(buffer.updates_before(4)) == [(("a",), 2, 1), (("a",), 3, -1)]
    buffer.check_invariants()


def test_an_update_before_since_waits_for_it() -> None:
    buffer = Correction(SCHEMA)
    buffer.advance_since(10)
    buffer.insert([(("a",), 5, 1)])
    assert triples(buffer.updates_before(10)) == []
    assert triples(buffer.updates_before(11)) == [(("a",), 10, 1)]


def test_reads_leave_far_future_updates_alone() -> None:
    buffer = Correction(SCHEMA, chunk_rows=4)
    far = [((k,), FAR + t, -1) for t in range(100) for k in "abcd"]
    buffer.insert(far)
    buffer.updates_before(1)
    far_chains = [
        c for b in buffer.buckets if b.lo >= 2**39 for c in b.chains
    ]  # the read split the buckets: the far future sits in its own
    assert far_chains and sum(c.count for c in far_chains) == len(far)
    for t in range(1, 200):
        buffer.insert([(("x",), t, 1)])
        written = buffer.updates_before(t + 1)
        buffer.insert_negated(written)
        buffer.advance_since(t + 1)
    still = [c for b in buffer.buckets if b.lo >= 2**39 for c in b.chains]
    assert [id(c) for c in still] == [id(c) for c in far_chains]
    buffer.check_invariants()


def test_since_never_goes_back_and_empty_keeps_nothing() -> None:
    buffer = Correction(SCHEMA)
    buffer.advance_since(5)
    with pytest.raises(FrontierViolation, match="since cannot move back from"):
        buffer.advance_since(4)
    buffer.insert([(("a",), 7, 1)])
    buffer.advance_since(None)
    buffer.insert([(("b",), 9, 1)])
    assert len(buffer) == 0 and buffer.updates_before(None).num_rows == 0
    with pytest.raises(FrontierViolation):
        buffer.advance_since(100)
