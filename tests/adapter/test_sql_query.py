"""The SQL planner against DuckDB: the same query over the same random tables, results compared
as multisets (in order where ORDER BY fixes it); PostgreSQL's behaviour where DuckDB differs is
checked against literal expectations."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.relations import Relation
from changeflow.adapter.sql.query import plan_query, view_plan
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate
from changeflow.compute.types import INT4, NUMERIC, TEXT, Column
from changeflow.errors import EvalError, PlanError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import Resolver, duck, ours, parse, r_rows, s_rows  # noqa: E402

# Each query runs on DuckDB as written; ORDERED ones are compared in order (their ORDER BY
# covers every output column, so the order is total).
QUERIES = [
    "SELECT * FROM r",
    "SELECT k, v, s FROM r WHERE v > 0 AND s IS NOT NULL",
    "SELECT r.* FROM r",
    "SELECT x.k AS a, x.v + 1 AS b FROM r AS x WHERE x.k = 1 OR x.v IS NULL",
    "SELECT k * 2 - v, -v, v % 2, abs(v) FROM r",
    "SELECT s || 'x', lower(s), upper(s), length(s) FROM r",
    "SELECT CASE WHEN v > 0 THEN 'pos' WHEN v < 0 THEN 'neg' ELSE 'zero' END FROM r",
    "SELECT CASE k WHEN 1 THEN v ELSE 0 END, coalesce(v, k, 7), nullif(k, 1) FROM r",
    "SELECT k FROM r WHERE k IN (1, 2) AND v NOT IN (0, 3)",
    "SELECT k FROM r WHERE v BETWEEN -1 AND 1",
    "SELECT k FROM r WHERE (v > 0) IS TRUE OR (k < 1) IS NOT FALSE",
    "SELECT k FROM r WHERE (v > 0) IS NOT TRUE AND (k = 1) IS FALSE",
    "TABLE r",
    "SELECT k FROM r WHERE v NOT BETWEEN -1 AND 1",
    "SELECT s FROM r WHERE s LIKE 'a%'",
    "SELECT s FROM r WHERE s NOT LIKE '_'",
    "SELECT s FROM r WHERE s ILIKE 'b'",
    "SELECT k, v FROM r WHERE k IS DISTINCT FROM v",
    "SELECT k, v FROM r WHERE k IS NOT DISTINCT FROM v",
    "SELECT v::bigint, CAST(k AS text), k::numeric FROM r",
    "SELECT 1, 'x', true, NULL::int",
    "SELECT DISTINCT k FROM r",
    "SELECT DISTINCT k, s FROM r",
    # joins
    "SELECT r.k, v, w FROM r JOIN s ON r.k = s.k",
    "SELECT r.k, v, w FROM r INNER JOIN s ON r.k = s.k AND v < w",
    "SELECT r.k, s.k, v, w FROM r LEFT JOIN s ON r.k = s.k",
    "SELECT r.k, s.k, v, w FROM r RIGHT JOIN s ON r.k = s.k",
    "SELECT r.k, s.k, v, w FROM r FULL JOIN s ON r.k = s.k",
    "SELECT r.k, s.k, v, w FROM r FULL OUTER JOIN s ON r.k = s.k AND v > 0",
    "SELECT r.k, s.k FROM r CROSS JOIN s",
    "SELECT r.k, s.k FROM r, s WHERE r.v = s.w",
    "SELECT * FROM r JOIN s USING (k)",
    "SELECT k, v, w FROM r LEFT JOIN s USING (k)",
    "SELECT k, v, w FROM r FULL JOIN s USING (k)",
    "SELECT k, r.k, s.k FROM r RIGHT JOIN s USING (k)",
    "SELECT * FROM r NATURAL JOIN s",
    "SELECT a.k, b.k FROM r a JOIN r b ON a.k < b.k",
    "SELECT x.k, y.w, z.s FROM r x JOIN s y ON x.k = y.k LEFT JOIN r z ON z.v = y.w",
    "SELECT * FROM (SELECT k, v FROM r WHERE v > 0) AS q(a, b) WHERE a > 0",
    "SELECT * FROM (VALUES (1, 'a'), (2, NULL)) AS t(x, y)",
    # aggregates
    "SELECT count(*), count(v), count(DISTINCT v), sum(v), min(v), max(v) FROM r",
    "SELECT count(*), sum(v), min(s), max(s) FROM r WHERE false",
    "SELECT k, count(*), sum(v), min(s), max(s) FROM r GROUP BY k",
    "SELECT k, s, count(*) FROM r GROUP BY k, s",
    "SELECT k + 1, count(*) FROM r GROUP BY k + 1",
    "SELECT k, count(*) FROM r GROUP BY 1 HAVING count(*) > 1",
    "SELECT k, sum(v) FROM r GROUP BY k HAVING min(v) >= 0 OR k IS NULL",
    "SELECT max(v) - min(v), count(DISTINCT s) FROM r",
    "SELECT bool_and(v > 0), bool_or(v > 0) FROM r",
    "SELECT k, bool_and(v > 0), bool_or(s = 'a') FROM r GROUP BY k",
    "SELECT avg(w) FROM s",
    "SELECT k, count(*) FILTER (WHERE v > 0), sum(v) FILTER (WHERE s = 'a') FROM r GROUP BY k",
    "SELECT count(DISTINCT v) FILTER (WHERE v <> 1), count(*) FROM r",
    "SELECT count(*) FROM r HAVING count(*) > 2",
    "SELECT DISTINCT count(*) FROM r GROUP BY k",
    "SELECT r.k, count(w) FROM r LEFT JOIN s ON r.k = s.k GROUP BY r.k",
    # set operations
    "SELECT k FROM r UNION SELECT k FROM s",
    "SELECT k FROM r UNION ALL SELECT k FROM s",
    "SELECT k FROM r EXCEPT SELECT k FROM s",
    "SELECT k FROM r EXCEPT ALL SELECT k FROM s",
    "SELECT k FROM r INTERSECT SELECT k FROM s",
    "SELECT k FROM r INTERSECT ALL SELECT k FROM s",
    "SELECT k, v FROM r UNION ALL SELECT k, w FROM s",
    "SELECT k FROM r UNION SELECT k FROM s EXCEPT SELECT v FROM r",
    "SELECT k FROM r UNION ALL (SELECT k FROM s INTERSECT ALL SELECT v FROM r)",
    "VALUES (1, 'a'), (2, 'b'), (1, 'a')",
    "SELECT v FROM r UNION ALL SELECT NULL",
    # WITH
    "WITH x AS (SELECT k, v FROM r WHERE v IS NOT NULL) SELECT * FROM x JOIN s USING (k)",
    "WITH x(a) AS (SELECT k FROM r), y AS (SELECT a FROM x WHERE a > 0) SELECT * FROM x, y",
    # subqueries
    "SELECT k FROM r WHERE k IN (SELECT k FROM s)",
    "SELECT k FROM r WHERE k NOT IN (SELECT k FROM s)",
    "SELECT k, k IN (SELECT k FROM s), k NOT IN (SELECT w FROM s) FROM r",
    "SELECT k FROM r WHERE v NOT IN (SELECT w FROM s WHERE w IS NOT NULL)",
    "SELECT k FROM r WHERE EXISTS (SELECT 1 FROM s WHERE w > 2)",
    "SELECT k FROM r WHERE NOT EXISTS (SELECT 1 FROM s)",
    "SELECT k, k = ANY (SELECT w FROM s), v <> ALL (SELECT k FROM s) FROM r",
    "SELECT k, (SELECT max(w) FROM s) FROM r",
    "SELECT k FROM r WHERE v > (SELECT min(w) FROM s)",
    "SELECT k FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.k = r.k)",
    "SELECT k FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.k = r.k AND s.w = r.v + 1)",
    "SELECT k FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.k = r.k AND w > 1)",
    "SELECT k FROM r WHERE v IN (SELECT w FROM s WHERE s.k = r.k)",
    "SELECT k, v NOT IN (SELECT w FROM s WHERE s.k = r.k) FROM r",
    "SELECT k, EXISTS (SELECT 1 FROM s WHERE s.k = r.k) OR v > 0 FROM r",
    "SELECT k, (SELECT count(*) FROM s WHERE s.k = r.k) FROM r",
    "SELECT k, (SELECT sum(w) FROM s WHERE s.k = r.k), (SELECT count(w) + 1 FROM s WHERE s.k = r.k)"
    " FROM r",
    "SELECT k, count(*) FROM r GROUP BY k HAVING k IN (SELECT k FROM s)",
    "SELECT k, (SELECT count(*) FROM s WHERE s.k = r.k) FROM r GROUP BY k",
    "SELECT * FROM r WHERE k = (SELECT max(k) FROM s)",
    # correlated beyond equalities: over the distinct values of the outer columns
    "SELECT k FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.k > r.k)",
    "SELECT k FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.k = r.k AND s.w > r.v)",
    "SELECT k, v, (SELECT count(*) FROM s WHERE s.w > r.v OR r.v IS NULL) FROM r",
    "SELECT k, v IN (SELECT w FROM s WHERE s.k < r.k) FROM r",
    "SELECT k, v NOT IN (SELECT w FROM s WHERE s.k <> r.k) FROM r",
    "SELECT k, (SELECT max(w) FROM s WHERE s.k = r.k AND s.w > r.v) FROM r",
    "SELECT k, (SELECT min(r.v + w) FROM s) FROM r",
    "SELECT k, NOT EXISTS (SELECT 1 FROM s WHERE s.w IS NOT DISTINCT FROM r.v) FROM r",
    "SELECT k, (SELECT count(*) FROM s WHERE r.s IS NULL) FROM r",
    "SELECT k, (SELECT w FROM s WHERE s.k <= r.k ORDER BY w DESC NULLS LAST LIMIT 1) FROM r",
    "SELECT s, (SELECT count(DISTINCT w) FROM s WHERE w > r.v GROUP BY k ORDER BY 1 LIMIT 1)"
    " FROM r",
    "SELECT k FROM r WHERE EXISTS (SELECT 1 FROM s WHERE EXISTS"
    " (SELECT 1 FROM r AS x WHERE x.v = s.w AND x.k = r.k))",
    "SELECT k FROM r WHERE v IN (SELECT w FROM s WHERE s.k = r.k AND w IN"
    " (SELECT x.v FROM r AS x WHERE x.s <> r.s))",
    # ORDER BY / LIMIT (total orders)
    "SELECT k, v, s FROM r ORDER BY k NULLS FIRST, v NULLS FIRST, s NULLS FIRST",
    "SELECT k, v, s FROM r ORDER BY 1 DESC NULLS LAST, 2 NULLS FIRST, 3 DESC NULLS FIRST",
    "SELECT k AS a, v, s FROM r ORDER BY a, v DESC NULLS FIRST, s NULLS LAST LIMIT 3",
    "SELECT k, v, s FROM r ORDER BY k, v, s LIMIT 2 OFFSET 1",
    "SELECT k, v, s FROM r ORDER BY k, v, s OFFSET 2",
    "SELECT s FROM r ORDER BY k + coalesce(v, 0), k, v, s",
    "SELECT k, count(*) FROM r GROUP BY k ORDER BY count(*) DESC NULLS FIRST, k NULLS FIRST",
    "SELECT k FROM r UNION SELECT k FROM s ORDER BY 1 NULLS FIRST LIMIT 2",
    "SELECT DISTINCT k FROM r ORDER BY k DESC NULLS LAST",
    "SELECT * FROM (SELECT k, v FROM r ORDER BY k NULLS FIRST, v NULLS FIRST LIMIT 2) q",
    "SELECT * FROM (SELECT k, v FROM r ORDER BY v DESC NULLS LAST, k NULLS LAST OFFSET 1) q",
    "SELECT k, v, s FROM r ORDER BY k, v, s LIMIT 0",
    "SELECT k, v, s FROM r ORDER BY k, v, s OFFSET 1 ROWS FETCH FIRST 2 ROWS ONLY",
    "SELECT k, v, s FROM r ORDER BY k, v, s FETCH FIRST ROW ONLY",
]


def _ordered(sql: str) -> bool:
    return parse(sql).args.get("order") is not None


@pytest.mark.parametrize("sql", QUERIES)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(r=r_rows, s=s_rows)
def test_agrees_with_duckdb(sql: str, r: list[tuple], s: list[tuple]) -> None:
    data = {"r": r, "s": s}
    query = plan_query(parse(sql), Resolver())
    got = ours(query, data)
    want = duck(sql, data)
    if _ordered(sql):
        assert got == want, query.plan.explain()
    else:
        assert Counter(got) == Counter(want), query.plan.explain()


def _run(sql: str, r: list[tuple], s: list[tuple] | None = None, now: int = 0) -> list[tuple]:
    return ours(plan_query(parse(sql), Resolver()), {"r": r, "s": s or []}, now)


R1 = [(1, 7, "b"), (1, 2, "a"), (2, None, None), (None, -3, "a")]
S1 = [(1, 10), (1, 20), (3, None)]


def test_postgres_where_duckdb_differs() -> None:
    # PostgreSQL divides integers with truncation toward zero (DuckDB's / gives a double).
    assert _run("SELECT 7 / 2, -7 / 2, 7 % -2", []) == [(3, -3, 1)]
    # string_agg here joins in ascending order (DuckDB's order is arbitrary without ORDER BY).
    assert _run("SELECT string_agg(s, '-') FROM r", R1) == [("a-a-b",)]
    assert _run("SELECT k, string_agg(s, '') FROM r GROUP BY k ORDER BY k", R1) == [
        (1, "ab"),
        (2, None),
        (None, "a"),
    ]
    # avg of integers is numeric in PostgreSQL (DuckDB: double).
    q = plan_query(parse("SELECT avg(v) FROM r"), Resolver())
    assert q.plan.schema[0].type == NUMERIC
    # PostgreSQL sorts NULLs last ascending and first descending by default (DuckDB: last).
    assert _run("SELECT v FROM r ORDER BY v", R1) == [(-3,), (2,), (7,), (None,)]
    assert _run("SELECT v FROM r ORDER BY v DESC", R1) == [(None,), (7,), (2,), (-3,)]
    # An unknown-typed NULL column is text, as PostgreSQL outputs it.
    assert plan_query(parse("SELECT NULL AS n"), Resolver()).plan.schema[0].type == TEXT


def test_scalar_subquery_of_several_rows_fails_at_evaluation() -> None:
    # DuckDB returns any one row here; PostgreSQL fails with SQLSTATE 21000.
    query = plan_query(parse("SELECT k, (SELECT w FROM s) FROM r"), Resolver())
    with pytest.raises(EvalError, match="more than one row returned by a subquery") as e:
        ours(query, {"r": R1, "s": S1})
    assert e.value.sqlstate == "21000"
    assert _run("SELECT (SELECT w FROM s WHERE k = 3)", [], S1) == [(None,)]
    assert _run("SELECT (SELECT w FROM s WHERE k = 9)", [], S1) == [(None,)]
    # correlated: one row per outer row is fine, two is the same error
    assert _run("SELECT k, (SELECT w FROM s WHERE s.k = r.k) FROM r WHERE k = 2", R1, S1) == [
        (2, None)
    ]
    query = plan_query(parse("SELECT (SELECT w FROM s WHERE s.k = r.k) FROM r"), Resolver())
    with pytest.raises(EvalError, match="more than one row"):
        ours(query, {"r": R1, "s": S1})


def test_finishing_and_hidden_order_columns() -> None:
    q = plan_query(parse("SELECT s FROM r ORDER BY v DESC, k LIMIT 2 OFFSET 1"), Resolver())
    assert q.finishing.width == 1
    assert [o.column for o in q.finishing.order_by] == [1, 2]
    assert q.finishing.limit == 2 and q.finishing.offset == 1
    assert _run("SELECT s FROM r ORDER BY v DESC, k LIMIT 2 OFFSET 1", R1) == [("b",), ("a",)]
    q = plan_query(parse("SELECT * FROM (SELECT k FROM r ORDER BY k LIMIT 1) x"), Resolver())
    assert "TopK" in q.plan.explain() and q.finishing.limit is None


def test_view_plan_applies_limit_as_top_k() -> None:
    q = plan_query(parse("SELECT s FROM r ORDER BY v DESC, k LIMIT 2 OFFSET 1"), Resolver())
    plan = view_plan(q)
    assert [c.name for c in plan.schema] == ["s"]
    rows = evaluate(plan, {"r": {row: 1 for row in R1}}, 0)
    assert rows == {("b",): 1, ("a",): 1}
    q = plan_query(parse("SELECT k FROM r ORDER BY v"), Resolver())
    assert "TopK" not in view_plan(q).explain()


def test_aggregate_over_no_rows_has_one_row() -> None:
    assert _run("SELECT count(*), count(v), sum(v), max(s) FROM r", []) == [(0, 0, None, None)]
    assert _run("SELECT count(*) + 1, coalesce(sum(v), -1) FROM r", []) == [(1, -1)]
    assert _run("SELECT k, count(*) FROM r GROUP BY k", []) == []
    assert _run("SELECT count(*) FROM r", R1) == [(4,)]


def test_literals_and_casts() -> None:
    rows = _run(
        "SELECT date '2024-02-29', timestamp '2024-01-02 03:04:05', 1.50, 2147483648,"
        " '12'::int + 1, 2.5::int, 3.7::float8::int, 1.005::numeric(5, 2), 1e3",
        [],
    )
    assert rows == [("2024-02-29", "2024-01-02T03:04:05", 1.5, 2147483648, 13, 3, 4, 1.01, 1000.0)]
    q = plan_query(parse("SELECT 1.5, 'a', 10000000000, 99999999999999999999"), Resolver())
    kinds = [c.type.name for c in q.plan.schema]
    assert kinds == ["numeric", "text", "bigint", "numeric"]
    assert _run("SELECT k FROM r WHERE k = '1'", R1) == [(1,), (1,)]
    assert _run("SELECT date '2024-01-01' < '2024-01-02'", []) == [(True,)]


def test_functions_of_compute() -> None:
    rows = _run(
        "SELECT substring('hello', 2, 3), trim('  x  '), ltrim('xxy', 'x'), replace('aba', 'a',"
        " 'c'), strpos('hello', 'l'), position('l' in 'hello'), left('abc', 2), right('abc', 2),"
        " reverse('ab'), repeat('ab', 2), concat('a', 1, NULL), greatest(1, 3, 2), least(1.5, 2),"
        " round(2.5), floor(-1.5), ceil(1.2), power(2, 3), sqrt(4), extract(year from date"
        " '2024-05-06'), date_trunc('month', date '2024-05-06'), make_date(2024, 1, 2)",
        [],
    )
    assert rows == [
        (
            "ell",
            "x",
            "y",
            "cbc",
            3,
            3,
            "ab",
            "bc",
            "ba",
            "abab",
            "a1",
            3,
            1.5,
            3.0,
            -2.0,
            2.0,
            8.0,
            2.0,
            2024.0,
            "2024-05-01T00:00:00+00:00",  # a date truncates as a timestamptz
            "2024-01-02",
        )
    ]


def test_items_and_timelines_include_views() -> None:
    view_plan = P.Filter(P.Get("s", (Column("k", INT4), Column("w", INT4))), ())
    resolver = Resolver({"v": Relation("v", "view", view_plan, "User(x)")})
    q = plan_query(
        parse('SELECT * FROM r JOIN v USING (k) WHERE k IN (SELECT k FROM "s")'), resolver
    )
    assert q.items == {"r", "v", "s"}
    assert q.timelines == {"EpochMilliseconds", "User(x)"}
    assert resolver.asked.count("v") == 1


def test_identifiers_fold_unless_quoted() -> None:
    resolver = Resolver(
        {"Mixed": Relation("Mixed", "table", P.Get("m", (Column("Col", INT4),)), "e")}
    )
    q = plan_query(parse('SELECT "Col" AS "Big", "Col" AS Small FROM "Mixed"'), resolver)
    assert [c.name for c in q.plan.schema] == ["Big", "small"]
    assert plan_query(parse("SELECT K FROM R"), Resolver()).plan.schema[0].name == "k"
    with pytest.raises(PlanError) as e:
        plan_query(parse('SELECT "K" FROM r'), Resolver())
    assert e.value.sqlstate == "42703"


def test_ctes_shadow_tables() -> None:
    rows = _run("WITH r AS (SELECT 5 AS k) SELECT * FROM r", R1)
    assert rows == [(5,)]


# -- mz_now() ---------------------------------------------------------------------------------

TEMPORAL = [
    ("SELECT k FROM r WHERE mz_now() >= v", True),
    ("SELECT k FROM r WHERE mz_now() > v", True),
    ("SELECT k FROM r WHERE mz_now() < v", True),
    ("SELECT k FROM r WHERE mz_now() <= v + 1", True),
    ("SELECT k FROM r WHERE mz_now() = v", True),
    ("SELECT k FROM r WHERE v <= mz_now() AND mz_now() < v + 2 AND k > 0", True),
    ("SELECT k FROM r WHERE mz_now() BETWEEN v AND k", True),
    ("SELECT k FROM r WHERE k > mz_now()", True),
    ("SELECT k FROM r WHERE mz_now() >= v OR k = 1", False),
    ("SELECT k FROM r WHERE NOT (mz_now() < v) OR (mz_now() = k AND s = 'a')", False),
    ("SELECT k FROM r WHERE NOT (mz_now() BETWEEN v AND k)", False),
    ("SELECT k, count(*) FROM r GROUP BY k HAVING mz_now() < max(v)", True),
]


@pytest.mark.parametrize(("sql", "and_only"), TEMPORAL)
@settings(max_examples=10, deadline=None)
@given(r=r_rows, now=st.integers(-3, 4))
def test_temporal_filters_match_mz_now_as_a_constant(
    sql: str, and_only: bool, r: list[tuple], now: int
) -> None:
    query = plan_query(parse(sql), Resolver(), temporal_and_only=and_only)
    got = Counter(ours(query, {"r": r}, now))
    assert got == Counter(duck(sql.replace("mz_now()", f"({now})"), {"r": r}))


def test_temporal_bounds() -> None:
    q = plan_query(parse("SELECT k FROM r WHERE mz_now() BETWEEN v AND k"), Resolver(), True)
    (tf,) = [p for p in _walk(q.plan) if isinstance(p, P.TemporalFilter)]
    assert [str(e) for e in tf.lower] == ["CAST(v AS bigint)"]
    assert [str(e) for e in tf.upper] == ["(CAST(k AS bigint) + 1)"]
    q = plan_query(parse("SELECT d FROM u WHERE mz_now() < d"), Resolver(), True)
    (tf,) = [p for p in _walk(q.plan) if isinstance(p, P.TemporalFilter)]
    assert [str(e) for e in tf.upper] == ["epoch_ms(d)"]


def _walk(plan: P.Plan) -> list[P.Plan]:
    return [plan, *(p for child in plan.inputs() for p in _walk(child))]


MZ_NOW_ERRORS = [
    ("SELECT mz_now()", "SELECT"),
    ("SELECT k FROM r WHERE mz_now() + 1 > v", "arithmetic"),
    ("SELECT k FROM r WHERE mz_now() > mz_now()", "free of mz_now()"),
    ("SELECT k FROM r WHERE mz_now() <> v", "not <>"),
    ("SELECT k FROM r WHERE mz_now() IN (1, 2)", "compared"),
    ("SELECT k FROM r WHERE coalesce(mz_now(), 1) > v", "compared"),
    ("SELECT k FROM r JOIN s ON mz_now() > w", "JOIN/ON"),
    ("SELECT k FROM r GROUP BY k ORDER BY mz_now()", "ORDER BY"),
]


@pytest.mark.parametrize(("sql", "fragment"), MZ_NOW_ERRORS)
def test_mz_now_rules(sql: str, fragment: str) -> None:
    with pytest.raises(PlanError, match="mz_now") as e:
        plan_query(parse(sql), Resolver())
    assert e.value.sqlstate == "0A000"
    assert fragment in e.value.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT k FROM r WHERE mz_now() >= v OR k = 1",
        "SELECT k FROM r WHERE NOT (mz_now() < v)",
        "SELECT k FROM r WHERE k = 1 AND (v > 0 OR mz_now() < v)",
    ],
)
def test_mz_now_only_under_and_in_views(sql: str) -> None:
    with pytest.raises(PlanError, match="not under OR or NOT") as e:
        plan_query(parse(sql), Resolver(), temporal_and_only=True)
    assert e.value.sqlstate == "0A000"
    plan_query(parse(sql), Resolver(), temporal_and_only=False)


# -- errors -----------------------------------------------------------------------------------

ERRORS = [
    ("SELECT * FROM nope", "42P01", 'relation "nope" does not exist'),
    ("SELECT nope FROM r", "42703", 'column "nope" does not exist'),
    ("SELECT r.nope FROM r", "42703", 'column "r.nope" does not exist'),
    ("SELECT x.k FROM r", "42P01", 'missing FROM-clause entry for table "x"'),
    ("SELECT k FROM r, s", "42702", 'column reference "k" is ambiguous'),
    ("SELECT k FROM r JOIN s ON k = 1", "42702", 'column reference "k" is ambiguous'),
    ("SELECT v, count(*) FROM r", "42803", 'column "r.v" must appear in the GROUP BY clause'),
    ("SELECT k, v FROM r GROUP BY k", "42803", 'column "r.v" must appear in the GROUP BY'),
    ("SELECT * FROM r GROUP BY k", "42803", 'column "r.v" must appear'),
    ("SELECT k FROM r GROUP BY k HAVING v > 1", "42803", 'column "r.v" must appear'),
    ("SELECT k FROM r WHERE count(*) > 1", "42803", "aggregate functions are not allowed in WHERE"),
    ("SELECT sum(count(*)) FROM r", "42803", "cannot be nested"),
    ("SELECT k FROM r WHERE v", "42804", "argument of WHERE must be type boolean"),
    ("SELECT CASE WHEN true THEN 1 ELSE s END FROM r", "42804", "cannot be matched"),
    ("SELECT k FROM r UNION SELECT s FROM r", "42804", "cannot be matched"),
    ("SELECT k + s FROM r", "42883", "operator +"),
    ("SELECT k FROM r WHERE k = 'x'", "22P02", 'invalid input syntax for type integer: "x"'),
    ("SELECT k, v FROM r UNION SELECT k FROM s", "42601", "same number of columns"),
    ("SELECT * FROM r JOIN s USING (v)", "42703", 'column "v" specified in USING clause'),
    ("SELECT * FROM r, r", "42712", 'table name "r" specified more than once'),
    ("SELECT k FROM r ORDER BY 3", "42P10", "ORDER BY position 3 is not in select list"),
    ("SELECT k FROM r GROUP BY 2", "42P10", "GROUP BY position 2 is not in select list"),
    ("SELECT DISTINCT k FROM r ORDER BY v", "42P10", "must appear in select list"),
    ("SELECT k AS a, v AS a FROM r ORDER BY a", "42702", 'ORDER BY "a" is ambiguous'),
    ("SELECT (SELECT k, w FROM s)", "42601", "subquery must return only one column"),
    ("SELECT 1 WHERE 1 IN (SELECT k, w FROM s)", "42601", "subquery has too many columns"),
    ("SELECT nosuch(k) FROM r", "42883", "function nosuch"),
    ("SELECT k::interval FROM r", "42846", "cannot cast type integer to interval"),
    ("SELECT k::nosuchtype FROM r", "42704", "nosuchtype"),
    ("SELECT * FROM r, LATERAL (SELECT max(k) FROM s HAVING max(k) > r.k) x", "0A000", "LATERAL"),
    ("SELECT k FROM r LIMIT -1", "2201W", "LIMIT must not be negative"),
    ("SELECT k FROM r WHERE k IS TRUE", "42804", "argument of IS TRUE must be type boolean"),
    ("SELECT sum(*) FROM r", "42883", "sum(*)"),
    ("SELECT count(k, v) FROM r", "42883", "count()"),
    ("SELECT * FROM r TABLESAMPLE SYSTEM (10)", "0A000", "TABLESAMPLE"),
    ("SELECT k FROM r LIMIT 1.5", "42804", "argument of LIMIT must be an integer"),
    ("SELECT k FROM r UNION SELECT k FROM s ORDER BY k + 1", "0A000", "ORDER BY on a set"),
    ("SELECT x FROM (SELECT 1) AS q(a, b)", "42P10", "has 1 columns available but 2"),
    ("WITH x AS (SELECT 1), x AS (SELECT 2) SELECT 1", "42712", 'WITH query name "x"'),
    ("VALUES (1), (2, 3)", "42601", "VALUES lists must all be the same length"),
    ("SELECT sum(k) FROM r GROUP BY sum(k)", "42803", "not allowed in GROUP BY"),
    ("SELECT k FROM r JOIN s ON r.k IN (SELECT 1)", "0A000", "subquery in JOIN/ON"),
    ("SELECT k FROM r LIMIT k", "42703", 'column "k" does not exist'),
    ("SELECT s LIKE ANY (SELECT s FROM r) FROM r", "0A000", "ANY/ALL"),
    (
        "SELECT k FROM r WHERE EXISTS (SELECT 1 FROM s JOIN u ON u.id = r.k)",
        "0A000",
        "correlated subqueries of this form are not supported",
    ),
    (
        "SELECT k, (SELECT count(*) FROM s WHERE s.k > r.k) FROM r GROUP BY k",
        "0A000",
        "correlated subqueries of this form are not supported",
    ),
    (
        "SELECT k FROM r WHERE EXISTS (SELECT count(*) FROM s WHERE s.k = r.k)",
        "0A000",
        "correlated subqueries of this form are not supported",
    ),
    (
        "SELECT k FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.k = r.k UNION SELECT 2)",
        "0A000",
        "correlated subqueries",
    ),
    ("SELECT k FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.k = nope)", "42703", "nope"),
]


@pytest.mark.parametrize(("sql", "sqlstate", "message"), ERRORS)
def test_errors(sql: str, sqlstate: str, message: str) -> None:
    with pytest.raises(PlanError) as e:
        plan_query(parse(sql), Resolver())
    assert e.value.sqlstate == sqlstate, e.value.message
    assert message in e.value.message


def test_one_row_construction_is_exact_under_retraction() -> None:
    """The defaults row appears exactly when the input is empty, whatever the counts."""
    q = plan_query(parse("SELECT count(*), max(k) FROM r"), Resolver())
    for rows in ({}, {(1, 2, "a"): 3}):
        assert len(evaluate(q.plan, {"r": rows}, 0)) == 1


def test_date_plus_or_minus_interval_is_a_timestamp() -> None:
    """``date ± INTERVAL`` is the timestamp of the date's midnight moved, as PostgreSQL's is
    (a month clamped to the month's end)."""
    from datetime import date, datetime

    from changeflow.adapter.sql.dialect import parse_sql
    from changeflow.compute.types import DATE

    days = P.Get("days", (Column("d", DATE),))
    resolver = Resolver({"t": Relation("t", "table", days, "EpochMilliseconds")})
    rows = {(date(1998, 12, 1),): 1}
    for sql, want in [
        ("SELECT d - INTERVAL '90' DAY FROM t", datetime(1998, 9, 2)),
        ("SELECT d + INTERVAL '2 weeks' FROM t", datetime(1998, 12, 15)),
        ("SELECT d + INTERVAL '1' DAY FROM t", datetime(1998, 12, 2)),
        ("SELECT d - INTERVAL '3' MONTH FROM t", datetime(1998, 9, 1)),
    ]:
        query = plan_query(parse_sql(sql), resolver)
        assert evaluate(query.plan, {"days": rows}, 0) == {(want,): 1}
