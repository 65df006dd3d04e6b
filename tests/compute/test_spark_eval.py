"""Plans evaluated in bulk on Spark against the reference evaluator: random plans and histories
at several times, and fixed cases for each operator (expressions: test_spark_expr.py)."""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.evaluate import evaluate
from changeflow.compute.expr import (
    Arith,
    Cast,
    Cmp,
    Col,
    lit,
)
from changeflow.compute.spark_eval import evaluate_spark
from changeflow.compute.spark_expr import spark_type
from changeflow.compute.types import (
    FLOAT8,
    INT4,
    INT8,
    NUMERIC,
    TEXT,
    Column,
    Schema,
)
from changeflow.errors import EvalError, PlanError
from changeflow.spark import spark_errors

sys.path.insert(0, str(Path(__file__).parent))
from plans import INPUTS, histories, plans  # noqa: E402

pytestmark = pytest.mark.spark

Version = dict[tuple, int]


# -- comparing Spark's output with the reference's ----------------------------------------------


def _norm(value: Any) -> Any:
    """A value as compared: numerics exactly at the stored scale, doubles to 12 digits."""
    if isinstance(value, Decimal):
        return value.quantize(Decimal("1e-10"), rounding=ROUND_HALF_UP)
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.12g}")
    return value


def _normalized(version: Version) -> Version:
    out: Version = defaultdict(int)
    for row, count in version.items():
        out[tuple(_norm(v) for v in row)] += count
    return {r: c for r, c in out.items() if c}


def frame(spark: SparkSession, schema: Schema, version: Version) -> DataFrame:
    """A snapshot DataFrame of ``version``: the data columns and ``_diff``."""
    ddl = ", ".join(f"`{c.name}` {spark_type(c.type)}" for c in schema) + ", _diff bigint"
    return spark.createDataFrame([(*row, count) for row, count in version.items()], ddl)


def spark_version(out: DataFrame, width: int) -> Version:
    with spark_errors("test"):
        rows = out.collect()
    found: Version = {}
    for row in rows:
        key = tuple(row)[:width]
        assert key not in found, f"{key} twice: the output is not consolidated"
        assert row[width] != 0
        found[key] = row[width]
    return _normalized(found)


def version_at(updates: list, t: int) -> Version:
    out: Version = defaultdict(int)
    for row, time, diff in updates:
        if time <= t:
            out[row] += diff
    return {r: c for r, c in out.items() if c}


# -- random plans and histories ------------------------------------------------------------------

TIMES = (0, 3, 7)


def _reference(plan: P.Plan, history: dict[str, list]) -> dict[int, Version] | type[EvalError]:
    try:
        return {
            t: _normalized(evaluate(plan, {n: version_at(u, t) for n, u in history.items()}, t))
            for t in TIMES
        }
    except EvalError:
        return EvalError


@pytest.mark.slow
@settings(max_examples=30)
@given(plan=plans(), history=histories())
def test_random_plans_agree_with_the_reference(
    spark: SparkSession, plan: P.Plan, history: dict[str, list]
) -> None:
    expected = _reference(plan, history)
    width = len(plan.schema)
    outs = []
    for t in TIMES:
        inputs = {n: frame(spark, INPUTS[n].schema, version_at(u, t)) for n, u in history.items()}
        outs.append(evaluate_spark(plan, inputs, t).withColumn("_at", F.lit(t)))
    union = outs[0]
    for other in outs[1:]:
        union = union.union(other)
    if expected is EvalError:
        with pytest.raises(EvalError):
            spark_version(union, width + 1)
        return
    with spark_errors("test"):
        rows = union.collect()
    got: dict[int, Version] = {t: {} for t in TIMES}
    for row in rows:
        values = tuple(row)
        got[values[width + 1]][values[:width]] = values[width]
    assert {t: _normalized(v) for t, v in got.items()} == expected, plan.explain()


# -- fixed cases for each operator --------------------------------------------------------------

R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))
R_ROWS: Version = {(1, 10): 2, (1, 20): 1, (2, None): 1, (None, 5): 3}
S_ROWS: Version = {(1, 7): 1, (3, 8): 2, (None, 9): 1}


def _check(spark: SparkSession, plan: P.Plan, now: int = 5) -> Version:
    versions = {"r": R_ROWS, "s": S_ROWS}
    expected = _normalized(evaluate(plan, versions, now))
    inputs = {n: frame(spark, INPUTS[n].schema, v) for n, v in versions.items()}
    got = spark_version(evaluate_spark(plan, inputs, now), len(plan.schema))
    assert got == expected, plan.explain()
    return got


def _k(schema: Schema, i: int) -> Col:
    return P.col(schema, i)


@pytest.mark.parametrize("kind", ["inner", "left", "right", "full"])
def test_joins(spark: SparkSession, kind: str) -> None:
    residual = Cmp("<", _k((*R.schema, *S.schema), 3), lit(9))
    _check(spark, P.Join((R, S), ((0, 2),), kind))
    _check(spark, P.Join((R, S), ((0, 2),), kind, residual))


def test_three_way_join_and_self_join(spark: SparkSession) -> None:
    got = _check(spark, P.Join((R, S, R), ((0, 2, 4),)))
    assert got[(1, 10, 1, 7, 1, 10)] == 4  # counts multiply: 2 * 1 * 2
    _check(spark, P.Join((R, R), ((0, 2), (1, 3))))
    _check(spark, P.Join((R, S)))  # a cross join


def test_reduce_counts_multiplicities(spark: SparkSession) -> None:
    v = _k(R.schema, 1)
    aggs = (
        P.Aggregate("count"),
        P.Aggregate("count", v),
        P.Aggregate("count", v, distinct=True),
        P.Aggregate("sum", v),
        P.Aggregate("sum", v, distinct=True),
        P.Aggregate("min", v),
        P.Aggregate("max", v),
        P.Aggregate("avg", v),
        P.Aggregate("avg", Cast(v, FLOAT8)),
        P.Aggregate("sum", Cast(v, INT8)),
        P.Aggregate("sum", Cast(v, NUMERIC)),
        P.Aggregate("bool_and", Cmp(">", v, lit(10))),
        P.Aggregate("bool_or", Cmp(">", v, lit(10))),
        P.Aggregate("string_agg", Cast(v, TEXT), separator="|"),
        P.Aggregate("string_agg", Cast(v, TEXT), distinct=True),
        P.Aggregate("string_agg", Cast(v, TEXT), order=(P.SortExpr(v, True),)),
        P.Aggregate("string_agg", Cast(v, TEXT), order=(P.SortExpr(v, False, False),)),
        P.Aggregate("string_agg", Cast(v, TEXT), True, order=(P.SortExpr(Cast(v, TEXT)),)),
    )
    got = _check(spark, P.Reduce(R, (0,), aggs))
    row = next(r for r in got if r[0] == 1)
    assert row[1:5] == (3, 3, 2, 40) and row[14] == "10|10|20" and row[16] == "20,10,10"
    assert row[8] == Decimal("13.3333333333")
    _check(spark, P.Reduce(R, (), aggs))
    empty = P.Filter(R, (lit(False),))
    assert _check(spark, P.Reduce(empty, (), (P.Aggregate("count"),))) == {}


def test_distinct_threshold_negate_union(spark: SparkSession) -> None:
    _check(spark, P.Distinct(R))
    minus = P.Union((P.Project(R, (0,)), P.Negate(P.Project(S, (0,)))))
    _check(spark, P.Threshold(minus))
    _check(spark, P.Distinct(minus))
    _check(spark, minus)


@pytest.mark.parametrize(
    ("order", "limit", "offset"),
    [
        ((P.Order(1),), 2, 0),
        ((P.Order(1, desc=True),), 1, 1),
        ((P.Order(1, nulls_last=False),), None, 2),
        ((), 3, 1),
    ],
)
def test_top_k_expands_counts(
    spark: SparkSession, order: tuple[P.Order, ...], limit: int | None, offset: int
) -> None:
    _check(spark, P.TopK(R, (), order, limit, offset))
    _check(spark, P.TopK(R, (0,), order, limit, offset))


def test_negative_counts_are_refused_where_the_reference_refuses_them(
    spark: SparkSession,
) -> None:
    negative = P.Negate(R)
    for plan in (P.Reduce(negative, (), (P.Aggregate("count"),)), P.TopK(negative, (), (), 1)):
        with pytest.raises(EvalError) as caught:
            _check(spark, plan)
        assert caught.value.sqlstate == "XX000"
    assert _check(spark, P.Threshold(negative)) == {}


def test_temporal_filter_constant_map(spark: SparkSession) -> None:
    v = _k(R.schema, 1)
    window = P.TemporalFilter(R, (Arith("-", v, lit(10)),), (Arith("+", v, lit(1)),))
    assert set(_check(spark, window, now=10)) == {(1, 10), (1, 20)}
    assert set(_check(spark, window, now=11)) == {(1, 20)}  # 10 + 1 is 10's upper bound
    rows = (((1, "a", Decimal("1.5")), 2), ((None, None, None), 1))
    schema = (Column("x", INT4), Column("y", TEXT), Column("z", NUMERIC))
    constant = P.Constant(rows, schema)
    _check(spark, P.Map(constant, (("x2", Arith("*", _k(schema, 2), lit(2))),)))


def test_window_functions_run_per_partition_on_the_executors(spark: SparkSession) -> None:
    v = _k(R.schema, 1)
    rows = W.Frame("rows", W.Bound("offset", 1), W.Bound("current"))
    functions = (
        W.WindowFunc("row_number"),
        W.WindowFunc("rank"),
        W.WindowFunc("sum", (v,)),
        W.WindowFunc("lag", (v,)),
        W.WindowFunc("avg", (v,), rows),
        W.WindowFunc("last_value", (v,)),
    )
    for by in ((0,), ()):
        got = _check(spark, W.Window(R, by, (P.Order(1, desc=True),), functions))
        assert sum(got.values()) == sum(R_ROWS.values())  # every input row, once


def test_repeated_names_and_output_types(spark: SparkSession) -> None:
    plan = P.Project(R, (0, 0, 1), names=("k", "k", "v"))
    inputs = {"r": frame(spark, R.schema, R_ROWS)}
    out = evaluate_spark(plan, inputs, 0)
    assert out.columns == ["k", "k", "v", "_diff"]
    assert [f.dataType.simpleString() for f in out.schema] == ["int", "int", "int", "bigint"]
    reduced = P.Reduce(R, (), (P.Aggregate("avg", _k(R.schema, 1)),))
    avg = evaluate_spark(reduced, inputs, 0)
    assert avg.schema[0].dataType.simpleString() == "decimal(38,18)"


def test_bad_inputs_are_refused_before_spark_runs(spark: SparkSession) -> None:
    with pytest.raises(PlanError, match="no input named s"):
        evaluate_spark(S, {"r": frame(spark, R.schema, R_ROWS)}, 0)
    wrong = frame(spark, (Column("k", TEXT), Column("v", INT4)), {("a", 1): 1})
    with pytest.raises(PlanError, match="column 'k' is string; the plan reads it as integer"):
        evaluate_spark(R, {"r": wrong}, 0)
    narrow = frame(spark, (Column("k", INT4),), {(1,): 1})
    with pytest.raises(PlanError, match="the plan reads 2 data columns"):
        evaluate_spark(R, {"r": narrow}, 0)
