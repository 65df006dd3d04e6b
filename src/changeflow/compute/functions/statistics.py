"""The variance and standard deviation of a group from its count, sum and sum of squares, how
a view maintains them (as Materialize does): of numerics exactly, at PostgreSQL's scales
(its ``numeric_stddev_internal``); of doubles in double precision. The planner's own forms
(``var_samp_of`` …), not functions of pg_proc."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING, Any

from changeflow.compute.functions.base import F, Function, in_process
from changeflow.compute.functions.numeric_math import places
from changeflow.compute.scalars import NUMERIC_NAN, div_scale
from changeflow.compute.types import FLOAT8, NULLTYPE, NUMERIC, SqlType
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler

# the forms: (sample, square root) by name
FORMS = {
    "var_samp_of": (True, False),
    "var_pop_of": (False, False),
    "stddev_samp_of": (True, True),
    "stddev_pop_of": (False, True),
}


def _rule(kinds: tuple[SqlType, ...]) -> SqlType:
    """(count, sum, sum of squares), or (an array of the values): a numeric of numerics,
    else a double."""
    if len(kinds) == 1 and kinds[0].element in (NUMERIC, FLOAT8):
        return kinds[0].element  # type: ignore[return-value]
    if len(kinds) != 3 or not all(k.numeric or k is NULLTYPE for k in kinds):
        raise PlanError("no match", sqlstate="42883")
    return NUMERIC if NUMERIC in kinds[1:] else FLOAT8


def _rounded(value: Decimal, scale: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def numeric_spread(n: int, sx: Decimal, sxx: Decimal, sample: bool, root: bool) -> Any:
    """PostgreSQL's variance (``root``: standard deviation) of ``n`` numerics summing to
    ``sx`` whose squares sum to ``sxx``: NULL under two values for a sample's; the numerator
    ``n * sxx - sx * sx`` exact at twice ``sx``'s scale, divided at ``select_div_scale``'s
    scale, its square root at the same scale (0 where the numerator is not positive)."""
    if n == 0 or (sample and n <= 1):
        return None
    if not (sx.is_finite() and sxx.is_finite()):  # a NaN or an infinity among the values
        return NUMERIC_NAN
    rscale = places(sx) * 2
    digits = max(sx.adjusted(), sxx.adjusted(), 0) * 2 + rscale + len(str(n)) * 2 + 20
    with localcontext() as ctx:
        ctx.prec = digits
        numerator = _rounded(n * sxx - sx * sx, rscale)
    if numerator <= 0:
        return Decimal(0)
    denominator = Decimal(n * (n - 1) if sample else n * n)
    scale = div_scale(numerator, denominator)
    with localcontext() as ctx:
        ctx.prec = max(numerator.adjusted() - denominator.adjusted(), 0) + scale + 10
        variance = _rounded(numerator / denominator, scale)
    if not root:
        return variance
    with localcontext() as ctx:
        ctx.prec = max(variance.adjusted(), 0) + scale + 10
        return _rounded(variance.sqrt(), scale)


def double_spread(n: int, sx: float, sxx: float, sample: bool, root: bool) -> float | None:
    """The same of doubles, in double precision (the numerator 0 where rounding makes it
    negative)."""
    if n == 0 or (sample and n <= 1):
        return None
    variance = max(n * sxx - sx * sx, 0.0) / (n * (n - 1) if sample else n * n)
    return math.sqrt(variance) if root else variance


def _sums(values: list[Any]) -> tuple[int, Any, Any]:
    """The count, sum and sum of squares of ``values`` (NULLs left out), exact for numerics."""
    kept = [v for v in values if v is not None]
    if not kept:
        return 0, None, None
    with localcontext() as ctx:
        ctx.prec = 2 * max(len(str(v)) for v in kept) + len(str(len(kept))) + 20
        return len(kept), sum(kept), sum(v * v for v in kept)


def _impl(sample: bool, root: bool) -> Any:
    def spread(n: Any, sx: Any = None, sxx: Any = None) -> Any:
        if isinstance(n, list | tuple):  # the distinct values
            n, sx, sxx = _sums(n)
            if n == 0:
                return None
        if isinstance(sx, Decimal) or isinstance(sxx, Decimal):
            return numeric_spread(n, Decimal(sx), Decimal(sxx), sample, root)
        return double_spread(n, float(sx), float(sxx), sample, root)

    return spread


_WHY = "a numeric variance keeps PostgreSQL's scales in the process only"
_IN_PROCESS = in_process(_WHY)


def _spark(sample: bool, root: bool) -> Any:
    def build(cc: ExprCompiler, e: Func) -> Column:
        if build.why(e) is not None:  # type: ignore[attr-defined]
            return _IN_PROCESS(cc, e)
        n, sx, sxx = (cc.compile(a).cast("double") for a in e.args)
        numerator = F.greatest(n * sxx - sx * sx, F.lit(0.0))
        variance = numerator / (n * (n - 1) if sample else n * n)
        value = F.sqrt(variance) if root else variance
        return F.when(n > (1 if sample else 0), value)

    build.why = lambda e: _WHY if e.type is NUMERIC or len(e.args) == 1 else None  # type: ignore[attr-defined]
    return build


FUNCTIONS = [
    Function(name, _rule, _impl(*form), spark=_spark(*form)) for name, form in FORMS.items()
]
