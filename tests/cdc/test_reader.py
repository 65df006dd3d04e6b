"""CDC v2 messages, writer and reader: the chaos property and the conflicts a reader must catch.

The chaos property: write a random history (possibly twice, by writers that batch differently),
then duplicate, reorder and re-batch the messages in any way that keeps their meaning; the
reader recovers exactly the history, never reports a frontier that goes back, and forgets what
it has reported.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from changeflow.cdc.messages import Progress, Updates
from changeflow.cdc.reader import CdcReader
from changeflow.collection import consolidate
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from reader_histories import (  # noqa: E402
    READERS,
    History,
    feed_checked,
    int_histories,
    mangle,
    product_histories,
)


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
