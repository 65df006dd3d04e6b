"""Scalar expressions on Spark against the reference evaluator: random integer, boolean,
double (NaN among them), LIKE and text-cast expressions, every function, and the errors Spark
raises with PostgreSQL's SQLSTATEs."""

from __future__ import annotations

import math
import sys
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from changeflow.compute import plan as P
from changeflow.compute.expr import (
    Arith,
    Case,
    Cast,
    Cmp,
    Coalesce,
    Col,
    Expr,
    InList,
    IsNull,
    Like,
    Lit,
    Neg,
    NullIf,
    lit,
)
from changeflow.compute.functions import Func
from changeflow.compute.spark_expr import ExprCompiler, exact_decimals, spark_type
from changeflow.compute.types import (
    BOOL,
    DATE,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    Column,
    Schema,
)
from changeflow.errors import EvalError, PlanError
from changeflow.spark import spark_errors

sys.path.insert(0, str(Path(__file__).parent))
from test_expr import _bool_expr, _int_expr  # noqa: E402
from test_spark_eval import _norm, frame  # noqa: E402

pytestmark = pytest.mark.spark


# -- scalar expressions --------------------------------------------------------------------------

ROW_SCHEMA: Schema = (Column("a", INT4), Column("b", INT4), Column("c", INT4))


def _spark_values(spark: SparkSession, exprs: list[Expr], schema: Schema, rows: list[tuple]):
    """Each expression's value on each row, computed by Spark (one job), or the error."""
    ddl = ", ".join(f"c{i} {spark_type(c.type)}" for i, c in enumerate(schema))
    ddl += ", _i int"
    df = spark.createDataFrame([(*row, i) for i, row in enumerate(rows)], ddl)
    with exact_decimals(spark):
        cc = ExprCompiler(df, 0)
        out = df.select("_i", *(cc.compile(e).alias(f"e{j}") for j, e in enumerate(exprs)))
    with spark_errors("test"):
        return sorted(tuple(r) for r in out.collect())


def _reference_value(e: Expr, row: tuple) -> Any:
    try:
        return e.eval(row)
    except EvalError as error:
        return error


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, float) and isinstance(theirs, float):
        if math.isnan(ours) or math.isnan(theirs):
            return math.isnan(ours) and math.isnan(theirs)
        return math.isclose(ours, theirs, rel_tol=1e-12) or ours == theirs
    return _norm(ours) == _norm(theirs)


def _null_literal(e: Expr) -> bool:
    return (isinstance(e, Lit) and e.value is None) or any(map(_null_literal, e.children()))


def _agree(spark: SparkSession, e: Expr, schema: Schema, rows: list[tuple]) -> None:
    expected = [_reference_value(e, row) for row in rows]
    failures = {x.sqlstate for x in expected if isinstance(x, EvalError)}
    # Spark folds an operation on a NULL literal to NULL without evaluating the other operand,
    # where the reference evaluates it and may fail: a known difference, in errors only.
    assume(not (failures and _null_literal(e)))
    if failures:
        with pytest.raises(EvalError) as caught:
            _spark_values(spark, [e], schema, rows)
        assert caught.value.sqlstate in failures, f"{e}: {caught.value}"
        return
    got = [v for _, v in _spark_values(spark, [e], schema, rows)]
    for row, ours, theirs in zip(rows, expected, got, strict=True):
        assert _same(ours, theirs), f"{e} on {row}: reference {ours!r}, Spark {theirs!r}"


def _arith_expr(depth: int) -> st.SearchStrategy[Expr]:
    """Integer expressions that also divide, take remainders, negate and cast."""
    sub = _int_expr(depth)
    return st.one_of(
        sub,
        st.builds(Arith, st.sampled_from(["/", "%"]), sub, sub),
        st.builds(Neg, sub),
        st.builds(lambda a: Cast(Cast(a, TEXT), INT8), sub),
        st.builds(lambda a, b: Arith("/", Cast(a, NUMERIC), b), sub, sub),
        st.builds(lambda a, b: Arith("*", Cast(a, FLOAT8), b), sub, sub),
        st.builds(lambda a, k: Cast(a, k), sub, st.sampled_from([INT2, INT8, BOOL, NUMERIC])),
    )


ints = st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))
small = st.one_of(st.none(), st.integers(-100, 100))


@settings(max_examples=40)
@given(
    e=st.one_of(_arith_expr(2), _bool_expr(2)),
    rows=st.lists(st.tuples(ints, small, small), min_size=1, max_size=4),
)
def test_random_expressions_agree_with_the_reference(
    spark: SparkSession, e: Expr, rows: list[tuple]
) -> None:
    _agree(spark, e, ROW_SCHEMA, rows)


FLOAT_SCHEMA: Schema = (Column("f", FLOAT8), Column("g", FLOAT8), Column("a", INT4))
floats = st.sampled_from([None, math.nan, 0.0, -0.0, 1.5, -2.0, 1e300])


def _float_expr(depth: int) -> st.SearchStrategy[Expr]:
    """Double expressions over columns that hold NaN."""
    leaf = st.one_of(
        st.sampled_from([Col(0, FLOAT8, name="f"), Col(1, FLOAT8, name="g")]),
        floats.map(lambda v: Lit(v, FLOAT8)),
        st.just(Cast(Col(2, INT4, name="a"), FLOAT8)),
    )
    if depth == 0:
        return leaf
    sub = _float_expr(depth - 1)
    return st.one_of(
        leaf,
        st.builds(Arith, st.sampled_from("+-*/"), sub, sub),
        st.builds(Neg, sub),
        st.builds(lambda a, b: Func("greatest", (a, b)), sub, sub),
        st.builds(lambda a, b: Func("least", (a, b)), sub, sub),
        st.builds(lambda c, a, b: Case(((c, a),), b), _float_cmp(depth - 1), sub, sub),
        st.builds(lambda a, b: Coalesce((a, b)), sub, sub),
        st.builds(NullIf, sub, sub),
    )


def _float_cmp(depth: int) -> st.SearchStrategy[Expr]:
    """Comparisons of doubles (NaN equal to NaN and above every other value)."""
    sub = _float_expr(depth)
    return st.one_of(
        st.builds(Cmp, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), sub, sub),
        st.builds(
            lambda a, items, neg: InList(a, tuple(items), neg),
            sub,
            st.lists(sub, min_size=1, max_size=3),
            st.booleans(),
        ),
    )


@settings(max_examples=40)
@given(
    e=st.one_of(_float_expr(2), _float_cmp(1)),
    rows=st.lists(st.tuples(floats, floats, small), min_size=1, max_size=4),
)
def test_random_double_expressions_with_nan_agree_with_the_reference(
    spark: SparkSession, e: Expr, rows: list[tuple]
) -> None:
    _agree(spark, e, FLOAT_SCHEMA, rows)


TEXTS = st.text(alphabet="ab%_\\ 1.-", max_size=5)


@settings(max_examples=25)
@given(
    value=st.one_of(st.none(), TEXTS),
    pattern=TEXTS,
    negated=st.booleans(),
    case_insensitive=st.booleans(),
    target=st.sampled_from([INT4, BOOL, NUMERIC, FLOAT8]),
)
def test_like_and_casts_from_text_agree(
    spark: SparkSession,
    value: str | None,
    pattern: str,
    negated: bool,
    case_insensitive: bool,
    target: Any,
) -> None:
    col = Col(0, TEXT)
    schema = (Column("t", TEXT),)
    _agree(spark, Like(col, lit(pattern), negated, case_insensitive), schema, [(value,)])
    _agree(spark, Cast(col, target), schema, [(value,)])


# -- fixed cases for each function ---------------------------------------------------------------

WIDE: Schema = (
    Column("t", TEXT),
    Column("i", INT4),
    Column("n", NUMERIC),
    Column("f", FLOAT8),
    Column("d", DATE),
    Column("ts", TIMESTAMP),
    Column("tz", TIMESTAMPTZ),
    Column("b", INT8),
)
WIDE_ROWS = [
    (
        "  Hello World ",
        -3,
        Decimal("2.345"),
        -2.5,
        date(2024, 2, 28),
        datetime(2024, 2, 28, 13, 45, 30, 250000),
        datetime(2024, 2, 28, 13, 45, 30, tzinfo=UTC),
        1700000000123,
    ),
    (None, None, None, None, None, None, None, None),
    ("abc", 7, Decimal("-0.5"), 3.5, date(2023, 12, 31), datetime(2023, 1, 1), None, 0),
]


def _w(name: str) -> Col:
    i = [c.name for c in WIDE].index(name)
    return P.col(WIDE, i)


t, i, n, f, d, ts, tz, b = (_w(c.name) for c in WIDE)

FUNCTION_CASES: list[Expr] = [
    Func("lower", (t,)),
    Func("upper", (t,)),
    Func("length", (t,)),
    Func("char_length", (t,)),
    Func("substr", (t, i)),
    Func("substr", (t, lit(0), lit(3))),
    Func("substring", (t, lit(3), lit(4))),
    Func("substr", (t, lit(-2), lit(5))),
    Func("btrim", (t,)),
    Func("trim", (t, lit(" Hd"))),
    Func("ltrim", (t,)),
    Func("rtrim", (t, lit(" d"))),
    Func("replace", (t, lit("l"), lit("L$1"))),
    Func("replace", (t, lit(""), lit("-"))),
    Func("strpos", (t, lit("o"))),
    Func("strpos", (t, lit(""))),
    Func("position", (lit("W"), t)),
    Func("left", (t, lit(3))),
    Func("left", (t, lit(-3))),
    Func("left", (t, i)),
    Func("right", (t, lit(3))),
    Func("right", (t, lit(-3))),
    Func("right", (t, lit(0))),
    Func("starts_with", (t, lit("  H"))),
    Func("reverse", (t,)),
    Func("repeat", (t, lit(2))),
    Func("repeat", (t, i)),
    Func("concat", (t, Lit(None, TEXT), i, lit(True), d, ts, tz)),
    Func("textcat", (t, lit("!"))),
    Func("abs", (i,)),
    Func("abs", (n,)),
    Func("abs", (f,)),
    Func("round", (n,)),
    Func("round", (n, lit(2))),
    Func("round", (n, lit(-1))),
    Func("round", (f,)),
    Func("round", (i,)),
    Func("trunc", (n, lit(1))),
    Func("trunc", (f,)),
    Func("floor", (n,)),
    Func("floor", (f,)),
    Func("ceil", (n,)),
    Func("ceiling", (f,)),
    Func("sign", (i,)),
    Func("sign", (n,)),
    Func("sign", (f,)),
    Func("sqrt", (Func("abs", (f,)),)),
    Func("ln", (Func("abs", (n,)),)),
    Func("exp", (i,)),
    Func("power", (f, lit(2))),
    Func("pow", (n, i)),
    Func("greatest", (i, Lit(None, INT4), lit(3))),
    Func("least", (i, n, f)),
    Func("greatest", (d, Lit(None, DATE))),
    *(Func("date_part", (lit(u), x)) for u in ("year", "dow", "doy", "week") for x in (d, tz)),
    *(Func("date_part", (lit(u), ts)) for u in ("second", "epoch", "quarter", "hour")),
    *(Func("extract", (lit(u), ts)) for u in ("second", "epoch", "month", "minute", "day")),
    Func("extract", (lit("epoch"), d)),
    *(Func("date_trunc", (lit(u), ts)) for u in ("week", "month", "quarter", "hour", "year")),
    *(Func("date_trunc", (lit(u), ts)) for u in ("milliseconds", "decade", "century")),
    Func("date_trunc", (lit("millennium"), ts)),
    Func("date_trunc", (lit("minute"), tz)),
    Func("make_date", (lit(2024), lit(2), Func("abs", (i,)))),
    Func("to_timestamp", (i,)),
    Func("to_timestamp", (f,)),
    Func("epoch_ms", (ts,)),
    Func("epoch_ms", (d,)),
    Func("split_part", (t, lit(" "), lit(2))),
    Func("split_part", (t, lit("o"), lit(-1))),
    Func("split_part", (t, lit(""), lit(1))),
    Func("lpad", (t, lit(16), lit("xy"))),
    Func("lpad", (t, lit(2))),
    Func("rpad", (t, lit(17))),
    Func("rpad", (t, i, lit(""))),
    Func("initcap", (t,)),
    Func("initcap", (lit("hello-wORLD 2x_y"),)),
    Func("md5", (t,)),
    Func("regexp_replace", (t, lit("([lo])"), lit("<\\1>"))),
    Func("regexp_replace", (t, lit("([lo])(.)"), lit("<\\2\\&$>"), lit("g"))),
    Func("regexp_replace", (t, lit("L"), lit("_"), lit("gi"))),
    # the expression nodes that the random cases do not cover
    Arith("+", d, i),
    Arith("-", d, lit(date(2024, 1, 1))),
    Arith("*", n, n),
    Arith("-", n, i),
    Arith("%", n, lit(Decimal("0.3"))),
    Arith("/", f, lit(4)),
    Arith("%", f, lit(2)),
    Cmp("<", d, ts),
    Cmp("=", n, f),
    Cmp(">=", t, lit("abc")),
    Case(((Cmp(">", i, lit(0)), n),), f),
    Coalesce((Lit(None, INT4), i, lit(1))),
    NullIf(t, lit("abc")),
    InList(n, (lit(2), Lit(Decimal("-0.5"), NUMERIC))),
    InList(t, (lit("x"), Lit(None, TEXT)), negated=True),
    IsNull(tz),
    Like(t, lit("%o W%")),
    Like(t, lit("ABC"), case_insensitive=True),
    Cast(i, TEXT),
    Cast(d, TEXT),
    Cast(ts, TEXT),
    Cast(tz, TEXT),
    Cast(ts, DATE),
    Cast(d, TIMESTAMPTZ),
    Cast(tz, TIMESTAMP),
    Cast(n, INT4),
    Cast(f, INT2),
    Cast(f, NUMERIC),
    Cast(lit("2024-03-01"), DATE),
    Cast(lit("2024-03-01 10:00:01.5"), TIMESTAMP),
    Cast(lit(" yes "), BOOL),
]


def test_functions_and_expressions_agree_with_the_reference(spark: SparkSession) -> None:
    got = _spark_values(spark, FUNCTION_CASES, WIDE, WIDE_ROWS)
    wrong = []
    for j, e in enumerate(FUNCTION_CASES):
        for row, values in zip(WIDE_ROWS, got, strict=True):
            ours, theirs = e.eval(row), values[j + 1]
            if isinstance(theirs, datetime) and e.type == TIMESTAMPTZ:
                theirs = theirs.replace(tzinfo=UTC)  # Spark gives UTC (the session's zone)
            if not _same(ours, theirs):
                wrong.append(f"{e} on {row[:4]}: reference {ours!r}, Spark {theirs!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("e", "sqlstate"),
    [
        (Arith("-", lit(-(2**31)), Func("abs", (i,))), "22003"),
        (Arith("/", i, lit(0)), "22012"),
        (Arith("%", n, lit(Decimal(0))), "22012"),
        (Arith("*", f, lit(1e308)), "22003"),
        (Cast(t, INT4), "22P02"),
        (Cast(lit("maybe"), BOOL), "22P02"),
        (Cast(lit("2024-02-30"), DATE), "22008"),
        (Cast(Arith("*", f, lit(1e300)), INT4), "22003"),
        (Func("sqrt", (f,)), "2201F"),
        (Func("ln", (lit(0),)), "2201E"),
        (Func("power", (lit(0), lit(-1))), "2201F"),
        (Func("exp", (lit(1000),)), "22003"),
        (Func("substr", (t, lit(1), lit(-1))), "22011"),
        (Func("date_part", (lit("fortnight"), d)), "22023"),
        (Func("split_part", (t, lit(","), lit(0))), "22023"),
        (Func("make_date", (lit(2023), lit(2), lit(29))), "22008"),
        (Like(t, lit("a\\")), "22025"),
    ],
)
def test_spark_failures_are_eval_errors_with_postgres_sqlstate(
    spark: SparkSession, e: Expr, sqlstate: str
) -> None:
    with pytest.raises(EvalError) as reference:
        e.eval(WIDE_ROWS[0])
    assert reference.value.sqlstate == sqlstate
    with pytest.raises(EvalError) as caught:
        _spark_values(spark, [e], WIDE, WIDE_ROWS[:1])
    assert caught.value.sqlstate == sqlstate, caught.value


def test_bad_cast_message_names_the_value(spark: SparkSession) -> None:
    with pytest.raises(EvalError, match='invalid input syntax for type boolean: "maybe"'):
        _spark_values(spark, [Cast(lit("maybe"), BOOL)], WIDE, WIDE_ROWS[:1])
    with pytest.raises(EvalError, match='invalid input syntax for type integer: "  Hello'):
        _spark_values(spark, [Cast(t, INT4)], WIDE, WIDE_ROWS[:1])


@pytest.mark.parametrize(
    "e",
    [
        Cast(f, TEXT),
        Cast(n, TEXT),
        Like(t, t),
        Func("round", (n, i)),
        Func("date_part", (t, d)),
    ],
)
def test_what_spark_cannot_compute_faithfully_is_refused(spark: SparkSession, e: Expr) -> None:
    df = frame(spark, WIDE, {}).toDF(*(f"c{j}" for j in range(len(WIDE))), "_diff")
    with pytest.raises(PlanError, match="cannot be computed on Spark"):
        ExprCompiler(df, 0).compile(e)


def test_date_text_spark_cannot_read_is_refused_not_misread(spark: SparkSession) -> None:
    """Plain ISO 8601 text is read on Spark as by the row evaluator; PostgreSQL's other forms
    (month names, MDY numbers …) fail with 0A000 there, never a different value."""
    iso = [Cast(lit("2024-02-29"), DATE), Cast(lit("2024-02-29 23:59:59.5+02:00"), TIMESTAMPTZ)]
    _, day, stamp = _spark_values(spark, iso, WIDE, WIDE_ROWS[:1])[0]
    assert day == iso[0].eval(WIDE_ROWS[0])
    assert stamp.replace(tzinfo=UTC) == iso[1].eval(WIDE_ROWS[0])
    for text in ("Jan 8 1999", "1/8/1999", "2024-01-08 24:00"):
        assert Cast(lit(text), DATE).eval(WIDE_ROWS[0]) is not None
        with pytest.raises(EvalError) as caught:
            _spark_values(spark, [Cast(lit(text), DATE)], WIDE, WIDE_ROWS[:1])
        assert caught.value.sqlstate == "0A000", text
