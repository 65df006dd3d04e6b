"""The cluster tier: random plans and histories, hydrated and stepped with their arrangements
on Spark, exact at every time against the reference evaluator (the same check as the
in-process tier's), across a restart; its state lives under the blob root, not in the driver."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.cluster import dataflow as cluster_dataflow
from changeflow.compute.cluster import deltas as D
from changeflow.compute.cluster.spine import Spine
from changeflow.compute.dataflow import maintain_view, update_rows
from changeflow.compute.types import INT4, INT8, TEXT, Column
from changeflow.updates import DIFF, TIME

sys.path.insert(0, str(Path(__file__).parent))
from plans import histories, plans  # noqa: E402
from test_dataflow import (  # noqa: E402
    TIMES,
    append_until,
    check_every_time,
    load_inputs,
    new_jobs,
    open_storage,
)

pytestmark = pytest.mark.spark


def _run(
    spark, root: Path, plan: P.Plan, history: dict, cut: int, at_once: bool = False, **kw
) -> None:
    """Hydrate at ``cut``, then step a time at a time (or, ``at_once``, all in one step); with
    ``on_spark`` every step runs wholly on Spark, else in the driver (the steps are small)."""
    key = "CHANGEFLOW_CLUSTER_STEP_ROWS"
    old = os.environ.get(key)
    os.environ[key] = "0" if kw.get("on_spark") else "1000000"
    try:
        _steps(spark, root, plan, history, cut, at_once)
    finally:
        if old is None:
            del os.environ[key]
        else:
            os.environ[key] = old


def _steps(spark, root: Path, plan: P.Plan, history: dict, cut: int, at_once: bool) -> None:
    storage = open_storage(root)
    caps = load_inputs(storage, history, [])
    append_until(storage, caps, history, 0, cut)
    maintain_view(storage, "v", plan, "out").close()  # installs the output at since 0
    storage.register_reader("out", "test:checker", "the test reads every time")
    flow = maintain_view(storage, "v", plan, "out", spark=spark, cluster=True)
    assert flow.tier == "cluster" and flow.status().tier == "cluster" and not flow.resumed
    written = [k for b in storage.state("out").batches for k in b.keys]
    assert all("/part-" in k for k in written), written  # by the executors, not the driver
    steps = [(cut, TIMES)] if at_once else [(t, t + 1) for t in range(cut, TIMES)]
    for n, (lower, upper) in enumerate(steps):
        if n and n == len(steps) // 2:  # a restart resumes from the checkpoint
            flow.close()
            flow = maintain_view(storage, "v", plan, "out", spark=spark, cluster=True)
            assert flow.resumed  # a late root's changes yet to come are in the checkpoint
        append_until(storage, caps, history, lower, upper)
        flow.run(until=upper)
    flow.close()
    check_every_time(storage, plan, history, "out", TIMES)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    plan=plans(2),
    history=histories(TIMES),
    cut=st.integers(1, TIMES - 1),
    at_once=st.booleans(),
    on_spark=st.booleans(),
)
def test_random_plans_on_the_cluster_tier_are_exact_at_every_time(
    spark, tmp_path_factory, plan, history, cut, at_once, on_spark
) -> None:
    if any(c.type not in (INT4, INT8) for c in plan.schema):
        return  # numeric outputs round to the column's scale; covered elsewhere
    _run(spark, tmp_path_factory.mktemp("view"), plan, history, cut, at_once, on_spark=on_spark)


@st.composite
def totals(draw: st.DrawFn) -> P.Plan:
    """A reduce of running totals (count, sum) over a random plan, grouped or not."""
    child = draw(plans(1, windows=False))
    ints = [i for i, c in enumerate(child.schema) if c.type in (INT4, INT8)]
    key = tuple(draw(st.lists(st.sampled_from(ints), max_size=1)))
    args = [P.col(child.schema, i) for i in ints]
    aggs = [P.Aggregate("count")]
    aggs += [P.Aggregate(draw(st.sampled_from(["sum", "count"])), a) for a in args]
    return P.Reduce(child, key, tuple(aggs))


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    plan=totals(),
    history=histories(TIMES),
    cut=st.integers(1, TIMES - 1),
    at_once=st.booleans(),
    in_driver=st.booleans(),
)
def test_reduces_of_running_totals_are_exact_at_every_time(
    spark, tmp_path_factory, plan, history, cut, at_once, in_driver
) -> None:
    """A small step reads the totals in the driver, or (``in_driver`` false) the touched
    groups' totals from the executors."""
    if any(c.type not in (INT4, INT8) for c in plan.schema):
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cluster_dataflow, "SMALL_TOTALS", 10_000 if in_driver else 0)
        _run(spark, tmp_path_factory.mktemp("view"), plan, history, cut, at_once)


R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
LOW = X.Coalesce((P.col(R.schema, 0), X.lit(0)))
V = P.col(R.schema, 1)
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))
# the group's key (all ties), then the value modulo 3 descending, NULLs first; ties by value
BY_K_AND_V = (P.SortExpr(LOW), P.SortExpr(X.Arith("%", V, X.lit(3)), True, False))


@pytest.mark.parametrize(
    "plan",
    [
        P.Join((R, S), ((0, 2),)),
        P.Join((R, S, R), ((0, 2, 4),)),
        P.Join((R, S), ((0, 2),), "full"),
        P.Reduce(P.Join((R, S), ((0, 2),)), (1,), (P.Aggregate("count"),)),
        P.Reduce(R, (), (P.Aggregate("count"), P.Aggregate("sum", P.col(R.schema, 1)))),
        P.TopK(R, (0,), (P.Order(1, True),), 2, 0),
        P.Threshold(P.Union((R, P.Negate(S)))),
        P.TemporalFilter(R, (LOW,), (X.Arith("+", LOW, X.lit(3)),)),  # a NULL row retired
        W.Window(R, (0,), (P.Order(1),), (W.WindowFunc("rank"), W.WindowFunc("lag", (V,)))),
        W.Window(R, (), (P.Order(1, True),), (W.WindowFunc("sum", (V,)),)),
        P.Reduce(R, (0,), (P.Aggregate("string_agg", X.Cast(V, TEXT), order=BY_K_AND_V),)),
    ],
    ids=[
        *("join", "three-way", "full", "join-reduce", "global-sum", "topk", "except"),
        *("temporal", "window", "global-window", "ordered-string-agg"),
    ],
)
@pytest.mark.parametrize("on_spark", [False, True], ids=["driver-steps", "spark-steps"])
def test_each_stateful_operator_is_exact_at_every_time(spark, tmp_path, plan, on_spark) -> None:
    history = {
        "r": [((i % 4, i % 3), i % TIMES, 1) for i in range(24)]
        + [((i % 4, i % 3), 5, -1) for i in range(0, 12, 5)]
        + [((None, None), 0, 1)],
        "s": [((i % 5, i % 4), i % TIMES, 1) for i in range(15)]
        + [((i % 5, i % 4), 4, -1) for i in range(0, 10, 3)],
    }
    _run(spark, tmp_path, plan, history, 2, on_spark=on_spark)


@pytest.mark.parametrize("small", [10_000, 0], ids=["totals-in-the-driver", "totals-on-spark"])
def test_a_reduce_reads_its_groups_across_every_batch(spark, tmp_path, monkeypatch, small) -> None:
    """Steps that touch one group leave the totals in several batches (a small batch is not
    merged into a large one): the group's totals are summed across them, read by the driver
    while they are few, else probed on Spark."""
    monkeypatch.setattr(cluster_dataflow, "SMALL_TOTALS", small)
    plan = P.Reduce(R, (0,), (P.Aggregate("count"), P.Aggregate("sum", P.col(R.schema, 1))))
    history = {
        "r": [((k, v), 0, 1) for k in range(8) for v in range(3)]
        + [((1, 10 + t), t, 1) for t in range(1, TIMES)],
        "s": [],
    }
    _run(spark, tmp_path, plan, history, 1)


def test_a_waiting_spine_is_read_only_when_something_may_be_due(spark, tmp_path) -> None:
    storage = open_storage(tmp_path)
    spine = Spine(spark, storage.machine.blob, "waiting", 1, timed=True)
    spine.add(pa.table({"c0": [1, 2, 3], TIME: [5, 7, 9], DIFF: [1, 1, 1]}))
    assert update_rows(spine.take_due(6)) == [((1,), 5, 1)] and spine.not_before == 7
    jobs = new_jobs(spark)
    assert spine.take_due(7) is None and jobs() == 0  # nothing can be due: no job
    assert sorted(update_rows(spine.take_due(8))) == [((1,), 5, 1), ((2,), 7, 1)]
    assert spine.not_before == 9


def test_a_small_batch_merges_with_a_spark_batch_in_the_driver(spark, tmp_path) -> None:
    """A step's small batch and the hydration's batch before it merge in the driver, with no
    Spark job, keeping Spark's types (a timestamp Spark wrote as INT96 stays a timestamp) and
    cancelling what the step retracts."""
    storage = open_storage(tmp_path)
    spine = Spine(spark, storage.machine.blob, "merged", 3, timed=False)
    at = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    rows = [(1, at, Decimal("1.50"), 1), (2, at, Decimal("2.25"), 1)]
    hydrated = spark.createDataFrame(rows, "c0 bigint, c1 timestamp, c2 decimal(12,2), _diff long")
    spine.add(hydrated)
    (written,) = spine.batches
    assert not written.local
    step = pa.table(
        {
            "c0": pa.array([2, 3], pa.int64()),
            "c1": pa.array([at, at], pa.timestamp("us", tz="UTC")),
            "c2": pa.array([Decimal("2.25"), Decimal("3.00")], pa.decimal128(12, 2)),
            DIFF: pa.array([-1, 1], pa.int64()),
        }
    )
    jobs = new_jobs(spark)
    spine.add(step)
    assert jobs() == 0 and len(spine.batches) == 1 and spine.batches[0].local
    held = spine.frame()
    assert held is not None
    assert dict(held.dtypes) == {
        "c0": "bigint",
        "c1": "timestamp",
        "c2": "decimal(12,2)",
        DIFF: "bigint",
    }
    got = sorted((r.c0, r.c1.astimezone(UTC), r.c2, r[DIFF]) for r in held.collect())
    assert got == [(1, at, Decimal("1.50"), 1), (3, at, Decimal("3.00"), 1)]


STATIC_R = [((k, v), 0, 1) for k in range(5) for v in range(4)]
MOVING_S = [((t % 5, t % 4), t, 1) for t in range(TIMES)] + [((0, 0), 3, -1)]
MOVING_R = STATIC_R + [((t % 5, 10 + t), t, 1) for t in range(1, TIMES)] + [((1, 2), 4, -1)]


@pytest.mark.parametrize(
    ("plan", "r"),
    [
        (P.Join((R, S, R), ((0, 2), (3, 5))), STATIC_R),  # r.k = s.k and s.w = r'.v
        (P.TopK(R, (0,), (P.Order(1, True),), 2, 0), MOVING_R),
        (P.Join((R, S), ((0, 2),), "full"), MOVING_R),
        (P.Threshold(P.Union((R, P.Negate(S)))), MOVING_R),
        (W.Window(R, (0,), (P.Order(1),), (W.WindowFunc("rank"),)), MOVING_R),
        (P.Reduce(R, (0,), (P.Aggregate("count", V, distinct=True),)), MOVING_R),
    ],
    ids=["three-way-join", "topk", "full-join", "except", "window", "count-distinct"],
)
def test_a_small_step_is_one_spark_job_moving_only_the_change(spark, tmp_path, plan, r) -> None:
    """Arrangements are hash-partitioned by the columns their probes use, so a small step's
    change (a keyed operator's versions, made in the driver) is hashed to them: no
    arrangement is shuffled, nothing is broadcast, one job a step (and, at the first, one
    for each batch of hydration indexed by its key)."""
    history = {"r": r, "s": MOVING_S}
    storage = open_storage(tmp_path)
    caps = load_inputs(storage, history, [])
    append_until(storage, caps, history, 0, 1)
    maintain_view(storage, "v", plan, "out").close()
    storage.register_reader("out", "test:checker", "the test reads every time")
    flow = maintain_view(storage, "v", plan, "out", spark=spark, cluster=True)
    flow.arranging.wait()  # the jobs writing hydration's arrangements are not a step's
    counts = []
    for t in range(1, TIMES):
        append_until(storage, caps, history, t, t + 1)
        jobs = new_jobs(spark)
        flow.run(until=t + 1)
        counts.append(jobs())
    flow.close()
    indexed = len(plan.inputs())  # at most a batch of hydration an input
    assert 1 <= counts[0] <= 1 + indexed and counts[1:] == [1] * (TIMES - 2), counts
    check_every_time(storage, plan, history, "out", TIMES)


def test_a_join_arranges_each_input_by_its_probe_in_the_last_inputs_term() -> None:
    assert D.arrangement_keys(P.Join((R, S, R), ((0, 2), (3, 5)))) == [(0,), (1,), (1,)]


def test_a_small_spine_read_by_the_driver_reads_each_batch_once(spark, tmp_path) -> None:
    storage = open_storage(tmp_path)
    spine = Spine(spark, storage.machine.blob, "totals", 1)
    spine.add(pa.table({"c0": [1, 2, 3], DIFF: [1, 1, 1]}))
    assert spine.table().num_rows == 3
    reads = []
    get = spine.blob.get
    spine.blob.get = lambda key: reads.append(key) or get(key)  # type: ignore[method-assign]
    assert spine.table().num_rows == 3 and reads == []  # kept from the first read
    spine.add(pa.table({"c0": [4], DIFF: [1]}))  # not merged: 3 > 2 * 1
    assert len(spine.batches) == 2 and spine.table().num_rows == 4 and len(reads) == 1
