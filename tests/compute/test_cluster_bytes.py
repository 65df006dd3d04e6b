"""uuid and bytea values on Spark: carried, joined, grouped, counted and ordered there as
PostgreSQL compares them (bytewise), exact at every time on the cluster tier and through a
Spark hydration of the in-process tier; their casts and functions keep a plan in the process."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from changeflow.collection import PTVC
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.dataflow import maintain_view, process_only
from changeflow.compute.evaluate import evaluate
from changeflow.compute.types import BYTEA, INT4, TEXT, UUID, Column
from changeflow.compute.values import python_values
from changeflow.time import Antichain

sys.path.insert(0, str(Path(__file__).parent))
from test_dataflow import open_storage  # noqa: E402

pytestmark = pytest.mark.spark

TIMES = 6
R = P.Get("r", (Column("k", UUID), Column("v", INT4)))
S = P.Get("s", (Column("k", UUID), Column("w", BYTEA)))
SCHEMAS = {
    "r": pa.schema([("k", pa.binary(16)), ("v", pa.int32())]),
    "s": pa.schema([("k", pa.binary(16)), ("w", pa.binary())]),
}
U = [uuid.UUID(int=(i * 0x9E3779B97F4A7C15) % 2**128) for i in range(5)]
HISTORY = {
    "r": [((U[i % 5], i), i % TIMES, 1) for i in range(20)]
    + [((U[1], 6), 4, -1), ((None, 99), 2, 1), ((U[4], 19), 3, -1)],
    "s": [((U[i % 4], bytes([i, 255 - i])), i % TIMES, 1) for i in range(10)]
    + [((U[2], bytes([2, 253])), 5, -1), ((U[0], b""), 1, 1), ((U[3], None), 2, 1)],
}
PLANS = {
    "join": P.Join((R, S), ((0, 2),)),
    "reduce": P.Reduce(R, (0,), (P.Aggregate("count"), P.Aggregate("sum", P.col(R.schema, 1)))),
    "count-distinct": P.Reduce(S, (1,), (P.Aggregate("count", P.col(S.schema, 0), distinct=True),)),
    "topk-by-uuid": P.TopK(R, (), (P.Order(0, True),), 2, 1),
    "topk-by-bytea": P.TopK(S, (0,), (P.Order(1),), 1, 0),
    "distinct": P.Distinct(P.Project(S, (1,))),
}


def _rows(table: pa.Table) -> dict:
    data = [c for c in table.column_names if not c.startswith("_")]
    rows = zip(*(python_values(table.column(c)) for c in data), strict=True)
    return dict(zip(rows, table.column("_diff").to_pylist(), strict=True))


def check_tiers(
    spark: SparkSession,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    plan: P.Plan,
    tier: str,
    schemas: dict[str, pa.Schema],
    history: dict[str, list],
) -> None:
    """``plan`` over inputs of ``schemas`` with ``history``, hydrated at 2 and stepped a time at
    a time on ``tier``, equals the reference evaluator at every time."""
    steps = "0" if tier == "cluster-spark" else "1000000"
    monkeypatch.setenv("CHANGEFLOW_CLUSTER_STEP_ROWS", steps)
    assert process_only(plan) is None
    storage = open_storage(root)
    caps = {n: storage.create(n, schema) for n, schema in schemas.items()}

    def append(lower: int, upper: int) -> None:
        for n, (_, write) in caps.items():
            storage.append(write, [u for u in history[n] if lower <= u[1] < upper], upper)

    append(0, 2)
    maintain_view(storage, "v", plan, "out").close()
    storage.register_reader("out", "test:checker", "the test reads every time")
    cluster = tier != "process"  # the process tier hydrates on Spark, then steps in rows
    flow = maintain_view(storage, "v", plan, "out", spark=spark, cluster=cluster)
    assert flow.tier == ("cluster" if cluster else "process")
    for t in range(2, TIMES):
        append(t, t + 1)
        flow.run(until=t + 1)
    flow.close()
    inputs = {}
    for n, updates in history.items():
        inputs[n] = PTVC.empty(name=n)
        inputs[n].append(updates, Antichain([TIMES]))
    read, _ = storage.acquire_capabilities("out")
    for t in range(TIMES):
        expected = evaluate(plan, {n: inputs[n].read(t) for n in inputs}, t)
        assert _rows(storage.snapshot_table(read, t)) == expected, f"time {t}"


TIERS = ["cluster-driver", "cluster-spark", "process"]


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("tier", TIERS)
def test_uuid_and_bytea_views_on_spark_are_exact_at_every_time(
    spark, tmp_path, monkeypatch, name, tier
) -> None:
    check_tiers(spark, tmp_path, monkeypatch, PLANS[name], tier, SCHEMAS, HISTORY)


def test_casts_and_functions_of_uuid_and_bytea_stay_in_the_process() -> None:
    k = P.col(S.schema, 0)
    text = P.Map(S, (("t", X.Cast(k, TEXT)),))
    literal = P.Filter(S, (X.Cmp("=", k, X.Lit(U[0], UUID)),))
    joined = P.Join((R, S), ((0, 2),))
    first, other = P.col(joined.schema, 0), P.col(joined.schema, 3)
    compared = P.Filter(joined, (X.Cmp("<", other, other), X.IsNull(first, True)))
    assert process_only(text) is not None and process_only(literal) is not None
    assert process_only(compared) is None
