"""CDC v2 reader: the conflicts it must catch, fixed and injected into random histories, in
any order of the messages, and the audit that catches them after their times are reported."""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from changeflow.cdc.columnar import ColumnarReader
from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.cdc.reader import CdcReader
from changeflow.errors import (
    CdcConflict,
)
from changeflow.time import Time, time_to_json

sys.path.insert(0, str(Path(__file__).parent))
from reader_histories import (  # noqa: E402
    READERS,
    A,
    History,
    P,
    int_histories,
    mangle,
    product_histories,
)

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
