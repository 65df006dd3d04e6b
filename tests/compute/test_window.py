"""Window functions: the frame shortcuts (prefix sums, running values, bisected RANGE bounds)
agree with visiting every frame, on random partitions and frames."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from plans import R, window_function  # noqa: E402

from changeflow.compute import plan as P  # noqa: E402
from changeflow.compute import window as W  # noqa: E402

value = st.one_of(st.none(), st.integers(-4, 4))


@st.composite
def cases(draw: st.DrawFn) -> tuple[W.Window, dict]:
    order = tuple(
        P.Order(c, draw(st.booleans()), draw(st.sampled_from([None, True, False])))
        for c in draw(st.lists(st.sampled_from([0, 1]), max_size=2))
    )
    funcs = []
    for _ in range(draw(st.integers(1, 3))):
        f = window_function(draw, R.schema, bool(order))
        offsets = "offset" in (f.frame.start.kind, f.frame.end.kind)
        if f.frame.mode == "range" and offsets and len(order) != 1:
            f = W.WindowFunc(f.func, f.args, W.Frame("rows", f.frame.start, f.frame.end))
        funcs.append(f)
    window = W.Window(R, (), order, tuple(funcs))
    rows = draw(st.dictionaries(st.tuples(value, value), st.integers(1, 3), max_size=12))
    return window, rows


@settings(max_examples=300)
@given(case=cases())
def test_frame_shortcuts_agree_with_visiting_every_frame(case) -> None:
    window, rows = case
    try:
        plain = sorted(map(repr, W.partition_output(window, rows, fast=False)))
    except Exception as e:  # noqa: BLE001 - the same error either way
        try:
            W.partition_output(window, rows)
        except Exception as f:  # noqa: BLE001
            assert type(f) is type(e)
            return
        raise AssertionError(f"only the plain path failed: {e}") from None
    assert sorted(map(repr, W.partition_output(window, rows))) == plain
