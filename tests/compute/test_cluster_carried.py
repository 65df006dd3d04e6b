"""Array, interval and jsonb values on Spark: carried through joins and linear operators and
counted there (Spark holds intervals and jsonb as structs, arrays as its arrays), arrays made
by array_agg, exact at every time on the cluster tier and through a Spark hydration of the
in-process tier; a plan that compares, groups, orders or aggregates them (PostgreSQL compares
them by meaning, and NULL elements its own way) stays in the process."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.dataflow import process_only
from changeflow.compute.intervals import Interval
from changeflow.compute.jsonb import Jsonb
from changeflow.compute.types import INT4, INTERVAL, JSONB, TEXT, Column, array_of

sys.path.insert(0, str(Path(__file__).parent))
from test_cluster_bytes import TIERS, check_tiers  # noqa: E402

pytestmark = pytest.mark.spark

TIMES = 6
R = P.Get("r", (Column("k", INT4), Column("d", INTERVAL)))
S = P.Get("s", (Column("k", INT4), Column("j", JSONB)))
INTS = array_of(INT4)
A = P.Get("a", (Column("k", INT4), Column("xs", INTS)))
SCHEMAS = {
    "r": pa.schema([("k", pa.int32()), ("d", INTERVAL.arrow)]),
    "s": pa.schema([("k", pa.int32()), ("j", JSONB.arrow)]),
    "a": pa.schema([("k", pa.int32()), ("xs", INTS.arrow)]),
}
XS = [(1, 2), (), (None, 5), (3,)]
D = [Interval(i, -i, i * 1_000_003) for i in range(6)]
J = [Jsonb(t) for t in ('{"a": 1}', "[1, 2.50]", '"x"', "null", '{"b": [true]}')]
HISTORY = {
    "r": [((i % 4, D[i % 6]), i % TIMES, 1) for i in range(16)]
    + [((1, D[1]), 4, -1), ((2, None), 2, 1), ((None, D[5]), 1, 1)],
    "s": [((i % 5, J[i % 5]), i % TIMES, 1) for i in range(12)]
    + [((2, J[2]), 5, -1), ((3, None), 2, 1)],
    "a": [((i % 3, XS[i % 4]), i % TIMES, 1) for i in range(14)]
    + [((1, XS[1]), 3, -1), ((2, None), 2, 1), ((None, XS[0]), 1, 1), ((None, None), 4, 1)],
}
K, XS_NULL = P.col(A.schema, 0), X.IsNull(P.col(A.schema, 1))
AGGREGATED = (  # ties by the value, NULLs first; DISTINCT; a FILTER; no ORDER BY
    P.Aggregate("array_agg", K, order=(P.SortExpr(XS_NULL, True),)),
    P.Aggregate("array_agg", K, distinct=True),
    P.Aggregate("array_agg", K, filter=XS_NULL),
)
D_NULL = X.IsNull(P.col(R.schema, 1))
PLANS = {
    "join": P.Join((R, S), ((0, 2),)),
    "left-join": P.Join((R, S), ((0, 2),), "left"),
    "filter-project": P.Project(P.Filter(R, (D_NULL,)), (1, 0)),
    "count": P.Reduce(S, (0,), (P.Aggregate("count", P.col(S.schema, 1)),)),
    "union": P.Union((P.Project(R, (1,)), P.Negate(P.Project(R, (1,))))),
    "array-join": P.Join((A, R), ((0, 2),)),
    "array-agg": P.Reduce(A, (), AGGREGATED),
    "array-agg-grouped": P.Project(P.Reduce(A, (0,), AGGREGATED[:1]), (1,)),
}


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("tier", TIERS)
def test_carried_views_on_spark_are_exact_at_every_time(
    spark, tmp_path, monkeypatch, name, tier
) -> None:
    check_tiers(spark, tmp_path, monkeypatch, PLANS[name], tier, SCHEMAS, HISTORY)


def test_comparing_grouping_or_aggregating_them_stays_in_the_process() -> None:
    d, j = P.col(R.schema, 1), P.col(S.schema, 1)
    assert process_only(P.Map(R, (("x", d),))) is None  # a column carried as it is
    compared = {
        "compare": P.Filter(R, (X.Cmp("=", d, d),)),
        "cast": P.Map(S, (("t", X.Cast(j, TEXT)),)),
        "group": P.Reduce(R, (1,), (P.Aggregate("count"),)),
        "count-distinct": P.Reduce(R, (0,), (P.Aggregate("count", d, distinct=True),)),
        "distinct": P.Distinct(R),
        "topk": P.TopK(S, (0,), (P.Order(0),), 1, 0),
        "window": W.Window(S, (0,), (P.Order(0),), (W.WindowFunc("row_number"),)),
        "join-on": P.Join((S, S), ((1, 3),)),
        "array-compare": P.Filter(A, (X.Cmp("=", P.col(A.schema, 1), P.col(A.schema, 1)),)),
        "array-group": P.Reduce(A, (1,), (P.Aggregate("count"),)),
        "array-distinct": P.Distinct(A),
        "array-agg-of-jsonb": P.Reduce(S, (), (P.Aggregate("array_agg", P.col(S.schema, 1)),)),
    }
    for what, plan in compared.items():
        assert process_only(plan) is not None, what
