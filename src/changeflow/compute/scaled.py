"""Numerics as scaled 64-bit integers: ``+``, ``-`` and ``*`` of decimals, and their rounding
to a column's scale, on the decimals' unscaled values where they fit an int64.

Arrow's decimal kernels work digit-wide, and the columnar evaluator's checks (that a result
fits) each read the whole column. Here a decimal128
column whose values fit an int64 (19 digits, which the rows keep exactly) is read as int64s in
numpy, brought to the fewest decimal places that hold them all (``12.3400000000`` at scale 10
is ``1234`` at scale 2), and computed on with checked int64 kernels. A result is the decimal
kernels' own, value and scale (a product's scale is the sum of its operands'); the arrays made
here remember their int64 form, so the next operation (the output's rounding to its column's
scale) starts from it. Where a value does not fit, these functions return None and the caller
takes the decimal kernels.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

Value = pa.Array | pa.Scalar
_MAX_SCALE = 38  # a decimal128 holds the results
_INT64 = 2**63


@dataclass
class Ints:
    """Decimals as ``values / 10**scale``: int64 values (0 where NULL), and where each is
    valid (None: all are); or one value for a scalar."""

    values: np.ndarray | int | None
    valid: np.ndarray | None
    scale: int

    @property
    def scalar(self) -> bool:
        return not isinstance(self.values, np.ndarray)


_KNOWN: dict[int, tuple[weakref.ref, Ints]] = {}  # the int64 form of the arrays made here


def _remember(array: pa.Array, ints: Ints) -> pa.Array:
    key = id(array)
    _KNOWN[key] = (weakref.ref(array, lambda _: _KNOWN.pop(key, None)), ints)
    return array


def unscaled(v: Value) -> Ints | None:
    """A decimal's values as int64s at the fewest places that hold them all, or None where one
    does not fit an int64."""
    if not pa.types.is_decimal(v.type):
        return None
    known = _KNOWN.get(id(v))
    if known is not None and known[0]() is v:
        return known[1]
    scale = v.type.scale
    if isinstance(v, pa.Scalar):
        x = v.as_py()
        if x is None:
            return Ints(None, None, 0)
        sign, digits, exponent = x.as_tuple()
        n = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        places = -int(exponent)
        if places < 0:
            n, places = n * 10**-places, 0
        while places and n % 10 == 0:
            n, places = n // 10, places - 1
        return Ints(n, None, places) if -_INT64 <= n < _INT64 else None
    if v.type.byte_width != 16:
        return None
    words = np.frombuffer(v.buffers()[1], np.int64)[2 * v.offset : 2 * (v.offset + len(v))]
    low, high = words[0::2], words[1::2]
    valid = None
    if v.null_count:
        valid = v.is_valid().to_numpy(zero_copy_only=False)
        low, high = np.where(valid, low, 0), np.where(valid, high, 0)
    if not (high == (low >> 63)).all():
        values = _divided(low.view(np.uint64), high, scale)
        if values is None:
            return None
        values, scale = values
        return _ints(values, valid, scale)
    return _ints(np.array(low, np.int64), valid, scale)


def _ints(values: np.ndarray, valid: np.ndarray | None, scale: int) -> Ints:
    """``values`` at ``scale`` with their common trailing zeros dropped (no more than the
    binary ones, which one OR of them all tells)."""
    bits = int(np.bitwise_or.reduce(values)) if len(values) else 0
    twos = (bits & -bits).bit_length() - 1 if bits else scale
    drop = min(scale, twos, 18)
    while drop and (values % 10**drop).any():
        drop -= 1
    if drop:
        values = values // 10**drop
    return Ints(values, valid, scale - drop)


def _divided(low: np.ndarray, high: np.ndarray, scale: int) -> tuple[np.ndarray, int] | None:
    """128-bit values (low and high words) divided by the largest power of ten (at most
    ``scale``, and 18) that leaves int64s, or None: ``v / 10**k`` is ``(v >> k) / 5**k``, and
    an exact division by an odd number is a multiplication by its inverse modulo 2**64; the
    quotients are multiplied back to confirm it (no division anywhere)."""
    bits = int(np.bitwise_or.reduce(low))
    top = min(scale, 18, (bits & -bits).bit_length() - 1 if bits else 18)
    for k in range(top, max(top - 3, 0), -1):
        shifted = (low >> np.uint64(k)) | (high.view(np.uint64) << np.uint64(64 - k))
        values = (shifted * np.uint64(pow(5**k, -1, 2**64))).view(np.int64)
        back_low, back_high = _times(values, 10**k)
        if (back_low == low).all() and (back_high == high).all():
            return values, scale - k
    return None


def _times(values: np.ndarray, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """``values * factor`` (``factor`` below 2**63) as 128-bit low (unsigned) and high
    words, from 32-bit halves."""
    negative = values < 0
    magnitude = np.where(negative, -values, values).view(np.uint64)  # -2**63 gives 2**63
    half, mask = np.uint64(32), np.uint64(0xFFFFFFFF)
    low_m, high_m = magnitude & mask, magnitude >> half
    low_f, high_f = np.uint64(factor & 0xFFFFFFFF), np.uint64(factor >> 32)
    p0, p1, p2 = low_m * low_f, low_m * high_f, high_m * low_f
    middle = (p0 >> half) + (p1 & mask) + (p2 & mask)
    low = (p0 & mask) | (middle << half)
    high = high_m * high_f + (p1 >> half) + (p2 >> half) + (middle >> half)
    negated_low = ~low + np.uint64(1)
    negated_high = ~high + (low == 0).astype(np.uint64)
    low = np.where(negative, negated_low, low)
    high = np.where(negative, negated_high, high)
    return low, high.view(np.int64)


def decimal(ints: Ints, kind: pa.Decimal128Type) -> Value | None:
    """``ints`` as decimals of ``kind`` (its scale at least theirs), or None where a value does
    not fit its precision."""
    up = kind.scale - ints.scale
    assert up >= 0
    if ints.scalar:
        if ints.values is None:
            return pa.scalar(None, kind)
        n = int(ints.values) * 10**up
        if abs(n) >= 10**kind.precision:
            return None
        return pa.scalar(Decimal(f"{n}E-{kind.scale}"), kind)
    values = ints.values
    assert isinstance(values, np.ndarray)
    n = len(values)
    low, high = _bounds(values)
    if max(-low, high) * 10**up >= 10**kind.precision:
        return None
    fits = 10**up < _INT64 and max(-low, high) * 10**up < _INT64
    words = np.empty((n, 2), np.int64)
    words[:, 0] = values * 10**up if fits else values
    words[:, 1] = words[:, 0] >> 63
    validity = None
    nulls = 0
    if ints.valid is not None:
        validity = pa.array(ints.valid).buffers()[1]
        nulls = n - int(ints.valid.sum())
    at = kind if fits else pa.decimal128(kind.precision, ints.scale)
    out = pa.Array.from_buffers(at, n, [validity, pa.py_buffer(words)], null_count=nulls)
    return _remember(out if fits else out.cast(kind), ints)


def _bounds(values: np.ndarray) -> tuple[int, int]:
    if not len(values):
        return 0, 0
    return int(values.min()), int(values.max())


def arith(op: str, a: Value, b: Value) -> Value | None:
    """``a op b`` (``+``, ``-``, ``*``) of two decimals as the decimal kernels give it (at
    their scale, in a decimal128), or None where a value does not fit an int64."""
    x, y = unscaled(a), unscaled(b)
    if x is None or y is None:
        return None
    scale = a.type.scale + b.type.scale if op == "*" else max(a.type.scale, b.type.scale)
    if scale > _MAX_SCALE:
        return None
    if x.scalar and x.values is None or y.scalar and y.values is None:
        kind = pa.decimal128(38, scale)
        if x.scalar and y.scalar:
            return pa.scalar(None, kind)
        return pa.nulls(len(a) if isinstance(a, pa.Array) else len(b), kind)
    try:
        if op == "*":
            out = Ints(_checked(pc.multiply_checked, x.values, y.values), None, x.scale + y.scale)
        else:
            common = max(x.scale, y.scale)
            xs, ys = _at(x, common), _at(y, common)
            kernel = pc.add_checked if op == "+" else pc.subtract_checked
            out = Ints(_checked(kernel, xs, ys), None, common)
    except (pa.ArrowInvalid, OverflowError):
        return None
    out.valid = _both(x.valid, y.valid)
    if isinstance(out.values, np.ndarray) and out.valid is not None:
        out.values = np.where(out.valid, out.values, 0)
    return decimal(out, pa.decimal128(38, scale))


def _at(x: Ints, scale: int) -> np.ndarray | int:
    """``x``'s values at a scale at least its own (an error where one overflows)."""
    unit = 10 ** (scale - x.scale)
    if unit == 1:
        return x.values
    if unit >= _INT64:
        raise OverflowError
    return _checked(pc.multiply_checked, x.values, unit)


def _checked(kernel, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray | int:
    out = kernel(
        pa.array(a) if isinstance(a, np.ndarray) else pa.scalar(a, pa.int64()),
        pa.array(b) if isinstance(b, np.ndarray) else pa.scalar(b, pa.int64()),
    )
    return out.to_numpy() if isinstance(out, pa.Array) else out.as_py()


def _both(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    return a if b is None else a & b


def round_half_even(v: pa.Array, kind: pa.DataType, below: int) -> pa.Array | None:
    """``v`` rounded half to even to ``kind``'s scale, as a ``kind`` array; None where its
    values do not fit an int64 at that scale or ``kind``'s precision, or one is not (in
    magnitude) below ``below``."""
    if not pa.types.is_decimal128(kind) or isinstance(v, pa.Scalar):
        return None
    ints = unscaled(v)
    if ints is None:
        return None
    low, high = _bounds(ints.values)
    if max(-low, high) >= below * 10**ints.scale:
        return None
    drop = ints.scale - kind.scale
    if drop > 18:
        return None
    if drop > 0:
        unit = 10**drop
        q, r = np.divmod(ints.values, unit)  # floor: r in [0, unit), so a tie is r = unit / 2
        q += (2 * r > unit) | ((2 * r == unit) & (q % 2 == 1))
        ints = Ints(q, ints.valid, kind.scale)
    out = decimal(ints, kind)
    assert out is None or isinstance(out, pa.Array)
    return out
