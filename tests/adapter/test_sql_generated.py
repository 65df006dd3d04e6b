"""Generated query shapes against DuckDB: random expressions, predicates, joins, groupings and
correlated subqueries over random tables, results compared as multisets."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.sql.query import plan_query

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import Resolver, duck, ours, parse, r_rows, s_rows  # noqa: E402

_leaf = st.sampled_from(["r.k", "r.v", "0", "1", "-2", "NULL::int"])


def _int_exprs(leaf: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(" ".join).map(_paren),
            st.tuples(_preds(leaf), inner, inner).map(
                lambda t: f"CASE WHEN {t[0]} THEN {t[1]} ELSE {t[2]} END"
            ),
            st.tuples(inner, inner).map(lambda t: f"coalesce({t[0]}, {t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"nullif({t[0]}, {t[1]})"),
            inner.map(lambda e: f"abs({e})"),
        )

    return st.recursive(leaf, extend, max_leaves=4)


def _paren(text: str) -> str:
    return f"({text})"


def _preds(leaf: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    atom = st.one_of(
        st.tuples(leaf, st.sampled_from(["=", "<>", "<", ">="]), leaf).map(" ".join),
        leaf.map(lambda e: f"{e} IS NULL"),
        leaf.map(lambda e: f"{e} IN (0, 1, NULL)"),
        st.tuples(leaf, leaf, leaf).map(lambda t: f"{t[0]} BETWEEN {t[1]} AND {t[2]}"),
        st.sampled_from(["r.s LIKE 'a%'", "r.s IS NOT NULL", "true", "NULL::boolean"]),
    )
    return st.recursive(
        atom,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(" ".join).map(_paren),
            inner.map(lambda p: f"NOT ({p})"),
        ),
        max_leaves=3,
    )


@st.composite
def _shapes(draw: st.DrawFn) -> str:
    ints = _int_exprs(_leaf)
    source = draw(
        st.sampled_from(
            ["r", "r JOIN s ON r.k = s.k", "r LEFT JOIN s ON r.k = s.k AND s.w > 0", "r, s"]
        )
    )
    select = [draw(ints) for _ in range(draw(st.integers(1, 2)))]
    where = draw(_preds(_leaf))
    if draw(st.booleans()):
        aggs = draw(
            st.lists(st.sampled_from(["count(*)", "sum(r.v)", "min(r.k)", "max(r.s)"]), min_size=1)
        )
        listed = ", ".join(select + aggs)
        groups = ", ".join(str(i + 1) for i in range(len(select)))
        return f"SELECT {listed} FROM {source} WHERE {where} GROUP BY {groups}"
    distinct = "DISTINCT " if draw(st.booleans()) else ""
    return f"SELECT {distinct}{', '.join(select)} FROM {source} WHERE {where}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=_shapes(), r=r_rows, s=s_rows)
def test_generated_queries_agree_with_duckdb(sql: str, r: list[tuple], s: list[tuple]) -> None:
    data = {"r": r, "s": s}
    query = plan_query(parse(sql), Resolver())
    assert Counter(ours(query, data)) == Counter(duck(sql, data)), sql


_inner_leaf = st.sampled_from(["t2.k", "t2.w", "r.k", "r.v", "1", "NULL::int"])


@st.composite
def _subquery_shapes(draw: st.DrawFn) -> str:
    """Queries whose predicates and columns hold subqueries, correlated in any way."""
    inner = draw(_preds(_inner_leaf))
    kind = draw(st.sampled_from(["exists", "in", "count", "max", "not in"]))
    sub = {
        "exists": f"EXISTS (SELECT 1 FROM s AS t2 WHERE {inner})",
        "in": f"r.v IN (SELECT t2.w FROM s AS t2 WHERE {inner})",
        "not in": f"r.k NOT IN (SELECT t2.k FROM s AS t2 WHERE {inner})",
        "count": f"(SELECT count(*) FROM s AS t2 WHERE {inner}) > 1",
        "max": f"(SELECT max(t2.w) FROM s AS t2 WHERE {inner}) >= r.k",
    }[kind]
    outer = draw(_preds(_leaf))
    if draw(st.booleans()):
        return f"SELECT r.k, r.v, {sub} FROM r WHERE {outer}"
    return f"SELECT r.k, r.s FROM r WHERE {outer} {draw(st.sampled_from(['AND', 'OR']))} {sub}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=_subquery_shapes(), r=r_rows, s=s_rows)
def test_generated_subqueries_agree_with_duckdb(sql: str, r: list[tuple], s: list[tuple]) -> None:
    data = {"r": r, "s": s}
    query = plan_query(parse(sql), Resolver())
    assert Counter(ours(query, data)) == Counter(duck(sql, data)), sql
