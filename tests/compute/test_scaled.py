"""Numerics as scaled int64s against Python's exact decimals: ``+ - *`` give the decimal
kernels' values and scales, rounding to a column's scale is half to even, and a value that
does not fit an int64 is left to the decimal kernels (None)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Context, Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.compute import scaled
from changeflow.compute.operators.batch import Batch
from changeflow.compute.types import NUMERIC

EXACT = Context(prec=200)
BOUND = 2**63


@st.composite
def columns(draw: st.DrawFn) -> tuple[list[Decimal | None], int]:
    """Decimals at one scale, their unscaled values small, near the int64 bounds or beyond."""
    scale = draw(st.integers(0, 12))
    places = draw(st.integers(0, scale))  # the decimals the values really have
    step = 10 ** (scale - places)
    units = st.one_of(
        st.integers(-1000, 1000),
        st.integers(-(BOUND // step), BOUND // step),
        st.sampled_from([BOUND // step, -(BOUND // step), BOUND // step - 1, 0]),
    )
    values = draw(st.lists(st.one_of(st.none(), units), min_size=1, max_size=8))
    return [None if v is None else Decimal(v * step).scaleb(-scale) for v in values], scale


def _array(values: list[Decimal | None], scale: int) -> pa.Array:
    return pa.array(values, pa.decimal128(38, scale))


def _fits(values: list[Decimal | None], scale: int) -> bool:
    return all(v is None or -BOUND <= v.scaleb(scale) < BOUND for v in values)


def _places(values: list[Decimal | None], scale: int) -> int:
    """The fewest places (no fewer than ``scale - 18``) that hold every value."""
    places = scale
    while places > max(scale - 18, 0) and all(
        v is None or v == v.quantize(Decimal(1).scaleb(1 - places), context=EXACT) for v in values
    ):
        places -= 1
    return places


def _declines(xs: list, sa: int, ys: list, sb: int, op: str, want: list) -> bool:
    """Whether an int64 would overflow on the way: the operands at their fewest places, the
    result at the scale it is computed at."""
    px, py = _places(xs, sa), _places(ys, sb)
    if not _fits(xs, px) or not _fits(ys, py):
        return True
    if op == "*":
        return not _fits(want, px + py)
    common = max(px, py)
    return not (_fits(xs, common) and _fits(ys, common) and _fits(want, common))


@settings(max_examples=300, deadline=None)
@given(a=columns(), b=columns(), op=st.sampled_from("+-*"), scalar=st.booleans())
def test_arith_is_exact_or_declines(a, b, op, scalar) -> None:
    (xs, sa), (ys, sb) = a, b
    n = min(len(xs), len(ys))
    xs, ys = xs[:n], ys[:n]
    left = _array(xs, sa)
    right = _array(ys[:1], sb)[0] if scalar else _array(ys, sb)
    got = scaled.arith(op, left, right)
    if scalar:
        ys = [ys[0]] * n
    want_scale = sa + sb if op == "*" else max(sa, sb)
    exact = {"+": EXACT.add, "-": EXACT.subtract, "*": EXACT.multiply}[op]
    want = [None if x is None or y is None else exact(x, y) for x, y in zip(xs, ys, strict=True)]
    if got is None:
        zeros = [exact(x or 0, y or 0) for x, y in zip(xs, ys, strict=True)]  # NULLs hold 0
        assert _declines(xs, sa, ys[:1] if scalar else ys, sb, op, zeros)
        return
    assert got.type == pa.decimal128(38, want_scale)
    assert got.to_pylist() == want
    again = scaled.unscaled(got)  # what the array remembers is its value
    assert (
        again is not None
        and [
            None if v is None else Decimal(int(i)).scaleb(-again.scale)
            for v, i in zip(want, again.values, strict=True)
        ]
        == want
    )


@settings(max_examples=300, deadline=None)
@given(a=columns(), target=st.integers(0, 12), precision=st.sampled_from([38, 18, 12]))
def test_rounding_is_half_to_even(a, target, precision) -> None:
    values, scale = a
    kind = pa.decimal128(precision, target)
    got = scaled.round_half_even(_array(values, scale), kind, 10**17)
    unit = Decimal(1).scaleb(-target)
    want = [None if v is None else v.quantize(unit, ROUND_HALF_EVEN, EXACT) for v in values]
    if got is None:
        too_big = any(v is not None and abs(v) >= 10**17 for v in values)
        wide = any(v is not None and abs(v) >= Decimal(10) ** (precision - target) for v in want)
        assert too_big or wide or not _fits(values, scale)
        return
    assert got.type == kind and got.to_pylist() == want


@pytest.mark.parametrize(
    ("value", "target", "want"),
    [("0.125", 2, "0.12"), ("0.135", 2, "0.14"), ("-2.5", 0, "-2"), ("-3.5", 0, "-4")],
)
def test_ties_go_to_the_even_neighbour(value: str, target: int, want: str) -> None:
    got = scaled.round_half_even(_array([Decimal(value)], 10), pa.decimal128(38, target), 10**17)
    assert got is not None and got.to_pylist() == [Decimal(want)]


def test_values_beyond_an_int64_are_left_to_the_decimal_kernels() -> None:
    wide = _array([Decimal("12345678901234567890123.45")], 2)
    assert scaled.unscaled(wide) is None
    assert scaled.arith("+", wide, wide) is None
    assert scaled.round_half_even(wide, pa.decimal128(38, 1), 10**30) is None


@settings(max_examples=200, deadline=None)
@given(a=columns())
def test_a_batch_rounds_its_numerics_to_the_column_as_the_rows_do(a) -> None:
    """The output frame of a batch (a Map's ``price * (1 - disc)`` at scale 20, say) holds each
    numeric rounded half to even to its column's scale; None (the rows) from ``10**17`` on."""
    values, scale = a
    n = len(values)
    column = _array(values, scale + 11)  # the scale of a product, say
    ones = pa.array([1] * n, pa.int64())
    batch = Batch([column], pa.array([0] * n, pa.int64()), ones, (NUMERIC,))
    got = batch.table(pa.schema([("x", pa.decimal128(38, 10))]))
    if any(v is not None and abs(v) >= 10**17 for v in values):
        assert got is None
        return
    unit = Decimal(1).scaleb(-10)
    want = [None if v is None else v.quantize(unit, ROUND_HALF_EVEN, EXACT) for v in values]
    assert got is not None and got.column("x").to_pylist() == want


@settings(max_examples=300, deadline=None)
@given(a=columns(), extra=st.integers(0, 19))
def test_wide_decimals_are_read_at_their_fewest_places(a, extra) -> None:
    """A column whose unscaled values pass an int64 at its scale (a product at scale 20) is
    read as int64s where a power of ten divides them all; the values are the column's."""
    values, scale = a
    ints = scaled.unscaled(_array(values, scale + extra))
    if ints is None:
        return
    assert isinstance(ints.values, np.ndarray)
    got = [Decimal(int(i)).scaleb(-ints.scale, EXACT) for i in ints.values]
    assert [g if v is not None else None for g, v in zip(got, values, strict=True)] == values


def test_a_product_at_scale_20_is_read_at_its_own_places() -> None:
    wide = _array([Decimal("12345.678"), Decimal("-9.5"), None, Decimal(0)], 20)
    ints = scaled.unscaled(wide)
    assert ints is not None and ints.scale == 3 and ints.values.tolist() == [12345678, -9500, 0, 0]
    negative = _array([Decimal("-92233720368547.75808")], 5)  # -2**63 at scale 5
    assert scaled.unscaled(negative).values.tolist() == [-(2**63)]
