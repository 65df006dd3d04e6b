"""``real`` (float4) values, held as Python floats whose values are float32s: rounding a
double to one (with PostgreSQL's overflow and underflow errors), reading one from text, and
printing a double or a real as PostgreSQL 15 does (the shortest digits that read back)."""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import numpy as np

from changeflow.compute.types import FLOAT8, SqlType
from changeflow.errors import EvalError


def to_float4(value: float) -> float:
    """The float32 nearest a float (a ``real``'s value, held as a Python float); 22003 for a
    finite value beyond real's range (overflow) or a non-zero one that rounds to zero
    (underflow), as PostgreSQL."""
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.inf
    if math.isinf(single) and not math.isinf(value):
        raise EvalError("value out of range: overflow", sqlstate="22003")
    if single == 0 and value != 0:
        raise EvalError("value out of range: underflow", sqlstate="22003")
    return single


def float4_from_text(s: str, text: str) -> float:
    """A real read from text; 22003 (as PostgreSQL's ``"1e39" is out of range for type real``)
    for a finite number beyond its range."""
    value = float(s)
    if math.isinf(value) and "inf" not in s.lower():
        value = math.copysign(3.5e38, value)  # beyond real's range too
    try:
        return to_float4(value)
    except EvalError:
        raise EvalError(f'"{text}" is out of range for type real', sqlstate="22003") from None


def float_text(f: float, kind: SqlType = FLOAT8) -> str:
    """A double (a real) as PostgreSQL prints it: the shortest digits that read back as the
    same double (float32), an exponent from 1e15 (1e6) on and below 1e-4."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    d = Decimal(repr(f) if kind == FLOAT8 else _float4_digits(f))
    exponent = d.adjusted()
    if -4 <= exponent < (15 if kind == FLOAT8 else 6):
        text = format(d, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    sign, digits, _ = d.as_tuple()
    mantissa = "".join(map(str, digits)).rstrip("0") or "0"
    body = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
    return f"{'-' if sign else ''}{body}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def _float4_digits(f: float) -> str:
    """The fewest significant digits that read back as the float32 ``f``, in scientific
    notation, as PostgreSQL's Ryu finds them: numpy's shortest (Dragon4), unless it lies on a
    bound halfway to a neighbouring float32 (that reads back by ties-to-even only, which
    PostgreSQL does not count on), then the fewest digits strictly inside."""
    text = np.format_float_scientific(np.float32(f), unique=True)
    if not _on_bound(Decimal(text), f):
        return text
    for places in range(len(text.split("e")[0].lstrip("-").replace(".", "")), 9):
        text = f"{f:.{places}e}"
        if struct.pack("f", float(text)) == struct.pack("f", f) and not _on_bound(Decimal(text), f):
            return text
    return f"{f:.8e}"


def _on_bound(d: Decimal, f: float) -> bool:
    """Is ``d`` exactly halfway between the float32 ``f`` and its neighbour on ``d``'s side?"""
    near = float(d)
    if near == f:
        return False
    bits = struct.unpack("I", struct.pack("f", f))[0]
    away = (near > f) == (f >= 0)  # towards a larger magnitude
    neighbour = struct.unpack("f", struct.pack("I", bits + (1 if away else -1)))[0]
    half = (f + neighbour) / 2  # exact: a float32's bits and one more
    return near == half and d == Decimal(half)
