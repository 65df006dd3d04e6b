"""``sqrt``, ``exp``, ``ln`` and ``power`` of numerics, as PostgreSQL's numeric functions give
them: exact to a scale of at least 16 significant digits (and no fewer decimals than the
argument shows), rounded half away from zero (``sqrt(2.0)`` is 1.414213562373095,
``power(3.10, 2)`` 9.6100000000000000). Called with a double precision they are the float
functions; with integers only, too, as PostgreSQL picks its double precision forms then."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING, Any

from changeflow.compute.functions.base import Rule
from changeflow.compute.functions.overloads import Overloads, same
from changeflow.compute.types import FLOAT8, NUMERIC
from changeflow.errors import EvalError

if TYPE_CHECKING:
    from collections.abc import Callable

MIN_SIG_DIGITS = 16  # PostgreSQL's NUMERIC_MIN_SIG_DIGITS
MAX_SCALE = 1000  # NUMERIC_MAX_DISPLAY_SCALE
MAX_WEIGHT = 131072  # the decimal digits a numeric holds before its point
MAX_EXP = 6000  # exp's argument from which it overflows (or is 0): NUMERIC_MAX_RESULT_SCALE * 3


def float_or_numeric(name: str, arity: int) -> Rule:
    """PostgreSQL's two signatures of ``name``: of doubles, or of numerics (integers take the
    double's, a numeric argument the numeric's)."""
    return Overloads(name, same(FLOAT8, NUMERIC, arity=arity))


def numeric_form(
    exact: Callable[..., Decimal], inexact: Callable[..., float]
) -> Callable[..., Any]:
    """``exact`` of Decimals where an argument is one and none is a float, else ``inexact``."""

    def call(*args: Any) -> Any:
        if any(isinstance(a, Decimal) for a in args) and not any(
            isinstance(a, float) for a in args
        ):
            return exact(*(Decimal(a) for a in args))
        return inexact(*(float(a) for a in args))

    return call


def places(x: Decimal) -> int:
    """The decimals ``x`` shows (its display scale)."""
    exponent = x.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _rounded(value: Decimal, scale: int) -> Decimal:
    value = value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    return abs(value) if value.is_zero() else value


def _scale(scale: int, *args: Decimal) -> int:
    return min(max(scale, *(places(a) for a in args), 0), MAX_SCALE)


def _context(digits: int) -> Any:
    """A decimal context of ``digits`` significant digits and guard digits."""
    return localcontext(prec=max(digits, 1) + 20, Emax=10 * MAX_WEIGHT, Emin=-10 * MAX_WEIGHT)


def sqrt_numeric(x: Decimal) -> Decimal:
    if x.is_nan():
        return x
    if x < 0:
        raise EvalError("cannot take square root of a negative number", sqlstate="2201F")
    weight = 0 if x.is_zero() else x.adjusted() // 4  # of its first base-10000 digit
    scale = _scale(MIN_SIG_DIGITS - (2 * weight + 1), x)
    with _context(scale + max(x.adjusted(), 0) // 2 + 1):
        return _rounded(x.sqrt(), scale)


def exp_numeric(x: Decimal) -> Decimal:
    if x.is_nan():
        return x
    weight = float(x) * 0.434294481903252  # the result's decimal weight, about
    scale = _scale(MIN_SIG_DIGITS - int(max(min(weight, 2 * MAX_SCALE), -2 * MAX_SCALE)), x)
    if abs(x) >= MAX_EXP:
        if x > 0:
            raise EvalError("value overflows numeric format", sqlstate="22003")
        return _rounded(Decimal(0), scale)
    with _context(scale + max(int(weight), 0) + 1):
        return _rounded(x.exp(), scale)


def ln_weight(x: Decimal) -> int:
    """The decimal weight PostgreSQL estimates for ``ln(x)`` (``estimate_ln_dweight``)."""
    if Decimal("0.9") <= x <= Decimal("1.1"):
        return 0 if x == 1 else (x - 1).adjusted()
    with localcontext() as ctx:
        ctx.prec = 20
        return int(math.log10(abs(float(x.ln()))))


def ln_numeric(x: Decimal) -> Decimal:
    if x.is_nan():
        return x
    if x <= 0:
        what = "zero" if x == 0 else "a negative number"
        raise EvalError(f"cannot take logarithm of {what}", sqlstate="2201E")
    scale = _scale(MIN_SIG_DIGITS - ln_weight(x), x)
    with _context(scale + 8):
        return _rounded(x.ln(), scale)


def power_numeric(base: Decimal, exp: Decimal) -> Decimal:
    if base.is_nan() or exp.is_nan():
        one = (base == 1 and not base.is_nan()) or (exp == 0 and not exp.is_nan())
        return Decimal(1) if one else Decimal("NaN")
    if base == 0 and exp < 0:
        raise EvalError("zero raised to a negative power is undefined", sqlstate="2201F")
    integral = exp == exp.to_integral_value()
    if base < 0 and not integral:
        raise EvalError(
            "a negative number raised to a non-integer power yields a complex result",
            sqlstate="2201F",
        )
    if base == 0:
        return _rounded(Decimal(1) if exp == 0 else Decimal(0), _scale(MIN_SIG_DIGITS, base))
    log10 = float(exp) * math.log10(abs(float(base)))
    if log10 >= MAX_WEIGHT:
        raise EvalError("value overflows numeric format", sqlstate="22003")
    if integral and abs(exp) <= 2**31 - 1:
        scale = _scale(MIN_SIG_DIGITS, base)
        with _context(scale + max(int(log10), 0) + 1):
            return _rounded(base ** int(exp), scale)
    # the result's weight as PostgreSQL estimates it: ln(base) to about 8 digits, times exp
    rough = max(8 - ln_weight(base), 0)
    with _context(rough + 8):
        ln_num = float(_rounded(_rounded(base.ln(), rough) * exp, rough))
    if abs(ln_num) > MAX_EXP * 3.01 / 3:  # (with PostgreSQL's fuzz)
        if ln_num > 0:
            raise EvalError("value overflows numeric format", sqlstate="22003")
        return _rounded(Decimal(0), MAX_SCALE)
    scale = _scale(MIN_SIG_DIGITS - int(ln_num * 0.434294481903252), base, exp)
    with _context(scale + max(int(log10), 0) + 1):
        return _rounded((exp * base.ln()).exp(), scale)
