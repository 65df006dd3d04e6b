"""CDC v2 messages, writer and reader: the chaos property and the conflicts a reader must catch.

The chaos property: write a random history (possibly twice, by writers that batch differently),
then duplicate, reorder and re-batch the messages in any way that keeps their meaning; the
reader recovers exactly the history, never reports a frontier that goes back, and forgets what
it has reported.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from changeflow.cdc.columnar import ColumnarReader
from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.cdc.reader import CdcReader, decode
from changeflow.cdc.writer import CdcWriter, write_history
from changeflow.collection import consolidate
from changeflow.errors import (
    CdcConflict,
    FrontierViolation,
    InvalidInput,
    InvalidTime,
    ProtocolViolation,
)
from changeflow.time import Antichain, Product, Time, time_to_json

A = Antichain
P = Product


class TriplesColumnarReader(ColumnarReader):
    """The columnar reader with its advances as triples, to be checked like the reference."""

    def feed(self, message):  # type: ignore[override]
        return [(self.triples(table), f) for table, f in super().feed(message)]


# Every property and conflict test runs against both readers: the answers must be the same.
READERS = pytest.mark.parametrize(
    "make", [CdcReader, TriplesColumnarReader], ids=["reference", "columnar"]
)

# -- histories ----------------------------------------------------------------------------------

DATA = st.sampled_from("abc")  # a small alphabet, so (data, time) pairs collide
DIFFS = st.sampled_from([-2, -1, 1, 2])


@dataclass
class History:
    """Steps of ``(updates, new frontier)`` given to a writer, then maybe ``close``."""

    steps: list[tuple[list[tuple[str, Time, int]], Antichain]]
    closed: bool
    minimum: Time

    def all_updates(self) -> list[tuple[str, Time, int]]:
        return [u for ups, _ in self.steps for u in ups]

    def final(self) -> Antichain:
        if self.closed:
            return Antichain()
        return self.steps[-1][1] if self.steps else Antichain([self.minimum])

    def expected(self, frontier: Antichain | None = None) -> list:
        """The consolidated history at times not at or beyond ``frontier`` (default: final)."""
        f = self.final() if frontier is None else frontier
        return consolidate(u for u in self.all_updates() if not f.less_equal(u[1]))

    def write(self, batch_size: int, groups: Sequence[int] = ()) -> list[Message]:
        """The writer's messages; ``groups`` coarsens the steps (sizes of runs merged into one)."""
        steps = self.steps
        if groups:
            merged, i = [], 0
            for g in groups:
                run = steps[i : i + g]
                if run:
                    merged.append(([u for ups, _ in run for u in ups], run[-1][1]))
                i += g
            merged += steps[i:]
            steps = merged
        if self.closed and self.minimum == 0:
            return write_history(steps, batch_size)
        writer = CdcWriter(batch_size, self.minimum)  # the lattice, even of an empty history
        out = [m for ups, f in steps for m in writer.write(ups, f)]
        return out + writer.close() if self.closed else out


def with_cancellations(draw, ups: list) -> list:
    """Add retractions of some updates, so that diffs cancel inside the writer."""
    if not ups:
        return ups
    undo = draw(st.lists(st.sampled_from(ups), max_size=2))
    return ups + [(d, t, -r) for d, t, r in undo]


@st.composite
def int_histories(draw, max_steps: int = 8) -> History:
    steps, f = [], 0
    for _ in range(draw(st.integers(0, max_steps))):
        ups = draw(st.lists(st.tuples(DATA, st.integers(f, f + 5), DIFFS), max_size=6))
        f += draw(st.sampled_from([0, 1, 1, 2, 3]))  # 0: a step without progress
        steps.append((with_cancellations(draw, ups), A([f])))
    return History(steps, draw(st.sampled_from([True, True, True, False])), 0)


def offsets(hi: int) -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(0, hi), st.integers(0, hi))


@st.composite
def product_histories(draw, max_steps: int = 6) -> History:
    steps, f = [], A([P([0, 0])])

    def beyond(hi: int) -> st.SearchStrategy[Product]:
        return st.tuples(st.sampled_from(f.elements), offsets(hi)).map(
            lambda x: P([x[0][0] + x[1][0], x[0][1] + x[1][1]])
        )

    for _ in range(draw(st.integers(0, max_steps))):
        ups = draw(st.lists(st.tuples(DATA, beyond(3), DIFFS), max_size=6))
        f = f.join(A(draw(st.lists(beyond(2), min_size=1, max_size=2))))
        steps.append((with_cancellations(draw, ups), f))
    return History(steps, draw(st.sampled_from([True, True, True, False])), P([0, 0]))


# -- chaos --------------------------------------------------------------------------------------


def split_progress(p: Progress, rnd: random.Random, depth: int = 0) -> list[Progress]:
    """Split ``[lower, upper)`` at a frontier between them, partitioning the counts; shuffle
    the order of the counts; maybe recurse."""
    counts = list(p.counts)
    rnd.shuffle(counts)
    p = Progress(p.lower, p.upper, tuple(counts))
    if depth > 2 or rnd.random() < 0.4 or not p.lower:
        return [p]
    low = p.lower.elements[0]
    if isinstance(low, int):
        high = p.upper.elements[0] if p.upper else low + 6
        mid = A([rnd.randint(low, high)])
    else:
        x = A(P([rnd.randint(0, 14), rnd.randint(0, 14)]) for _ in range(rnd.randint(1, 2)))
        mid = p.lower.join(x).meet(p.upper)
    assert p.lower <= mid <= p.upper
    first = Progress(p.lower, mid, tuple((t, c) for t, c in counts if not mid.less_equal(t)))
    second = Progress(mid, p.upper, tuple((t, c) for t, c in counts if mid.less_equal(t)))
    return split_progress(first, rnd, depth + 1) + split_progress(second, rnd, depth + 1)


def mangle(messages: Sequence[Message], data: st.DataObject) -> list[Message]:
    """Duplicate, re-batch and reorder: what at-least-once storage may do to a stream."""
    rnd = data.draw(st.randoms(use_true_random=False))
    pool = [u for m in messages if isinstance(m, Updates) for u in m.updates]
    pool += [u for u in pool if rnd.random() < 0.3]  # duplicated triples
    pool = data.draw(st.permutations(pool))
    out: list[Message] = []
    i = 0
    while i < len(pool):  # re-batch: the same triple may land twice in one message
        n = rnd.randint(1, 6)
        out.append(Updates(tuple(pool[i : i + n])))
        i += n
    for m in messages:
        if isinstance(m, Progress):
            out += split_progress(m, rnd)
    out += [m for m in out if rnd.random() < 0.25]  # duplicated messages
    return data.draw(st.permutations(out))


# -- feeding and checking -----------------------------------------------------------------------


def feed_checked(
    reader: CdcReader, messages: Sequence[Message], history: History
) -> tuple[list, Antichain]:
    """Feed everything, checking every reported batch; return all updates and the frontier."""
    prev = Antichain([history.minimum])
    reported: list = []
    for m in messages:
        for ups, frontier in reader.feed(m):
            assert prev <= frontier and prev != frontier, (prev, frontier)
            for _, t, r in ups:
                assert prev.less_equal(t) and not frontier.less_equal(t), (t, prev, frontier)
                assert r != 0
            reported += ups
            prev = frontier
            # everything not beyond the frontier is out, and it is exactly the history
            assert sorted(reported, key=repr) == sorted(history.expected(frontier), key=repr)
    return reported, prev


def check_chaos(history: History, data: st.DataObject, make=CdcReader) -> None:
    messages = history.write(data.draw(st.integers(1, 5), label="batch size"))
    if data.draw(st.booleans(), label="active-active"):
        # a second writer of the same history, batching updates and progress differently
        groups = data.draw(st.lists(st.integers(1, 3), max_size=4), label="groups")
        messages = messages + history.write(data.draw(st.integers(1, 5)), groups)
    mangled = mangle(messages, data)
    reader = make(audit=data.draw(st.sampled_from([False, False, True]), label="audit"))
    reported, frontier = feed_checked(reader, mangled, history)
    expected = history.expected()
    assert len(reported) == len(expected)  # each (data, time) reported once
    assert consolidate(reported) == expected
    if messages:
        assert frontier == history.final()
        assert reader.frontier == history.final()
    if history.closed:
        assert frontier == Antichain()
    assert reader.pending_updates() == 0
    assert reader.queued_progress() == [] or not history.closed
    assert reader.missing() == {}


@READERS
@settings(max_examples=1200)
@given(int_histories(), st.data())
def test_chaos_int_times(make, history, data):
    check_chaos(history, data, make)


@READERS
@settings(max_examples=850)
@given(product_histories(), st.data())
def test_chaos_product_times(make, history, data):
    check_chaos(history, data, make)


# -- a missing message stalls the frontier ------------------------------------------------------


def check_missing_updates(history: History, data: st.DataObject, make=CdcReader) -> None:
    messages = history.write(data.draw(st.integers(1, 4), label="batch size"))
    positions = [i for i, m in enumerate(messages) if isinstance(m, Updates)]
    assume(positions)
    drop = data.draw(st.sampled_from(positions), label="dropped")
    dropped = messages[drop].updates
    kept = messages[:drop] + messages[drop + 1 :]
    reader = make()
    reported, frontier = feed_checked(reader, mangle(kept, data), history)
    assert frontier != Antichain() and frontier != history.final()
    assert consolidate(reported) == history.expected(frontier)
    for _, t, _ in dropped:
        assert frontier.less_equal(t)  # the frontier never passes a time with a missing update
    missing = reader.missing()
    assert missing and all(announced > received for announced, received in missing.values())
    assert any(any(m <= t for m in missing) for _, t, _ in dropped)


@READERS
@settings(max_examples=150)
@given(int_histories().filter(lambda h: h.closed), st.data())
def test_missing_updates_stall_the_frontier_int(make, history, data):
    check_missing_updates(history, data, make)


@READERS
@settings(max_examples=150)
@given(product_histories().filter(lambda h: h.closed), st.data())
def test_missing_updates_stall_the_frontier_product(make, history, data):
    check_missing_updates(history, data, make)


def check_missing_progress(history: History, data: st.DataObject, make=CdcReader) -> None:
    messages = history.write(data.draw(st.integers(1, 4), label="batch size"))
    positions = [i for i, m in enumerate(messages) if isinstance(m, Progress)]
    assume(positions)
    drop = data.draw(st.sampled_from(positions), label="dropped")
    lower = messages[drop].lower
    kept = messages[:drop] + messages[drop + 1 :]
    reader = make()
    reported, frontier = feed_checked(reader, mangle(kept, data), history)
    assert frontier == lower
    assert consolidate(reported) == history.expected(lower)


@READERS
@settings(max_examples=150)
@given(int_histories(), st.data())
def test_missing_progress_stalls_the_frontier_int(make, history, data):
    check_missing_progress(history, data, make)


@READERS
@settings(max_examples=150)
@given(product_histories(), st.data())
def test_missing_progress_stalls_the_frontier_product(make, history, data):
    check_missing_progress(history, data, make)


# -- conflicts ----------------------------------------------------------------------------------


def time_pattern(t: Time) -> str:
    return re.escape(f"time {time_to_json(t)}")


def assert_conflict_in_every_order(messages: Sequence[Message], t: Time) -> None:
    for order in itertools.permutations(messages):
        for make in (CdcReader, ColumnarReader):
            check_conflict(make(), order, t)


def check_conflict(reader: CdcReader, order: Sequence[Message], t: Time) -> None:
    with pytest.raises(CdcConflict, match=time_pattern(t)):
        for m in order:
            reader.feed(m)


# A blocker: time 1 is announced with one update that never comes, so nothing after it is ever
# reported and a conflict at a later time stays detectable in every order.
INT_BLOCKED = Progress(A([0]), A([2]), ((1, 1),))
P_BLOCKED = Progress(A([P([0, 0])]), A([P([2, 0]), P([0, 2])]), ((P([1, 1]), 1),))


@pytest.mark.parametrize(
    ("messages", "t"),
    [
        ([Updates((("a", 3, 1),)), Updates((("a", 3, 2),))], 3),
        ([Updates((("a", 3, 1), ("a", 3, -1)))], 3),
        ([Progress(A([0]), A([5]), ((3, 2),)), Updates((("a", 3, 1),)),
          Updates((("a", 3, 2),))], 3),
        ([Updates((("a", P([1, 2]), 1),)), Updates((("a", P([1, 2]), -1),))], P([1, 2])),
    ],
)  # fmt: skip
def test_two_diffs_for_one_data_and_time(messages, t):
    assert_conflict_in_every_order(messages, t)


@pytest.mark.parametrize(
    ("messages", "t"),
    [
        # a different non-zero count
        ([Progress(A([0]), A([10]), ((5, 2),)), Progress(A([3]), A([8]), ((5, 1),))], 5),
        ([Progress(A([0]), A([5]), ()), Progress(A([5]), A([10]), ((5, 2),)),
          Progress(A([3]), A([8]), ((5, 1),))], 5),
        ([Progress(A([0]), A([10]), ((5, 2), (7, 1))),
          Progress(A([0]), A([10]), ((7, 1), (5, 3)))], 5),
        # zero by omission
        ([Progress(A([0]), A([10]), ((5, 2),)), Progress(A([3]), A([8]), ())], 5),
        ([Progress(A([0]), A([10]), ((8, 1), (5, 2))), Progress(A([3]), A([6]), ((3, 1),))], 5),
        ([Progress(A([0]), A([10]), ((9, 1), (5, 2), (2, 1))), Progress(A([4]), A([6]), ())], 5),
        ([Progress(A([0]), A([4]), ((1, 1),)), Progress(A([4]), A([10]), ((9, 1), (5, 2))),
          Progress(A([2]), A([7]), ())], 5),
        # products
        ([Progress(A([P([0, 0])]), A(), ((P([1, 2]), 2),)),
          Progress(A([P([0, 0])]), A([P([3, 3])]), ((P([1, 2]), 1),))], P([1, 2])),
        ([Progress(A([P([0, 0])]), A(), ((P([1, 2]), 2),)),
          Progress(A([P([0, 1])]), A([P([2, 3])]), ())], P([1, 2])),
        ([Progress(A([P([0, 0])]), A([P([2, 0]), P([0, 3])]), ((P([0, 2]), 1),)),
          Progress(A([P([2, 0]), P([0, 3])]), A(), ((P([1, 4]), 1),)),
          Progress(A([P([0, 0])]), A([P([2, 5])]), ((P([0, 2]), 1),))], P([1, 4])),
    ],
)  # fmt: skip
def test_progress_statements_that_disagree(messages, t):
    assert_conflict_in_every_order(messages, t)


@pytest.mark.parametrize(
    ("messages", "t"),
    [
        ([Progress(A([0]), A([10]), ((1, 1), (5, 1))), Updates((("a", 5, 1),)),
          Updates((("b", 5, 1),))], 5),
        ([INT_BLOCKED, Progress(A([2]), A(), ((5, 1),)), Updates((("a", 5, 1), ("b", 5, 1)))], 5),
        ([P_BLOCKED, Progress(A([P([2, 0]), P([0, 2])]), A(), ((P([3, 3]), 1),)),
          Updates((("a", P([3, 3]), 1),)), Updates((("b", P([3, 3]), 1),))], P([3, 3])),
    ],
)  # fmt: skip
def test_more_distinct_updates_than_the_count(messages, t):
    assert_conflict_in_every_order(messages, t)


@pytest.mark.parametrize(
    ("messages", "t"),
    [
        ([Progress(A([0]), A([10]), ((1, 1),)), Updates((("a", 5, 1),))], 5),
        ([INT_BLOCKED, Progress(A([2]), A([9]), ((3, 1),)), Updates((("a", 5, 1),))], 5),
        ([INT_BLOCKED, Progress(A([2]), A(), ()), Updates((("a", 5, 1), ("b", 5, 1)))], 5),
        ([P_BLOCKED, Progress(A([P([2, 0]), P([0, 2])]), A(), ((P([3, 3]), 1),)),
          Updates((("a", P([2, 4]), 1),))], P([2, 4])),
    ],
)  # fmt: skip
def test_updates_at_a_time_counted_zero(messages, t):
    assert_conflict_in_every_order(messages, t)


@READERS
def test_conflicts_after_the_time_is_reported_are_not_seen(make):
    """Once a time is reported the reader forgets it (bounded memory): later statements about
    it are dropped, not checked."""
    reader = make()
    assert reader.feed(Progress(A([0]), A([5]), ((3, 1),))) == [([], A([3]))]
    assert reader.feed(Updates((("a", 3, 1),))) == [([("a", 3, 1)], A([5]))]
    assert reader.feed(Updates((("a", 3, 2), ("b", 3, 1)))) == []
    assert reader.feed(Progress(A([0]), A([5]), ((3, 7),))) == []
    assert reader.pending_updates() == 0


# Conflicts injected into random histories: one update at a time ``t0`` is held back so the
# frontier never passes ``t0``; the conflict is at ``t0`` or beyond it, so it stays detectable.

CONFLICTS = ["diff", "count", "omitted", "zero-said-nonzero", "extra", "zero-has-update"]


def shift(t: Time, k: int) -> Time:
    return t + k if isinstance(t, int) else P([t[0] + k, t[1]])


def inject_conflict(history: History, kind: str, data: st.DataObject, block: bool = True):
    """Messages of the history with one contradiction added, and the time it is about.

    With ``block`` one update at ``t0`` is held back; without, ``t0`` is just where the
    contradiction is placed (at or after it), and it may be reported before it arrives.
    """
    messages = history.write(data.draw(st.integers(1, 4), label="batch size"))
    progress = [m for m in messages if isinstance(m, Progress)]
    counts = {t: c for p in progress for t, c in p.counts}
    assume(counts)
    t0 = data.draw(st.sampled_from(sorted(counts, key=repr)), label="blocked time")
    if block:
        at_t0 = [u for m in messages if isinstance(m, Updates) for u in m.updates if u[1] == t0]
        held = data.draw(st.sampled_from(at_t0), label="held back")
        messages = [
            Updates(tuple(u for u in m.updates if u != held)) if isinstance(m, Updates) else m
            for m in messages
        ]
    updates = [u for m in messages if isinstance(m, Updates) for u in m.updates]
    after = [u for u in updates if t0 <= u[1]]
    zero = next(shift(t0, k) for k in itertools.count(1) if shift(t0, k) not in counts)

    def statement_of(t: Time) -> Progress:
        return next(p for p in progress if p.lower.contains_interval(t, p.upper))

    def altered(t: Time, c: int) -> Progress:
        p = statement_of(t)
        rest = tuple((u, n) for u, n in p.counts if u != t)
        return Progress(p.lower, p.upper, rest + (((t, c),) if c else ()))

    if kind == "diff":
        assume(after)
        d, t, r = data.draw(st.sampled_from(after), label="conflicting update")
        extra: list[Message] = [Updates(((d, t, -r),))]
    elif kind == "count":
        # a lower count at t0 itself would let t0 complete without the held-back update
        t = data.draw(st.sampled_from([u for u in counts if t0 <= u]), label="time")
        deltas = [1, 2] + ([-1] if (t != t0 or not block) and counts[t] > 1 else [])
        extra = [altered(t, counts[t] + data.draw(st.sampled_from(deltas)))]
    elif kind == "omitted":
        # likewise a zero at t0: arriving before any update there, it would complete t0
        ts = [u for u in counts if t0 <= u and (u != t0 or not block)]
        assume(ts)
        t = data.draw(st.sampled_from(ts), label="time")
        extra = [altered(t, 0)]
    elif kind == "zero-said-nonzero":
        t = zero
        extra = [altered(t, data.draw(st.integers(1, 3)))]
    elif kind == "extra":
        later = [u for u in counts if t0 <= u and (u != t0 or not block)]
        assume(later)
        t = data.draw(st.sampled_from(later), label="time")
        extra = [Updates((("z", t, 1),))]
    else:
        t = zero
        extra = [Updates((("z", t, 1),))]
    return messages + extra, t


@READERS
@pytest.mark.parametrize("conflict", CONFLICTS)
@settings(max_examples=60)
@given(
    st.one_of(int_histories(), product_histories()).filter(lambda h: h.closed),
    st.data(),
)
def test_injected_conflicts_are_caught_in_any_order(make, conflict, history, data):
    messages, t = inject_conflict(history, conflict, data)
    reader = make()
    with pytest.raises(CdcConflict, match=time_pattern(t)):
        for m in mangle(messages, data):
            reader.feed(m)


@READERS
@pytest.mark.parametrize("conflict", CONFLICTS)
@settings(max_examples=40)
@given(
    st.one_of(int_histories(), product_histories()).filter(lambda h: h.closed),
    st.data(),
)
def test_audit_catches_injected_conflicts_even_after_reporting(make, conflict, history, data):
    messages, t = inject_conflict(history, conflict, data, block=False)
    reader = make(audit=True)
    with pytest.raises(CdcConflict, match=time_pattern(t)):
        for m in mangle(messages, data):
            reader.feed(m)


@READERS
def test_audit_checks_statements_about_reported_times(make):
    def fed(*messages: Message) -> CdcReader:
        reader = make(audit=True)
        for m in messages:
            reader.feed(m)
        return reader

    done = (Progress(A([0]), A([5]), ((3, 1),)), Updates((("a", 3, 1),)))
    assert fed(*done).frontier == A([5])
    fed(*done, Updates((("a", 3, 1),)), Progress(A([2]), A([4]), ((3, 1),)))  # agreeing: fine
    with pytest.raises(CdcConflict, match="time 3"):
        fed(*done, Updates((("a", 3, 2),)))
    with pytest.raises(CdcConflict, match="time 3"):
        fed(*done, Updates((("b", 3, 1),)))
    with pytest.raises(CdcConflict, match="time 3"):
        fed(*done, Progress(A([2]), A([4]), ((3, 2),)))
    with pytest.raises(CdcConflict, match="time 3"):
        fed(*done, Progress(A([3]), A([6]), ()))
    with pytest.raises(CdcConflict, match="time 1"):
        fed(*done, Progress(A([0]), A([2]), ((1, 1),)))
    with pytest.raises(CdcConflict, match="time 1"):
        fed(*done, Updates((("a", 1, 1),)))


# -- malformed input ----------------------------------------------------------------------------


def test_malformed_messages():
    with pytest.raises(ProtocolViolation, match="diff 0"):
        CdcReader().feed(Updates((("a", 1, 0),)))
    with pytest.raises(ProtocolViolation, match="diff 1.5"):
        CdcReader().feed(Updates((("a", 1, 1.5),)))
    with pytest.raises(ProtocolViolation, match="not a CDC v2 message"):
        CdcReader().feed(("a", 1, 1))  # type: ignore[arg-type]
    reader = CdcReader()
    reader.feed(Updates((("a", 1, 1),)))
    with pytest.raises(InvalidTime):
        reader.feed(Updates((("a", P([1, 1]), 1),)))
    with pytest.raises(InvalidTime):
        reader.feed(Progress(A([0]), A([5]), ((P([1, 1]), 1),)))
    with pytest.raises(InvalidTime):
        reader.feed(Progress(A([P([0, 0])]), A([P([5, 5])]), ()))
    with pytest.raises(InvalidTime):
        reader.feed(Progress(A([0]), A([P([5, 5])]), ()))
    reader = CdcReader()
    reader.feed(Updates((("a", P([1, 1]), 1),)))
    with pytest.raises(InvalidTime):
        reader.feed(Updates((("a", P([1, 1, 1]), 1),)))
    with pytest.raises(InvalidTime):
        reader.feed(Updates((("a", 3, 1),)))


def many(*extra: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """100 valid counts at times 10..109 (enough for the checks with numpy), then ``extra``."""
    return (*((t, 1) for t in range(10, 110)), *extra)


@pytest.mark.parametrize(
    ("statement", "match"),
    [
        (Progress(A([10]), A([110]), many()), None),
        (Progress(A([10]), A(), many((1 << 40, 0))), None),
        (Progress(A([10]), A([200]), many((50, 2))), "lists time 50 twice"),
        (Progress(A([10]), A([200]), many((150, -1))), "count -1 at time 150 is negative"),
        (Progress(A([10]), A([110]), many((110, 1))), "counts time 110, which lies outside"),
        (Progress(A([11]), A([110]), many()), "counts time 10, which lies outside"),
        (Progress(A([10]), A([200]), many((P([1, 2]), 1))), "lattices"),
    ],
)
def test_long_progress_statements_are_validated_alike(statement, match):
    """Statements of many int counts, checked with numpy, and errors naming the first wrong
    entry as the entry by entry checks do."""
    if match is None:
        assert statement.validate() is statement
    else:
        with pytest.raises((ProtocolViolation, InvalidTime), match=match):
            statement.validate()


@pytest.mark.parametrize(
    ("statement", "match"),
    [
        (Progress(A([5]), A([3]), ()), "beyond upper"),
        (Progress(A([0]), A(), ()), None),
        (Progress(A([0]), A([5]), ((1, 1), (1, 2))), "twice"),
        (Progress(A([0]), A([5]), ((1, -1),)), "negative"),
        (Progress(A([0]), A([5]), ((5, 1),)), "outside"),
        (Progress(A([2]), A([5]), ((1, 1),)), "outside"),
        (Progress(A([P([1, 0])]), A([P([2, 2])]), ((P([0, 1]), 1),)), "outside"),
        (Progress(A([P([1, 0]), P([0, 1])]), A([P([0, 0])]), ()), "beyond upper"),
    ],
)
def test_progress_validation(statement, match):
    if match is None:
        assert statement.validate() is statement
    else:
        with pytest.raises(ProtocolViolation, match=match):
            statement.validate()
        with pytest.raises(ProtocolViolation, match=match):
            CdcReader().feed(statement)


# -- the writer ---------------------------------------------------------------------------------


def test_writer_output():
    writer = CdcWriter(batch_size=2)
    assert writer.frontier is None
    out = writer.write([("b", 0, 1), ("a", 0, 1), ("a", 0, 1), ("c", 3, 1), ("d", 1, 1)], A([2]))
    assert out == [
        Updates((("a", 0, 2), ("b", 0, 1))),
        Updates((("d", 1, 1),)),
        Progress(A([0]), A([2]), ((0, 2), (1, 1))),
    ]
    assert writer.write([("c", 3, -1)], A([2])) == []
    assert writer.write([], A([5])) == [Progress(A([2]), A([5]), ())]  # 3 cancelled out
    assert writer.close() == [Progress(A([5]), A(), ())]
    assert writer.frontier == A()


def test_writer_errors():
    with pytest.raises(InvalidInput, match="batch size"):
        CdcWriter(batch_size=0)
    writer = CdcWriter()
    writer.write([("a", 3, 1)], A([5]))
    with pytest.raises(FrontierViolation, match="time 4"):
        writer.write([("a", 4, 1)], A([6]))
    with pytest.raises(FrontierViolation, match="go back"):
        writer.write([], A([4]))
    with pytest.raises(InvalidTime):
        writer.write([("a", -1, 1)], A([6]))


def test_writer_of_an_empty_stream():
    assert CdcWriter().close() == [Progress(A([0]), A(), ())]
    assert CdcWriter(minimum=P([0, 0])).close() == [Progress(A([P([0, 0])]), A(), ())]
    assert write_history([]) == [Progress(A([0]), A(), ())]
    assert CdcWriter().write([], A()) == []
    assert CdcWriter().write([], A([3])) == [Progress(A([0]), A([3]), ())]
    assert list(decode(write_history([]))) == [([], A())]


@settings(max_examples=200)
@given(st.one_of(int_histories(), product_histories()), st.integers(1, 5), st.integers(1, 5))
def test_writer_output_is_well_formed_and_independent_of_batch_size(history, b1, b2):
    m1, m2 = history.write(b1), history.write(b2)
    progress = [m for m in m1 if isinstance(m, Progress)]
    assert progress == [m for m in m2 if isinstance(m, Progress)]
    u1 = [u for m in m1 if isinstance(m, Updates) for u in m.updates]
    u2 = [u for m in m2 if isinstance(m, Updates) for u in m.updates]
    assert u1 == u2  # the same updates in the same order, however they are batched
    assert sorted(u1, key=repr) == sorted(history.expected(), key=repr)  # consolidated
    assert all(len(m.updates) <= b1 for m in m1 if isinstance(m, Updates))
    # the statements tile time from the minimum to the final frontier, and count exactly
    lower = A([history.minimum])
    for p in progress:
        assert p.validate().lower == lower
        lower = p.upper
        assert dict(p.counts) == {
            t: sum(1 for u in u1 if u[1] == t)
            for t in {u[1] for u in u1 if p.lower.contains_interval(u[1], p.upper)}
        }
    assert lower == history.final() or not progress
    # the in-order stream decodes to exactly the history
    batches = list(decode(m1))
    assert consolidate(u for ups, _ in batches for u in ups) == history.expected()
    assert [f for _, f in batches] == [p.upper for p in progress if p.upper != p.lower]


# -- memory -------------------------------------------------------------------------------------


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
