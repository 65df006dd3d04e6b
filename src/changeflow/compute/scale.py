"""The decimals a numeric expression's values show, when the types decide it as PostgreSQL's
rules do (a column's declared scale; ``+``/``-`` the larger, ``*`` the sum; ``round(x, n)`` n;
integers 0; extract's by its field), so that a view stores and prints ``1470.10`` where
PostgreSQL does. A quotient, or branches that differ, have no single scale (None): each value
then shows its own. And how a stored decimal column fits a value to its scale."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pyarrow as pa

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.functions.parts import extract_scale
from changeflow.compute.scalars import unstorable_nan
from changeflow.compute.types import NUMERIC, WIDE, Schema
from changeflow.errors import EvalError

_SAME = ("abs",)
_INTEGRAL = ("ceil", "ceiling", "floor", "sign", "div")
_ROUNDING = ("round", "trunc", "numeric_n")


# The widest scale a stored numeric column keeps (its 38 digits); past it, a view stores the
# column as an unconstrained numeric ('1e-1000000'::numeric would need a million decimals).
MAX_STORED_SCALE = 38


def scale_of(e: X.Expr, schema: Schema) -> int | None:
    """The scale every value of ``e`` over rows of ``schema`` shows; None if it varies (or is
    wider than :data:`MAX_STORED_SCALE`)."""
    found = _scale(e, schema)
    return found if found is None or found <= MAX_STORED_SCALE else None


def _scale(e: X.Expr, schema: Schema) -> int | None:
    if e.type.integer:
        return 0
    if e.type is not NUMERIC:
        return None
    if isinstance(e, X.Col):
        return schema[e.index].scale
    if isinstance(e, X.Lit):
        value = e.value
        if isinstance(value, Decimal) and value.is_finite():
            return max(-int(value.as_tuple().exponent), 0)
        return 0 if isinstance(value, int) else None
    if isinstance(e, X.Arith):
        a, b = scale_of(e.a, schema), scale_of(e.b, schema)
        if a is None or b is None or e.op == "/":
            return None
        return a + b if e.op == "*" else max(a, b)
    if isinstance(e, X.Neg):
        return scale_of(e.a, schema)
    if isinstance(e, X.Cast):
        return 0 if e.a.type.integer else None
    if isinstance(e, X.NullIf):
        return scale_of(e.a, schema)
    if isinstance(e, X.Case | X.Coalesce):
        branches = [v for _, v in e.whens] + [e.otherwise] if isinstance(e, X.Case) else e.args
        return common_scale(branches, schema)
    if isinstance(e, Func):
        return _func_scale(e, schema)
    return None


def common_scale(exprs: list[X.Expr] | tuple[X.Expr, ...], schema: Schema) -> int | None:
    """The scale all of ``exprs`` share (a NULL literal or a raised error shares any), else
    None."""
    scales = {scale_of(x, schema) for x in exprs if not _null(x)}
    return scales.pop() if len(scales) == 1 else None


def _null(e: X.Expr) -> bool:
    """A branch that shows no value: a NULL literal, or an error raised (a scalar subquery's
    "more than one row")."""
    return isinstance(e, X.Lit) and e.value is None or isinstance(e, X.Raise)


def _func_scale(e: Func, schema: Schema) -> int | None:
    name = e.name.lower()
    if name in _SAME and len(e.args) == 1:
        return scale_of(e.args[0], schema)
    if name in _INTEGRAL:
        return 0
    if name in _ROUNDING:
        if len(e.args) == 1:
            return 0
        places = e.args[1]
        if isinstance(places, X.Lit) and isinstance(places.value, int):
            return max(places.value, 0)
        return None
    if name in ("greatest", "least"):
        return common_scale(e.args, schema)
    if name == "extract":
        unit = e.args[0]
        return extract_scale(unit.value if isinstance(unit, X.Lit) else None, e.args[1].type)
    return None


def stored_decimal(
    value: Decimal,
    kind: pa.Decimal128Type,
    where: str,
    column: str | None = None,
    rounding: str = ROUND_HALF_UP,
    exact: bool = False,
) -> Decimal:
    """``value`` as a decimal column of ``kind`` stores it, by PostgreSQL's assignment rule:
    rounded half away from zero (or by ``rounding``) to the column's scale; more digits before
    the point than it holds are 22003 (0A000 for an unconstrained numeric, whose limit is this
    store's); a NaN cannot be stored (0A000). ``exact``: a value an unconstrained numeric
    column would round is 0A000 too (PostgreSQL keeps every digit; a table here must not drop
    one silently). ``where`` names the column in the error (``column`` too, as its field)."""
    if value.is_nan():
        raise unstorable_nan(where)
    precision, scale = kind.precision, kind.scale
    if value.is_finite() and value.adjusted() < precision - scale:  # (else too wide to round)
        rounded = value.quantize(Decimal(1).scaleb(-scale), rounding=rounding, context=WIDE)
        if rounded.adjusted() < precision - scale and not (
            exact and kind == NUMERIC.arrow and rounded != value
        ):
            return rounded
    if kind == NUMERIC.arrow:
        raise EvalError(
            f"numeric value {value} does not fit {where}: an unconstrained numeric is stored "
            f"with at most {precision - scale} digits before the point and {scale} after",
            sqlstate="0A000",
            hint=f"Round the value (round(x, {scale})), or declare the column numeric(p,s) "
            "with the places it needs (38 digits in all).",
        )
    raise EvalError(
        "numeric field overflow",
        sqlstate="22003",
        detail=f"A field with precision {precision}, scale {scale} must round to an absolute "
        f"value less than 10^{precision - scale}.",
        column=column,
    )
