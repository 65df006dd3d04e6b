"""A global top-k on the cluster tier keeps its input's first rows in the driver: a small step
reads no arrangement, and the head stays exact when it trims, runs short and is read again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.compute import plan as P
from changeflow.compute.cluster import topk
from changeflow.compute.dataflow import maintain_view
from changeflow.compute.types import INT4, Column

sys.path.insert(0, str(Path(__file__).parent))
from plans import histories  # noqa: E402
from test_cluster_tier import _run  # noqa: E402
from test_dataflow import TIMES, append_until, load_inputs, new_jobs, open_storage  # noqa: E402

pytestmark = pytest.mark.spark

R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
TOP = P.TopK(R, (), (P.Order(1, True),), 1, 1)  # the second row by v descending


def _history() -> dict[str, list]:
    """30 rows at hydration; then the head's rows deleted (it runs short), rows inserted in
    front of it (it grows past twice its size and is trimmed) and deleted again."""
    rows = [((i % 4, i), 0, 1) for i in range(30)]
    rows += [((i % 4, i), 2, -1) for i in (29, 28, 27)]
    rows += [((0, 100 + i), 3, 1) for i in range(12)] + [((1, -5), 3, 1), ((1, 26), 3, 1)]
    rows += [((0, 100 + i), 4, -1) for i in range(4, 12)] + [((2, 26), 4, 1)]
    rows += [((0, 100 + i), 5, -1) for i in range(3)] + [((1, 25), 5, -1)]
    return {"r": rows, "s": []}


@pytest.mark.parametrize("head_rows", [4, 1000], ids=["small-head", "whole-input-head"])
def test_a_global_topk_is_exact_through_trims_and_shortfalls(
    spark, tmp_path, monkeypatch, head_rows
) -> None:
    monkeypatch.setattr(topk, "HEAD_ROWS", head_rows)
    _run(spark, tmp_path, TOP, _history(), 1)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    history=histories(TIMES),
    desc=st.booleans(),
    limit=st.integers(1, 2),
    offset=st.integers(0, 1),
    cut=st.integers(1, TIMES - 1),
)
def test_random_histories_through_a_small_head_are_exact(
    spark, tmp_path_factory, history, desc, limit, offset, cut
) -> None:
    plan = P.TopK(R, (), (P.Order(1, desc),), limit, offset)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(topk, "HEAD_ROWS", 4)
        _run(spark, tmp_path_factory.mktemp("view"), plan, history, cut)


def test_a_head_read_short_of_its_window_recomputes(spark, tmp_path) -> None:
    """Read after a restart, the head's last row is clipped and what is left is less than the
    window: the step cannot be told from the head (it kept a row the window had dropped)."""
    n = None
    history = {
        "r": [((n, -2), 0, 1), ((n, n), 0, 1), ((n, n), 1, -1), ((n, n), 2, 1), ((n, n), 2, -1)]
        + [((n, n), 2, 1), ((n, n), 3, 1), ((n, n), 3, 1), ((n, n), 3, 1), ((n, -2), 4, 1)]
        + [((n, n), 4, 1), ((n, n), 4, -1), ((n, -2), 5, -1)],
        "s": [((n, 0), 2, 1), ((n, 0), 4, -1)],
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(topk, "HEAD_ROWS", 4)
        _run(spark, tmp_path, P.TopK(R, (), (P.Order(1),), 2, 0), history, 2)


def test_a_step_beyond_the_head_runs_no_spark_job(spark, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CHANGEFLOW_CLUSTER_STEP_ROWS", "1000000")
    history = {
        "r": [((0, i), 0, 1) for i in range(50)]
        + [((1, -i), t, 1) for t, i in ((1, 1), (2, 2), (3, 3))],
        "s": [],
    }
    storage = open_storage(tmp_path)
    caps = load_inputs(storage, history, [])
    append_until(storage, caps, history, 0, 1)
    maintain_view(storage, "v", TOP, "out").close()
    flow = maintain_view(storage, "v", TOP, "out", spark=spark, cluster=True)
    counts = []
    for t in range(1, 4):
        append_until(storage, caps, history, t, t + 1)
        jobs = new_jobs(spark)
        flow.run(until=t + 1)
        counts.append(jobs())
    flow.close()
    assert counts[1:] == [0, 0], counts  # the first step read the head


def test_a_head_trims_past_twice_its_size_and_tells_when_it_runs_short(monkeypatch) -> None:
    monkeypatch.setattr(topk, "HEAD_ROWS", 4)
    head = topk.Head(TOP)
    out = head.step([((0, v), 1, 1) for v in range(12)], lambda: None)  # an empty input: no job
    assert out == [((0, 10), 1, 1)]  # the second by v descending
    assert head.op is not None and sorted(head.op.groups[()][1]) == [(0, v) for v in (8, 9, 10, 11)]
    assert head.beyond is not None  # 7 and below are not held any more
    moved = head.step([((0, 3), 2, -1), ((0, 100), 2, 1)], lambda: None)  # 3 is beyond: ignored
    assert sorted(moved or []) == [((0, 10), 2, -1), ((0, 11), 2, 1)]
    assert head.step([((0, v), 3, -1) for v in (8, 9, 10, 11)], lambda: None) is None  # short
    assert head.op is None  # read again at the next step
