"""The columnar evaluation of scalar expressions (Arrow kernels) against the row evaluator, on
random typed expressions and columns with NULLs, overflows and zeros."""

from __future__ import annotations

import math
from datetime import date
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.compute import columnar as C
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
    Neg,
    Not,
    NullIf,
    Or,
    lit,
)
from changeflow.compute.functions import FUNCTIONS, Func
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
    SqlType,
)
from changeflow.errors import EvalError

KINDS = [INT2, INT4, INT8, NUMERIC, FLOAT8, TEXT, DATE, BOOL]
COLS = [Col(i, k, name=f"c{i}") for i, k in enumerate(KINDS)]

INT_BOUNDS = {INT2: 2**15, INT4: 2**31, INT8: 2**63}


def _int_values(kind: SqlType) -> st.SearchStrategy[int | None]:
    bound = INT_BOUNDS[kind]
    return st.one_of(
        st.none(),
        st.integers(-5, 5),
        st.sampled_from([bound - 1, -bound, bound // 2, -(bound // 2) - 1]),
        st.integers(-bound, bound - 1),
    )


_decimal = st.decimals(
    min_value=Decimal("-1e8"), max_value=Decimal("1e8"), places=10, allow_nan=False
)
VALUES = {
    INT2: _int_values(INT2),
    INT4: _int_values(INT4),
    INT8: _int_values(INT8),
    NUMERIC: st.one_of(st.none(), _decimal, st.sampled_from([Decimal(0), Decimal("0.5")])),
    FLOAT8: st.one_of(
        st.none(),
        st.floats(allow_nan=True, allow_infinity=False),
        st.sampled_from([0.0, 1e308, -1e308, 0.5]),
    ),
    TEXT: st.one_of(st.none(), st.text("ab%_\\\n", max_size=4)),
    DATE: st.one_of(st.none(), st.dates(date(1, 1, 1), date(9999, 12, 31))),
    BOOL: st.one_of(st.none(), st.booleans()),
}


def _tree(kind: SqlType, depth: int) -> st.SearchStrategy[Expr]:
    """Random expressions of ``kind`` over the columns."""
    leaves: list[st.SearchStrategy[Expr]] = [st.just(COLS[KINDS.index(kind)])]
    leaves.append(VALUES[kind].map(lambda v, k=kind: Lit(v, k)))
    leaf = st.one_of(*leaves)
    if depth == 0:
        return leaf
    sub = _tree(kind, depth - 1)
    options = [leaf]
    if kind.integer:
        small = st.sampled_from([INT2, INT4, INT8]).flatmap(lambda k: _tree(k, depth - 1))
        options += [
            st.builds(Arith, st.sampled_from("+-*/%"), sub, sub).filter(lambda e: e.type == kind),
            st.builds(Neg, sub),
            st.builds(lambda a: Cast(a, kind), small),
            st.builds(lambda a, b: Arith("-", a, b), _tree(DATE, 0), _tree(DATE, 0)).filter(
                lambda e: e.type == kind
            ),
        ]
    if kind == NUMERIC:
        ints = st.sampled_from([INT4, INT8]).flatmap(lambda k: _tree(k, depth - 1))
        options += [
            st.builds(Arith, st.sampled_from("+-*"), sub, st.one_of(sub, ints)),
            st.builds(Neg, sub),
            st.builds(lambda a: Cast(a, NUMERIC), ints),
        ]
    if kind == FLOAT8:
        ints = _tree(INT4, depth - 1)
        options += [
            st.builds(Arith, st.sampled_from("+-*/"), sub, st.one_of(sub, ints)),
            st.builds(Neg, sub),
            st.builds(lambda a: Cast(a, FLOAT8), ints),
        ]
    if kind == DATE:
        options.append(
            st.builds(Arith, st.sampled_from("+-"), sub, _tree(INT4, depth - 1)).filter(
                lambda e: e.type == DATE
            )
        )
    if kind == BOOL:
        compared = st.sampled_from(KINDS).flatmap(
            lambda k: st.tuples(_tree(k, depth - 1), _tree(_peer(k), depth - 1))
        )
        options += [
            st.builds(
                lambda ab, op: Cmp(op, *ab), compared, st.sampled_from(["=", "<>", "<", ">="])
            ),
            st.builds(lambda a, b: And((a, b)), sub, sub),
            st.builds(lambda a, b: Or((a, b)), sub, sub),
            st.builds(Not, sub),
            st.builds(IsNull, _tree(INT4, depth - 1), st.booleans()),
            st.builds(
                lambda a, items, neg: InList(a, tuple(items), neg),
                _tree(INT4, depth - 1),
                st.lists(_tree(INT8, 0), min_size=1, max_size=3),
                st.booleans(),
            ),
            st.builds(
                lambda p, neg: Like(COLS[5], lit(p), neg),
                st.text("ab%_", max_size=3),
                st.booleans(),
            ),
            st.builds(lambda a: Cast(a, BOOL), _tree(INT4, depth - 1)),
        ]
    options += [
        st.builds(lambda c, a, b: Case(((c, a),), b), _tree(BOOL, depth - 1), sub, sub),
        st.builds(lambda a, b: Coalesce((a, b)), sub, sub),
        st.builds(NullIf, sub, sub),
    ]
    return st.one_of(*options)


def _peer(kind: SqlType) -> SqlType:
    """A type comparable with ``kind`` (numerics mix)."""
    return {INT2: INT8, INT4: NUMERIC, INT8: INT4, NUMERIC: INT2, FLOAT8: INT4}.get(kind, kind)


exprs = st.sampled_from(KINDS).flatmap(lambda k: _tree(k, 2))
rows = st.lists(st.tuples(*(VALUES[k] for k in KINDS)), min_size=1, max_size=8)


def _columns(data: list[tuple[Any, ...]]) -> list[pa.Array]:
    return [pa.array([r[i] for r in data], k.arrow) for i, k in enumerate(KINDS)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b) or (a == b and {type(a), type(b)} <= {int, bool})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(exprs, rows)
def test_columnar_equals_rows(e: Expr, data: list[tuple[Any, ...]]) -> None:
    """Where the kernels answer, they give the rows' values; where a row fails, they defer to
    the rows (:class:`Rows`), never return a value."""
    try:
        expected: list[Any] | EvalError = [e.eval(row) for row in data]
    except EvalError as error:
        expected = error
    try:
        got = C.evaluate(e, _columns(data), len(data))
    except C.Rows:
        return
    except EvalError as error:  # a row-by-row fallback (no kernel) raises as the rows do
        assert isinstance(expected, EvalError), (str(e), error)
        assert (str(error), error.sqlstate) == (str(expected), expected.sqlstate)
        return
    assert not isinstance(expected, EvalError), (str(e), expected)
    values = C.python_values(got)
    assert len(values) == len(data)
    for g, x in zip(values, expected, strict=True):
        assert _same(g, x), (str(e), g, x)


def test_decimals_too_wide_to_compare_on_kernels_go_to_the_rows() -> None:
    """A product of two numerics against a numeric may have no common Arrow decimal (over 76
    digits): the kernels defer to the rows instead of failing."""
    square = Arith("*", COLS[3], COLS[3])
    e = NullIf(square, Case(((COLS[7], COLS[3]),), COLS[3]))
    for data in ([(None,) * len(KINDS)], [ROW]):
        try:
            got = C.python_values(C.evaluate(e, _columns(data), len(data)))
        except C.Rows:
            continue
        assert got == [e.eval(row) for row in data]


def _kernel(e: Expr, data: list[tuple[Any, ...]]) -> list[Any]:
    """``e`` by the kernels alone (no fallback to the rows)."""
    cols = _columns(data)
    out = C.full(C._eval(e, C._Cx(cols, len(data), None)), len(data), e.type)
    return C.python_values(out)


ROW = (7, 2**31 - 1, None, Decimal("1.5"), 2.0, "a\nb", date(2024, 1, 31), True)


def test_kernels_cover_the_common_forms() -> None:
    """These run on kernels (no row fallback), with the rows' values."""
    cases: list[tuple[Expr, Any]] = [
        (Arith("+", COLS[0], lit(1)), 8),
        (Arith("/", lit(-7), lit(2)), -3),
        (Arith("%", lit(-7), lit(2)), -1),
        (Arith("*", COLS[3], Arith("-", lit(1), Lit(Decimal("0.05"), NUMERIC))), Decimal("1.425")),
        (Arith("+", COLS[6], lit(1)), date(2024, 2, 1)),
        (Cmp("<", COLS[0], COLS[3]), False),
        (And((Cmp("=", COLS[0], lit(7)), IsNull(COLS[2]))), True),
        (Or((Cmp("=", COLS[2], lit(1)), Lit(False, BOOL))), None),
        (InList(COLS[0], (lit(1), Lit(None, INT4))), None),
        (Like(COLS[5], lit("a_b")), True),
        (Case(((Cmp(">", COLS[0], lit(5)), lit("big")),), lit("small")), "big"),
        (Coalesce((COLS[2], COLS[0])), 7),
        (NullIf(COLS[0], lit(7)), None),
        (Cast(COLS[0], FLOAT8), 7.0),
        (Cast(COLS[6], TIMESTAMP), ROW[6] and __import__("datetime").datetime(2024, 1, 31)),
    ]
    for e, want in cases:
        assert _kernel(e, [ROW]) == [want], str(e)
        assert e.eval(ROW) == want, str(e)


def test_failures_defer_to_the_rows() -> None:
    """Overflow, division by zero and a date out of range: the kernels do not answer."""
    for e in (
        Arith("+", COLS[1], lit(1)),
        Arith("/", COLS[0], lit(0)),
        Arith("+", COLS[6], lit(3_000_000)),
        Neg(Lit(-(2**31), INT4)),
    ):
        with pytest.raises(C.Rows):
            C.evaluate(e, _columns([ROW]), 1)
        with pytest.raises(EvalError):
            e.eval(ROW)


# A call of every function that has an Arrow form, over the columns (adding a form needs a case).
ARROW_CALLS = {
    "lower": (COLS[5],),
    "upper": (COLS[5],),
    "length": (COLS[5],),
    "char_length": (COLS[5],),
    "reverse": (COLS[5],),
    "textcat": (COLS[5], lit("é")),
    "abs": (COLS[1],),
}


ODD_ROW = (None, -(2**31), None, None, None, "ÄßİéA", None, None)


@settings(max_examples=100, deadline=None)
@given(rows, st.booleans())
def test_function_kernels_equal_the_rows(data: list[tuple[Any, ...]], odd: bool) -> None:
    """Each function's Arrow form, where it has one, against its meaning on Python values
    (non-ASCII case mapping and overflow are the rows' to tell)."""
    data = data + [ODD_ROW] if odd else data
    ran = 0
    with_arrow = {n for n, f in FUNCTIONS.items() if f.arrow is not None}
    assert with_arrow == set(ARROW_CALLS)
    for name, args in ARROW_CALLS.items():
        e = Func(name, args)
        try:
            expected: list[Any] | EvalError = [e.eval(row) for row in data]
        except EvalError as error:
            expected = error
        try:
            got = C.python_values(
                C.full(C._eval(e, C._Cx(_columns(data), len(data), None)), len(data), e.type)
            )
        except (C.Rows, C.NoKernel):
            continue
        ran += 1
        assert not isinstance(expected, EvalError), name
        assert got == expected, name
    assert odd or ran >= len(ARROW_CALLS) - 1  # ASCII text: all answer (abs may overflow)
