"""Timelines: the text form round-trips, and mixing timelines is refused with SQLSTATE 0A000."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changeflow.adapter.timelines import (
    EPOCH_MILLISECONDS,
    Timeline,
    check_single,
    check_transaction,
)
from changeflow.errors import InvalidInput, TimelineConflict, from_wire

names = st.text(min_size=1, max_size=20)
timelines = st.one_of(
    st.just(EPOCH_MILLISECONDS),
    names.map(Timeline.external),
    names.map(Timeline.user),
)


def test_text_forms() -> None:
    assert str(Timeline.epoch_milliseconds()) == "EpochMilliseconds"
    assert str(Timeline.external("orders")) == "External(orders)"
    assert str(Timeline.user("shop")) == "User(shop)"
    assert Timeline.parse("User(shop)") == Timeline("User", "shop")
    assert Timeline.parse("EpochMilliseconds").is_epoch
    assert not Timeline.parse("External(orders)").is_epoch


@given(timelines)
def test_parse_reads_back_str(timeline: Timeline) -> None:
    """Any name, parentheses and all, survives the round trip."""
    assert Timeline.parse(str(timeline)) == timeline
    assert Timeline.parse(timeline) is timeline
    assert pickle.loads(pickle.dumps(timeline)) == timeline


@pytest.mark.parametrize(
    "text",
    ["", "epochmilliseconds", "EpochMilliseconds()", "External", "External()", "User(x",
     "Counter(x)", "User (x)", "External(x)y"],
)  # fmt: skip
def test_parse_refuses_what_str_never_gives(text: str) -> None:
    with pytest.raises(InvalidInput, match="cannot read timeline"):
        Timeline.parse(text)


def test_malformed_timelines_are_refused() -> None:
    with pytest.raises(InvalidInput, match="unknown timeline kind"):
        Timeline("Counter", "x")
    with pytest.raises(InvalidInput, match="has no name"):
        Timeline("EpochMilliseconds", "x")
    with pytest.raises(InvalidInput, match="non-empty name"):
        Timeline.user("")
    with pytest.raises(InvalidInput, match="is text"):
        Timeline.parse(3)  # type: ignore[arg-type]


def test_check_single_returns_the_one_timeline() -> None:
    assert check_single([], "SELECT") is None
    assert check_single(["User(shop)", Timeline.user("shop")], "view v") == Timeline.user("shop")
    assert check_single({"EpochMilliseconds"}, "SELECT") == EPOCH_MILLISECONDS


def test_check_single_refuses_two_timelines_naming_them_sorted() -> None:
    with pytest.raises(TimelineConflict) as info:
        found = ["User(shop)", "External(orders)", "EpochMilliseconds", "User(shop)"]
        check_single(found, "view v")
    error = info.value
    assert error.message.startswith("multiple timelines within one dataflow are not supported")
    assert "view v reads EpochMilliseconds, External(orders), User(shop)" in error.message
    assert error.sqlstate == "0A000"
    assert error.timelines == ["EpochMilliseconds", "External(orders)", "User(shop)"]
    back = from_wire(error.to_wire())  # the fields cross a process boundary whole
    assert isinstance(back, TimelineConflict)
    assert (back.message, back.sqlstate, back.timelines) == (
        error.message,
        "0A000",
        error.timelines,
    )


@given(st.lists(timelines, max_size=5))
def test_check_single_accepts_exactly_one_distinct_timeline(found: list[Timeline]) -> None:
    if len(set(found)) <= 1:
        assert check_single(found, "SELECT") == (found[0] if found else None)
    else:
        with pytest.raises(TimelineConflict) as info:
            check_single(map(str, found), "SELECT")
        assert info.value.timelines == sorted({str(t) for t in found})


def test_check_transaction() -> None:
    shop = Timeline.user("shop")
    assert check_transaction(None, None) is None
    assert check_transaction(None, "User(shop)") == shop
    assert check_transaction(shop, None) == shop
    assert check_transaction("User(shop)", shop) == shop
    with pytest.raises(TimelineConflict) as info:
        check_transaction(shop, EPOCH_MILLISECONDS)
    error = info.value
    assert error.message.startswith(
        "Transactions can only reference objects in the same timedomain"
    )
    assert "User(shop)" in error.message and "EpochMilliseconds" in error.message
    assert error.sqlstate == "0A000"
    assert error.timelines == ["User(shop)", "EpochMilliseconds"]
