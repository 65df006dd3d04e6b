"""CDC v2 reader: its memory stays bounded on long histories, what it reports missing, and
statements that arrive in unusual orders."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from changeflow.cdc.messages import Progress, Updates
from changeflow.cdc.reader import CdcReader
from changeflow.cdc.writer import write_history

sys.path.insert(0, str(Path(__file__).parent))
from reader_histories import (  # noqa: E402
    A,
    P,
)


def reader_state_size(reader: CdcReader) -> int:
    return (
        reader.pending_updates()
        + len(reader._announced)
        + len(reader._received)
        + len(reader._outstanding._counts)
        + len(reader._queue)
        + len(reader._int_queue)
        + len(reader._updates)
        + len(reader._seen)
        + len(reader._early)
    )


def test_memory_is_bounded_on_a_long_in_order_history():
    rnd = random.Random(7)
    steps = []
    for f in range(1, 3001):
        ups = [(rnd.choice("abcdefgh"), f - 1 + rnd.randint(0, 3), rnd.choice([-1, 1]))
               for _ in range(rnd.randint(0, 5))]  # fmt: skip
        steps.append((ups, A([f])))
    one = write_history(steps, batch_size=3)
    two = write_history(steps, batch_size=5)
    reader = CdcReader()
    fed_since_progress = 0
    peak = 0
    for m in one:
        reader.feed(m)
        if isinstance(m, Progress):
            assert reader.frontier == m.upper
            assert reader_state_size(reader) == 0
            fed_since_progress = 0
        else:
            fed_since_progress += len(m.updates)
            assert reader.pending_updates() <= fed_since_progress
        peak = max(peak, len(reader._announced_order) - reader._order_start)
        assert len(reader._announced_order) <= 2100
        assert len(reader._outstanding._heap) <= 10
        assert len(reader._times) <= 10
    assert reader.frontier == A() and peak <= 1
    # two writers interleaved: the second copy of every interval is dropped on arrival
    reader = CdcReader()
    it1, it2 = iter(one), iter(two)
    for m1 in it1:
        reader.feed(m1)
        for m2 in it2:
            reader.feed(m2)
            if isinstance(m2, Progress):
                break
        assert reader.pending_updates() <= 16
        if isinstance(m1, Progress):
            assert reader_state_size(reader) == 0
    assert reader.frontier == A()


def test_memory_is_bounded_on_a_long_in_order_product_history():
    rnd = random.Random(8)
    steps, f = [], A([P([0, 0])])
    for i in range(1, 301):
        ups = [(rnd.choice("abcd"), P([i - 1 + rnd.randint(0, 2), rnd.randint(0, 3)]), 1)
               for _ in range(rnd.randint(0, 4))]  # fmt: skip
        f = A([P([i, 0])])
        steps.append((ups, f))
    reader = CdcReader()
    for m in write_history(steps, batch_size=4):
        reader.feed(m)
        if isinstance(m, Progress):
            assert reader_state_size(reader) == 0
            assert len(reader._outstanding._heap) <= 10
    assert reader.frontier == A()


def test_missing_reports_the_times_that_hold_the_frontier():
    reader = CdcReader()
    reader.feed(Progress(A([0]), A([10]), ((2, 2), (4, 1))))
    assert reader.missing() == {2: (2, 0)}
    reader.feed(Updates((("a", 2, 1),)))
    assert reader.missing() == {2: (2, 1)}
    assert reader.feed(Updates((("b", 2, 1), ("c", 4, 1)))) == [
        ([("a", 2, 1), ("b", 2, 1), ("c", 4, 1)], A([10]))
    ]
    assert reader.missing() == {}
    reader.feed(Progress(A([12]), A(), ()))
    assert reader.queued_progress() == [Progress(A([12]), A(), ())]
    assert reader.frontier == A([10])
    assert reader.feed(Progress(A([10]), A([12]), ())) == [([], A())]
    assert reader.queued_progress() == []


def test_the_same_triple_twice_in_one_message_counts_once():
    reader = CdcReader()
    assert reader.feed(Progress(A([0]), A([5]), ((3, 1),))) == [([], A([3]))]
    assert reader.feed(Updates((("a", 3, 1), ("a", 3, 1)))) == [([("a", 3, 1)], A([5]))]
    reader = CdcReader()
    assert reader.feed(Updates((("a", 3, 1), ("a", 3, 1), ("b", 3, -1)))) == []
    assert reader.pending_updates() == 2
    [(ups, frontier)] = reader.feed(Progress(A([0]), A(), ((3, 2),)))
    assert sorted(ups) == [("a", 3, 1), ("b", 3, -1)] and frontier == A()


def test_many_statements_in_reverse_order():
    """Statements waiting for a gap to fill are kept by lower bound, not rescanned."""
    steps = [([("a", f - 1, 1)], A([f])) for f in range(1, 5001)]
    messages = write_history(steps, batch_size=100)
    updates = [m for m in messages if isinstance(m, Updates)]
    progress = [m for m in messages if isinstance(m, Progress)]
    reader = CdcReader()
    for m in updates + progress[::-1]:
        batches = reader.feed(m)
    assert batches == [([("a", t, 1) for t in range(5000)], A())]
    assert reader_state_size(reader) == 0


def test_statements_with_equal_lowers_wait_together():
    reader = CdcReader()
    for lower, upper in [(5, 6), (5, 7), (9, 10), (9, 11), (9, 10)]:
        assert reader.feed(Progress(A([lower]), A([upper]), ())) == []
    assert [p.lower for p in reader.queued_progress()] == [A([5])] * 2 + [A([9])] * 3
    assert reader.feed(Progress(A([0]), A([5]), ())) == [([], A([7]))]
    assert reader.feed(Progress(A([7]), A([9]), ())) == [([], A([11]))]
    assert reader.queued_progress() == []
