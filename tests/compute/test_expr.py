"""Scalar expressions: PostgreSQL's semantics, type checks, and agreement with DuckDB."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from changeflow.compute.expr import (
    And,
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
    MzNow,
    Neg,
    Not,
    NullIf,
    Or,
    Raise,
    lit,
)
from changeflow.compute.functions import Func
from changeflow.compute.scalars import float_text
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
    sql_type,
)
from changeflow.errors import EvalError, PlanError

N = Lit(None, BOOL)
T, F = lit(True), lit(False)


def ev(e: Expr, row: tuple = ()) -> object:
    return e.eval(row)


def test_three_valued_logic() -> None:
    assert ev(And((T, N))) is None and ev(And((F, N))) is False and ev(And((T, T))) is True
    assert ev(Or((F, N))) is None and ev(Or((T, N))) is True and ev(Or((F, F))) is False
    assert ev(Not(N)) is None and ev(Not(T)) is False
    assert ev(IsNull(N)) is True and ev(IsNull(T, negated=True)) is True
    assert ev(Cmp("=", lit(1), Lit(None, INT4))) is None


def test_integer_arithmetic_is_postgres() -> None:
    assert ev(Arith("/", lit(-7), lit(2))) == -3  # truncates toward zero
    assert ev(Arith("%", lit(-7), lit(2))) == -1  # the dividend's sign
    assert ev(Arith("+", lit(1), lit(2.5))) == 3.5
    assert Arith("+", lit(1), Lit(Decimal("1.5"), NUMERIC)).type == NUMERIC
    with pytest.raises(EvalError, match="integer out of range") as e:
        ev(Arith("+", lit(2**31 - 1), lit(1)))
    assert e.value.sqlstate == "22003"
    with pytest.raises(EvalError, match="bigint out of range"):
        ev(Arith("*", lit(2**62), lit(4)))
    with pytest.raises(EvalError, match="smallint out of range"):
        ev(Neg(Lit(-(2**15), INT2)))
    for op in "/%":
        with pytest.raises(EvalError, match="division by zero") as e:
            ev(Arith(op, lit(1), lit(0)))
        assert e.value.sqlstate == "22012"
    with pytest.raises(EvalError, match="division by zero"):
        ev(Arith("/", lit(1.0), lit(0.0)))


def test_dates() -> None:
    d = lit(date(2024, 2, 28))
    assert ev(Arith("+", d, lit(2))) == date(2024, 3, 1)
    assert ev(Arith("-", lit(date(2024, 3, 1)), d)) == 2
    assert ev(Cmp("<", d, lit(datetime(2024, 2, 28, 1)))) is True
    assert ev(Func("date_trunc", (lit("month"), lit(datetime(2024, 2, 28, 5))))) == datetime(
        2024, 2, 1
    )
    assert ev(Func("date_trunc", (lit("month"), d))) == datetime(2024, 2, 1, tzinfo=UTC)
    assert ev(Func("date_part", (lit("dow"), d))) == 3.0
    assert ev(Func("extract", (lit("year"), d))) == Decimal(2024)


def test_casts() -> None:
    assert ev(Cast(lit(2.5), INT4)) == 2 and ev(Cast(lit(3.5), INT4)) == 4  # rint
    assert ev(Cast(Lit(Decimal("2.5"), NUMERIC), INT4)) == 3  # numeric rounds half away
    assert ev(Cast(lit(" 12 "), INT8)) == 12
    assert ev(Cast(lit("yes"), BOOL)) is True
    assert ev(Cast(lit(True), TEXT)) == "true"
    assert ev(Cast(lit("2024-01-02"), DATE)) == date(2024, 1, 2)
    assert ev(Cast(lit(1e20), TEXT)) == "1e+20"
    with pytest.raises(EvalError, match='invalid input syntax for type integer: "x"') as e:
        ev(Cast(lit("x"), INT4))
    assert e.value.sqlstate == "22P02"
    with pytest.raises(EvalError, match="integer out of range"):
        ev(Cast(lit(3e9), INT4))
    with pytest.raises(PlanError, match="cannot cast type boolean to date"):
        Cast(lit(True), DATE)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
        (1e15, "1e+15"),
        (123456789012345.0, "123456789012345"),
        (1e-5, "1e-05"),
        (0.0001, "0.0001"),
        (float("inf"), "Infinity"),
    ],
)
def test_float_text(value: float, text: str) -> None:
    assert float_text(value) == text


def test_case_coalesce_nullif_in_like() -> None:
    case = Case(((Cmp(">", Col(0, INT4), lit(0)), lit("pos")),), lit("other"))
    assert case.eval((1,)) == "pos" and case.eval((None,)) == "other"
    assert Coalesce((Lit(None, INT4), lit(2.5))).eval(()) == 2.5
    assert Coalesce((Lit(None, INT4), lit(2))).type == INT4
    assert NullIf(lit(1), lit(1)).eval(()) is None and NullIf(lit(1), lit(2)).eval(()) == 1
    assert InList(lit(1), (lit(2), Lit(None, INT4))).eval(()) is None
    assert InList(lit(1), (lit(1), Lit(None, INT4))).eval(()) is True
    assert InList(lit(1), (lit(2),), negated=True).eval(()) is True
    assert Like(lit("a_c%"), lit("a\\_c\\%")).eval(()) is True
    assert Like(lit("abc"), lit("a_c")).eval(()) is True
    assert Like(lit("ABC"), lit("a%"), case_insensitive=True).eval(()) is True
    assert Like(lit("abc"), lit("b%")).eval(()) is False


def test_raise_fails_only_where_evaluated() -> None:
    check = Case(((Cmp(">", Col(0, INT8), lit(1)), Raise("too many", "21000")),), Col(1, INT4))
    assert check.type == INT4 and check.eval((1, 7)) == 7
    with pytest.raises(EvalError, match="too many") as e:
        check.eval((2, 7))
    assert e.value.sqlstate == "21000"


def test_functions() -> None:
    assert ev(Func("substr", (lit("hello"), lit(0), lit(3)))) == "he"  # PostgreSQL's window
    assert ev(Func("concat", (lit("a"), Lit(None, TEXT), lit(1)))) == "a1"
    assert ev(Func("greatest", (lit(1), Lit(None, INT4), lit(3)))) == 3
    assert ev(Func("round", (Lit(Decimal("2.345"), NUMERIC), lit(2)))) == Decimal("2.35")
    assert ev(Func("length", (Lit(None, TEXT),))) is None
    with pytest.raises(EvalError, match="square root of a negative"):
        ev(Func("sqrt", (lit(-1),)))
    with pytest.raises(PlanError, match=r"function lower\(integer\) does not exist"):
        Func("lower", (lit(1),))
    with pytest.raises(PlanError, match=r"function nope\(\) does not exist"):
        Func("nope", ())
    with pytest.raises(PlanError, match=r"function nope\(integer, text\) does not exist"):
        Func("nope", (lit(1), lit("a")))


def test_string_functions_of_postgres() -> None:
    assert ev(Func("split_part", (lit("a,b,c"), lit(","), lit(-1)))) == "c"
    assert ev(Func("split_part", (lit("a,b"), lit(","), lit(5)))) == ""
    with pytest.raises(EvalError, match="field position must not be zero"):
        ev(Func("split_part", (lit("a"), lit(","), lit(0))))
    assert ev(Func("lpad", (lit("hi"), lit(5), lit("xy")))) == "xyxhi"
    assert ev(Func("rpad", (lit("hello"), lit(3)))) == "hel"
    # a cast to char(n): cut to n, held without its trailing blanks (shown padded to n)
    assert ev(Func("char_n", (lit("ab  cd"), lit(4)))) == "ab"
    assert ev(Func("char_n", (lit(" a "), lit(4)))) == " a"
    assert ev(Func("initcap", (lit("hELLO wORLD-x1y"),))) == "Hello World-X1y"
    assert ev(Func("md5", (lit(""),))) == "d41d8cd98f00b204e9800998ecf8427e"
    assert ev(Func("regexp_replace", (lit("abab"), lit("(a)"), lit("<\\1>")))) == "<a>bab"
    assert ev(Func("regexp_replace", (lit("abab"), lit("A"), lit("-"), lit("gi")))) == "-b-b"


def test_numeric_division_has_postgres_scale() -> None:
    def div(a: str, b: str) -> str:
        num = (Lit(Decimal(a), NUMERIC), Lit(Decimal(b), NUMERIC))
        return str(ev(Arith("/", *num)))

    assert div("1", "3") == "0.33333333333333333333"
    assert div("2950.20", "2") == "1475.1000000000000000"
    assert div("1", "8") == "0.12500000000000000000"


def test_type_errors_before_running() -> None:
    with pytest.raises(PlanError, match="operator \\+ is not defined for text, integer"):
        Arith("+", lit("a"), lit(1))
    with pytest.raises(PlanError, match="argument of AND must be type boolean"):
        And((lit(1), T))
    with pytest.raises(PlanError, match="CASE types integer and text cannot be matched"):
        Case(((T, lit(1)),), lit("x"))
    with pytest.raises(PlanError, match="operator = is not defined for boolean, integer"):
        Cmp("=", T, lit(1))
    with pytest.raises(PlanError, match="unknown type 'nope'"):
        sql_type("nope")
    assert sql_type("INT") == INT4 and sql_type("timestamp") == TIMESTAMP
    assert MzNow().eval((), now=5) == 5
    assert str(Arith("+", Col(0, INT4, name="a"), lit(1))) == "(a + 1)"


# -- agreement with DuckDB on random expressions over nullable integer columns -------------------

COLUMNS = ("a", "b", "c")
ints = st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))
small = st.one_of(st.none(), st.integers(-100, 100))


def _int_expr(depth: int) -> st.SearchStrategy[Expr]:
    leaf = st.one_of(
        st.sampled_from([Col(i, INT4, name=n) for i, n in enumerate(COLUMNS)]),
        st.integers(-50, 50).map(lit),
        st.just(Lit(None, INT4)),
    )
    if depth == 0:
        return leaf
    sub = _int_expr(depth - 1)
    return st.one_of(
        leaf,
        st.builds(Arith, st.sampled_from("+-*"), sub, sub),
        st.builds(Coalesce, st.tuples(sub, sub)),
        st.builds(NullIf, sub, sub),
        st.builds(lambda c, a, b: Case(((c, a),), b), _bool_expr(depth - 1), sub, sub),
    )


def _bool_expr(depth: int) -> st.SearchStrategy[Expr]:
    ints_ = _int_expr(0) if depth == 0 else _int_expr(depth - 1)
    leaf = st.one_of(
        st.builds(Cmp, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), ints_, ints_),
        st.sampled_from([T, F, N]),
        st.builds(IsNull, ints_, st.booleans()),
        st.builds(
            lambda a, items, neg: InList(a, tuple(items), neg),
            ints_,
            st.lists(ints_, min_size=1, max_size=3),
            st.booleans(),
        ),
    )
    if depth == 0:
        return leaf
    sub = _bool_expr(depth - 1)
    return st.one_of(
        leaf,
        st.builds(lambda a, b: And((a, b)), sub, sub),
        st.builds(lambda a, b: Or((a, b)), sub, sub),
        st.builds(Not, sub),
    )


@pytest.fixture(scope="module")
def duck() -> duckdb.DuckDBPyConnection:
    return duckdb.connect()


def _duck_value(duck: duckdb.DuckDBPyConnection, e: Expr, row: tuple) -> object:
    duck.execute("CREATE OR REPLACE TABLE t (a INTEGER, b INTEGER, c INTEGER)")
    duck.execute("INSERT INTO t VALUES (?, ?, ?)", list(row))
    try:
        return duck.execute(f"SELECT {e} FROM t").fetchone()[0]
    except duckdb.Error as error:
        return type(error)


def _null_literal(e: Expr) -> bool:
    return (isinstance(e, Lit) and e.value is None) or any(_null_literal(c) for c in e.children())


def _null_test(e: Expr) -> bool:
    return isinstance(e, IsNull) or any(_null_test(c) for c in e.children())


@given(e=st.one_of(_int_expr(3), _bool_expr(3)), row=st.tuples(ints, small, small))
def test_agrees_with_duckdb(duck: duckdb.DuckDBPyConnection, e: Expr, row: tuple) -> None:
    try:
        ours = e.eval(row)
    except EvalError:
        ours = EvalError
    theirs = _duck_value(duck, e, row)
    if ours is EvalError:
        if theirs is None and _null_literal(e):
            return  # DuckDB folds NULL + x without evaluating x; PostgreSQL evaluates x, as we do
        if _null_test(e):
            return  # DuckDB decides (a * a) IS NULL from a alone; PostgreSQL evaluates a * a
        assert isinstance(theirs, type), f"{e} on {row}: DuckDB gives {theirs!r}"
    else:
        assert ours == theirs, f"{e} on {row}"


def test_float_values_print_like_postgres() -> None:
    assert Cast(lit(2.0), TEXT).eval(()) == "2"
    assert Cast(Lit(1.5, FLOAT8), TEXT).eval(()) == "1.5"
