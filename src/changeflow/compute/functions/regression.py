"""corr, covar_pop, covar_samp and the regr_* aggregates from a group's exact sums, how a view
maintains them: the count of the pairs with neither value NULL and the numeric sums of x, y,
x², y² and xy (retractable, so a delete subtracts). The centred sums PostgreSQL's
Youngs-Cramer accumulation keeps (Sx, Sy, Sxx, Syy, Sxy) are derived exactly, rounded to
doubles once, and finished as PostgreSQL's final functions do. The planner's own forms
(``corr_of`` …), not functions of pg_proc."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from typing import Any

from changeflow.compute.functions.base import Function, in_process
from changeflow.compute.types import FLOAT8, SqlType
from changeflow.errors import PlanError

Centred = tuple[float, float, float, float, float, float]  # N, Sx, Sy, Sxx, Syy, Sxy


def centred(n: int, sx: Decimal, sy: Decimal, sxx: Decimal, syy: Decimal, sxy: Decimal) -> Centred:
    """The centred sums of ``n`` pairs from their plain sums, exact before one rounding."""
    with localcontext() as ctx:
        ctx.prec = 2 * max(len(str(v)) for v in (sx, sy, sxx, syy, sxy)) + 40
        return (
            float(n),
            float(sx),
            float(sy),
            float(sxx - sx * sx / n),
            float(syy - sy * sy / n),
            float(sxy - sx * sy / n),
        )


def _slope(c: Centred) -> float | None:
    return None if c[3] == 0 else c[5] / c[3]


def _intercept(c: Centred) -> float | None:
    n, sx, sy, sxx, _, sxy = c
    return None if sxx == 0 else (sy - sx * sxy / sxx) / n


def _r2(c: Centred) -> float | None:
    _, _, _, sxx, syy, sxy = c
    if sxx == 0:
        return None
    return 1.0 if syy == 0 else (sxy * sxy) / (sxx * syy)


def _corr(c: Centred) -> float | None:
    _, _, _, sxx, syy, sxy = c
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


# PostgreSQL's final functions of the centred sums, by aggregate
FINALS: dict[str, Any] = {
    "regr_sxx": lambda c: c[3],
    "regr_syy": lambda c: c[4],
    "regr_sxy": lambda c: c[5],
    "regr_avgx": lambda c: c[1] / c[0],
    "regr_avgy": lambda c: c[2] / c[0],
    "regr_r2": _r2,
    "regr_slope": _slope,
    "regr_intercept": _intercept,
    "covar_pop": lambda c: c[5] / c[0],
    "covar_samp": lambda c: None if c[0] < 2 else c[5] / (c[0] - 1),
    "corr": _corr,
}


def _finish(name: str) -> Any:
    def final(n: Any, *sums: Any) -> float | None:
        return FINALS[name](centred(int(n), *(Decimal(s) for s in sums)))

    return final


def _sums_rule(kinds: tuple[SqlType, ...]) -> SqlType:
    if len(kinds) != 6:
        raise PlanError("no match", sqlstate="42883")
    return FLOAT8


_IN_PROCESS = in_process("a regression aggregate finishes its exact sums in the process")

FUNCTIONS = [
    Function(f"{name}_of", _sums_rule, _finish(name), spark=_IN_PROCESS, nulls=True)
    for name in FINALS
]
FORMS = frozenset({f"{name}_of" for name in FINALS})
REGRESSIONS = frozenset(FINALS) | {"regr_count"}
