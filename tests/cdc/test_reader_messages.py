"""CDC v2 messages and writer: malformed messages and progress statements refused with a
clear error, and the writer's output (batched, consolidated, tiling time) for any history."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.cdc.formats.jsonl import _count_from_json, message_from_json
from changeflow.cdc.messages import Progress, Updates
from changeflow.cdc.reader import CdcReader, decode
from changeflow.cdc.writer import CdcWriter, write_history
from changeflow.collection import consolidate
from changeflow.errors import (
    FrontierViolation,
    InvalidInput,
    InvalidTime,
    ProtocolViolation,
)
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from reader_histories import (  # noqa: E402
    A,
    P,
    int_histories,
    product_histories,
)

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


_entries = st.one_of(
    st.fixed_dictionaries({"time": st.integers(0, 10), "count": st.integers(0, 3)}),
    st.fixed_dictionaries(
        {
            "time": st.one_of(
                st.integers(-2, 2**63),
                st.booleans(),
                st.lists(st.integers(0, 3), max_size=2),
                st.text(max_size=1),
            ),
            "count": st.one_of(st.integers(-1, 3), st.booleans(), st.floats(0, 1)),
        }
    ),
    st.fixed_dictionaries({"time": st.integers(0, 3)}),
    st.lists(st.integers(0, 3), max_size=2),
    st.text(max_size=2),
    st.none(),
)


@settings(max_examples=300)
@given(counts=st.lists(_entries, max_size=5))
def test_progress_counts_parse_as_entry_by_entry(counts) -> None:
    """A statement's counts, read a list at a time where every entry is an int time with an
    int count, parse (or fail, naming the first bad entry) exactly as read one by one."""

    def outcome(parse):
        try:
            return parse()
        except (InvalidInput, InvalidTime, ProtocolViolation) as error:
            return type(error), str(error)

    def one_by_one():
        parsed = tuple(_count_from_json(c) for c in counts)
        return Progress(Antichain([0]), Antichain([20]), parsed).validate().counts

    statement = {"progress": {"lower": [0], "upper": [20], "counts": counts}}
    assert outcome(lambda: message_from_json(statement).counts) == outcome(one_by_one)
