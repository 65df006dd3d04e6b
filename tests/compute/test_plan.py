"""The plan language's type checks, and the reference evaluator against DuckDB on random data."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate, evaluate_history
from changeflow.compute.expr import Arith, Cmp, Col, MzNow, lit
from changeflow.compute.types import INT4, INT8, TEXT, Column
from changeflow.errors import EvalError, PlanError
from changeflow.time import Antichain

R = P.Get("r", (Column("k", INT4), Column("v", INT4), Column("s", TEXT)))
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))


def test_type_errors_name_the_problem() -> None:
    with pytest.raises(PlanError, match="column #7 does not exist") as e:
        P.Project(R, (7,))
    assert e.value.sqlstate == "42703"
    with pytest.raises(PlanError, match=r"column #2 \(s\) is text, not integer"):
        P.Filter(R, (Cmp("=", Col(2, INT4), lit(1)),))
    with pytest.raises(PlanError, match="argument of WHERE must be type boolean"):
        P.Filter(R, (P.col(R.schema, 0),))
    with pytest.raises(PlanError, match="each UNION query must have the same columns"):
        P.Union((R, S))
    with pytest.raises(PlanError, match="a left outer join takes two inputs"):
        P.Join((R, S, S), kind="left")
    with pytest.raises(PlanError, match=r"function sum\(text\) does not exist"):
        P.Reduce(R, (0,), (P.Aggregate("sum", P.col(R.schema, 2)),))
    with pytest.raises(PlanError, match="mz_now\\(\\) may appear only in a temporal filter"):
        P.Filter(R, (Cmp("<", MzNow(), lit(5)),))
    with pytest.raises(PlanError, match="LIMIT must not be negative"):
        P.TopK(R, limit=-1)


def test_schemas_and_explain() -> None:
    join = P.Join((R, S), ((0, 3),), kind="left")
    assert [c.nullable for c in join.schema] == [True, True, True, True, True]
    agg = P.Reduce(R, (0,), (P.Aggregate("count"), P.Aggregate("sum", P.col(R.schema, 1))))
    assert [(c.name, c.type, c.nullable) for c in agg.schema] == [
        ("k", INT4, True),
        ("count", INT8, False),
        ("sum", INT8, True),
    ]
    assert agg.explain() == (
        "Reduce group_by=[#0] count(*), sum(v)\n  Get r (k integer, v integer, s text)"
    )
    assert join.collections() == {"r", "s"}


def test_reduce_refuses_negative_counts() -> None:
    plan = P.Reduce(R, (0,), (P.Aggregate("count"),))
    with pytest.raises(EvalError, match="negative count"):
        evaluate(plan, {"r": {(1, 1, "a"): -1}}, 0)


def test_temporal_filter_inserts_then_retracts() -> None:
    events = P.Get("e", (Column("id", INT4), Column("ts", INT8)))
    ts = P.col(events.schema, 1)
    window = P.TemporalFilter(events, (ts,), (Arith("+", ts, lit(3)),))
    inputs = {"e": PTVC.empty(name="e")}
    inputs["e"].append([((1, 2), 0, 1), ((2, 4), 1, 1)], Antichain([10]))
    assert evaluate_history(window, inputs, 0, 10) == [
        ((1, 2), 2, 1),
        ((2, 4), 4, 1),
        ((1, 2), 5, -1),
        ((2, 4), 7, -1),
    ]


# -- the reference against DuckDB ------------------------------------------------------------

value = st.one_of(st.none(), st.integers(-3, 3))
r_rows = st.lists(st.tuples(value, value, st.sampled_from(["a", "b", None])), max_size=8)
s_rows = st.lists(st.tuples(value, value), max_size=8)


def _version(rows: list[tuple]) -> dict[tuple, int]:
    return dict(Counter(rows))


_con = duckdb.connect()


def _duck(sql: str, r: list[tuple], s: list[tuple]) -> Counter:
    con = _con
    con.execute("CREATE OR REPLACE TABLE r (k INTEGER, v INTEGER, s VARCHAR)")
    con.execute("CREATE OR REPLACE TABLE s (k INTEGER, w INTEGER)")
    if r:
        con.executemany("INSERT INTO r VALUES (?, ?, ?)", r)
    if s:
        con.executemany("INSERT INTO s VALUES (?, ?)", s)
    return Counter(tuple(_norm(v) for v in row) for row in con.execute(sql).fetchall())


def _norm(v: object) -> object:
    return float(v) if isinstance(v, Decimal) else v


def _ours(plan: P.Plan, r: list[tuple], s: list[tuple]) -> Counter:
    out = evaluate(plan, {"r": _version(r), "s": _version(s)}, 0)
    return Counter({tuple(_norm(v) for v in row): c for row, c in out.items()})


k, v, sk, w = P.col(R.schema, 0), P.col(R.schema, 1), Col(3, INT4, name="s.k"), Col(4, INT4)
CASES = {
    "inner": (
        P.Join((R, S), ((0, 3),), residual=Cmp("<", v, w)),
        "SELECT * FROM r JOIN s ON r.k = s.k AND r.v < s.w",
    ),
    "left": (
        P.Join((R, S), ((0, 3),), "left", Cmp("<", v, w)),
        "SELECT * FROM r LEFT JOIN s ON r.k = s.k AND r.v < s.w",
    ),
    "right": (
        P.Join((R, S), ((0, 3),), "right"),
        "SELECT * FROM r RIGHT JOIN s ON r.k = s.k",
    ),
    "full": (
        P.Join((R, S), ((0, 3),), "full", Cmp("<>", v, w)),
        "SELECT * FROM r FULL JOIN s ON r.k = s.k AND r.v <> s.w",
    ),
    "cross": (P.Join((R, S)), "SELECT * FROM r, s"),
    "three-way": (
        P.Join((R, S, S), ((0, 3, 5),)),
        "SELECT * FROM r, s s1, s s2 WHERE r.k = s1.k AND s1.k = s2.k",
    ),
    "aggregates": (
        P.Reduce(
            R,
            (0,),
            (
                P.Aggregate("count"),
                P.Aggregate("count", v),
                P.Aggregate("sum", v),
                P.Aggregate("min", v),
                P.Aggregate("max", P.col(R.schema, 2)),
                P.Aggregate("avg", v),
                P.Aggregate("count", v, distinct=True),
                P.Aggregate("sum", v, distinct=True),
                P.Aggregate("bool_and", Cmp(">", v, lit(0))),
                P.Aggregate("bool_or", Cmp(">", v, lit(0))),
                P.Aggregate("string_agg", P.col(R.schema, 2), separator="|"),
            ),
        ),
        "SELECT k, count(*), count(v), sum(v), min(v), max(s), avg(v), count(DISTINCT v),"
        " sum(DISTINCT v), bool_and(v > 0), bool_or(v > 0), string_agg(s, '|' ORDER BY s)"
        " FROM r GROUP BY k",
    ),
    "distinct": (P.Distinct(R), "SELECT DISTINCT * FROM r"),
    "except all": (
        P.Threshold(P.Union((P.Project(R, (0, 1)), P.Negate(S)))),
        "SELECT k, v FROM r EXCEPT ALL SELECT * FROM s",
    ),
    "except": (
        P.Threshold(P.Union((P.Distinct(P.Project(R, (0, 1))), P.Negate(P.Distinct(S))))),
        "SELECT k, v FROM r EXCEPT SELECT * FROM s",
    ),
    "intersect all": (
        P.Union(
            (
                P.Project(R, (0, 1)),
                P.Negate(P.Threshold(P.Union((P.Project(R, (0, 1)), P.Negate(S))))),
            )
        ),
        "SELECT k, v FROM r INTERSECT ALL SELECT * FROM s",
    ),
    "top-k": (
        P.Project(
            P.TopK(R, (0,), (P.Order(1, desc=True), P.Order(2)), limit=2, offset=1), (0, 1, 2)
        ),
        "SELECT k, v, s FROM (SELECT *, row_number() OVER (PARTITION BY k ORDER BY v DESC NULLS "
        "FIRST, s ASC NULLS LAST, k NULLS FIRST, v NULLS FIRST, s NULLS FIRST) AS n FROM r) "
        "WHERE n BETWEEN 2 AND 3",
    ),
    "map-filter": (
        P.Filter(
            P.Map(R, (("v2", Arith("*", v, lit(2))),)),
            (Cmp(">", Col(3, INT4), k),),
        ),
        "SELECT *, v * 2 FROM r WHERE v * 2 > k",
    ),
    "union all": (
        P.Union((S, P.Project(R, (0, 1)))),
        "SELECT * FROM s UNION ALL SELECT k, v FROM r",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=40)
@given(r=r_rows, s=s_rows)
def test_reference_agrees_with_duckdb(case: str, r: list[tuple], s: list[tuple]) -> None:
    plan, sql = CASES[case]
    assert _ours(plan, r, s) == _duck(sql, r, s), plan.explain()
