"""Dataflows over shards: exact at every time, across restarts and replicas; bad plans refused."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.compute import plan as P
from changeflow.compute.dataflow import drop_view, maintain_view
from changeflow.compute.evaluate import evaluate
from changeflow.compute.expr import Arith, Col
from changeflow.compute.types import INT4, INT8, Column
from changeflow.errors import PlanError
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).parent))
from plans import histories, plans  # noqa: E402

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.int32())])
TIMES = 6


def open_storage(root: Path) -> Storage:
    return Storage(open_consensus(f"sqlite:{root / 'consensus.sqlite'}"), Blob(str(root / "blob")))


def new_jobs(spark: SparkSession) -> Callable[[], int]:
    """A count of the Spark jobs started after this call. Jobs are told apart by their rising
    ids: the status tracker forgets the oldest past ``spark.ui.retainedJobs``."""
    tracker = spark.sparkContext.statusTracker()
    since = max(tracker.getJobIdsForGroup(), default=-1)
    return lambda: sum(1 for j in tracker.getJobIdsForGroup() if j > since)


def load_inputs(storage: Storage, history: dict[str, list], cuts: list[int]) -> dict[str, tuple]:
    """Create ``r`` and ``s`` and append ``history`` in appends ending at ``cuts``."""
    caps = {}
    for name in ("r", "s"):
        read, write = storage.create(name, SCHEMA)
        caps[name] = (read, write)
    return caps


def append_until(
    storage: Storage, caps: dict, history: dict[str, list], lower: int, upper: int
) -> None:
    for name, (_, write) in caps.items():
        batch = [u for u in history[name] if lower <= u[1] < upper]
        storage.append(write, batch, upper)


def check_every_time(
    storage: Storage, plan: P.Plan, history: dict[str, list], output: str, upper: int
) -> None:
    inputs = {}
    for name, updates in history.items():
        inputs[name] = PTVC.empty(name=name)
        inputs[name].append(updates, Antichain([TIMES]))
    read, write = storage.acquire_capabilities(output)
    try:
        for t in range(upper):
            got = storage.snapshot_table(read, t)
            data = [c for c in got.column_names if not c.startswith("_")]
            rows = {}
            for row, count in zip(
                zip(*(got.column(c).to_pylist() for c in data), strict=True),
                got.column("_diff").to_pylist(),
                strict=True,
            ):
                rows[tuple(row)] = count
            expected = evaluate(plan, {n: inputs[n].read(t) for n in inputs}, t)
            assert rows == {k: v for k, v in expected.items()}, f"time {t}\n{plan.explain()}"
    finally:
        storage.drop(read)
        storage.drop(write)


INT_ONLY = st.sampled_from


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans(2), history=histories(TIMES), cut=st.integers(1, TIMES - 1))
def test_a_view_is_exact_at_every_time_across_a_restart(
    tmp_path_factory, plan, history, cut
) -> None:
    if any(c.type not in (INT4, INT8) for c in plan.schema):
        return  # numeric outputs round to the column's scale; covered elsewhere
    root = tmp_path_factory.mktemp("view")
    storage = open_storage(root)
    caps = load_inputs(storage, history, [])
    append_until(storage, caps, history, 0, cut)
    # a reader that keeps every time of the output readable for the check
    flow = maintain_view(storage, "v", plan, "out")
    checker = storage.register_reader("out", "test:checker", "the test reads every time")
    assert checker.frontier == Antichain([0])
    try:
        flow.run(until=cut)
    except Exception:
        flow.close()
        raise
    flow.close()
    append_until(storage, caps, history, cut, TIMES)
    again = maintain_view(storage, "v", plan, "out")  # a restart: hydrates at the output's since
    again.run(until=TIMES)
    again.close()
    check_every_time(storage, plan, history, "out", TIMES)
    assert storage.state("out").upper == Antichain([TIMES])


def test_two_replicas_write_the_output_exactly_once(tmp_path: Path) -> None:
    r = P.Get("r", (Column("k", INT4), Column("v", INT4)))
    plan = P.Reduce(r, (0,), (P.Aggregate("count"), P.Aggregate("sum", P.col(r.schema, 1))))
    history = {"r": [((i % 3, i), i % TIMES, 1) for i in range(30)], "s": []}
    storage = open_storage(tmp_path)
    caps = load_inputs(storage, history, [])
    maintain_view(storage, "v", plan, "out").close()
    checker = storage.register_reader("out", "test:checker", "the test reads every time")
    assert checker.frontier == Antichain([0])
    one, two = (
        maintain_view(storage, "v", plan, "out"),
        maintain_view(open_storage(tmp_path), "v", plan, "out"),
    )
    for upper in range(1, TIMES + 1):
        append_until(storage, caps, history, upper - 1, upper)
        for flow in (one, two) if upper % 2 else (two, one):
            flow.run(until=upper)
    one.close()
    two.close()
    assert one.sink.stats.appends_won + two.sink.stats.appends_won == TIMES
    check_every_time(storage, plan, history, "out", TIMES)


def test_bad_plans_are_refused_before_anything_is_installed(tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    storage.create("r", SCHEMA)
    wrong = P.Get("r", (Column("k", INT8), Column("v", INT4)))
    with pytest.raises(PlanError, match=r"collection 'r' has columns \(k integer, v integer\)"):
        maintain_view(storage, "v", wrong, "out")
    with pytest.raises(PlanError, match="unknown collection 'nope'"):
        maintain_view(storage, "v", P.Get("nope", wrong.schema), "out")
    assert storage.shards() == ["r"]
    r = P.Get("r", (Column("k", INT4), Column("v", INT4)))
    with pytest.raises(PlanError, match="cannot write to 'r', one of its own inputs"):
        maintain_view(storage, "v", r, "r")


def test_drop_view_releases_its_inputs(tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    storage.create("r", SCHEMA)
    r = P.Get("r", (Column("k", INT4), Column("v", INT4)))
    maintain_view(storage, "v", r, "out").close()
    assert "dataflow:v" in storage.registered_readers("r")
    drop_view(storage, "v", r)
    assert "dataflow:v" not in storage.registered_readers("r")


@pytest.mark.spark
@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans(2), history=histories(TIMES), cut=st.integers(1, TIMES - 1))
def test_a_view_hydrated_on_spark_is_exact_at_every_time(
    spark, tmp_path_factory, plan, history, cut
) -> None:
    if any(c.type not in (INT4, INT8) for c in plan.schema):
        return
    storage = open_storage(tmp_path_factory.mktemp("view"))
    caps = load_inputs(storage, history, [])
    append_until(storage, caps, history, 0, cut)
    maintain_view(storage, "v", plan, "out").close()  # installs the output at since 0
    storage.register_reader("out", "test:checker", "the test reads every time")
    flow = maintain_view(storage, "v", plan, "out", spark=spark)
    append_until(storage, caps, history, cut, TIMES)
    flow.run(until=TIMES)
    flow.close()
    check_every_time(storage, plan, history, "out", TIMES)


def test_a_new_view_over_compacted_inputs_begins_at_their_since(tmp_path: Path) -> None:
    """The output of a new view begins where its inputs can be read (its since and upper there)."""
    r = P.Get("r", (Column("k", INT4), Column("v", INT4)))
    plan = P.Reduce(r, (0,), (P.Aggregate("count"),))
    history = {"r": [((i % 2, i), i, 1) for i in range(TIMES)], "s": []}
    storage = open_storage(tmp_path)
    caps = load_inputs(storage, history, [])
    append_until(storage, caps, history, 0, TIMES)
    for read, _ in caps.values():
        read.downgrade(Antichain([3]))
    flow = maintain_view(storage, "v", plan, "out")
    assert flow.as_of == 3 and storage.state("out").since == Antichain([3])
    flow.run(until=TIMES)
    flow.close()
    read, _ = storage.acquire_capabilities("out")
    got = {
        tuple(row.values())[:2]: row["_diff"] for row in storage.snapshot_table(read, 5).to_pylist()
    }
    assert got == {(0, 3): 1, (1, 3): 1}


def test_a_row_gone_before_the_as_of_is_not_evaluated_when_hydrating(tmp_path: Path) -> None:
    """A new view's first step reads its inputs' updates before its as_of without summing them
    where every diff is positive; a row inserted and deleted before then (whose ``k / v``
    divides by zero) must not reach the operators."""
    r = P.Get("r", (Column("k", INT4), Column("v", INT4)))
    plan = P.Map(r, (("q", Arith("/", Col(0, INT4), Col(1, INT4))),))
    history = {"r": [((1, 0), 0, 1), ((1, 0), 1, -1), ((4, 2), 0, 1), ((4, 2), 1, 1)], "s": []}
    storage = open_storage(tmp_path)
    caps = load_inputs(storage, history, [])
    append_until(storage, caps, history, 0, 3)
    for read, _ in caps.values():
        read.downgrade(Antichain([2]))
    flow = maintain_view(storage, "v", plan, "out")
    flow.run(until=3)
    flow.close()
    read, _ = storage.acquire_capabilities("out")
    assert [(*row.values(),) for row in storage.snapshot_table(read, 2).to_pylist()] == [
        (4, 2, 2, 2, 2)
    ]
