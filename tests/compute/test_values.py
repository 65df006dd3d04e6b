"""Arrow columns as Python values: the fast conversions give exactly what ``to_pylist`` gives."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from changeflow.compute.values import python_values


@st.composite
def decimal_columns(draw: st.DrawFn) -> pa.ChunkedArray:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    bound = 10**precision - 1
    units = st.integers(-bound, bound).map(lambda v: Decimal(f"{v}e-{scale}"))
    chunks = draw(st.lists(st.lists(st.none() | units, max_size=20), min_size=1, max_size=3))
    return pa.chunked_array(chunks, pa.decimal128(precision, scale))


dates = st.dates(date(1, 1, 1), date(9999, 12, 31))


@given(decimal_columns())
def test_decimals_are_to_pylists(column: pa.ChunkedArray) -> None:
    got, want = python_values(column), column.to_pylist()
    assert got == want
    assert list(map(str, got)) == list(map(str, want))  # the same scale, not only equal


@given(st.lists(st.lists(dates, max_size=30), min_size=1, max_size=3), st.booleans())
def test_dates_are_to_pylists(chunks: list[list[date]], with_null: bool) -> None:
    if with_null:
        chunks = [*chunks, [None]]
    column = pa.chunked_array(chunks, pa.date32())
    assert python_values(column) == column.to_pylist()


def test_other_types_go_through_to_pylist() -> None:
    column = pa.chunked_array([[1, None, 3]], pa.int64())
    assert python_values(column) == [1, None, 3]
