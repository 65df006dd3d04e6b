"""The ordered-set and bitwise aggregates as functions of a group's values: the planner reads
``percentile_cont(f) WITHIN GROUP (ORDER BY x)`` as ``percentile_cont_of(array_agg(x ORDER BY
x) FILTER (WHERE x IS NOT NULL), f)`` (likewise ``percentile_disc``, ``mode``, ``bit_and``,
``bit_or`` and ``bit_xor``), so each is kept per group wherever ``array_agg`` is."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from changeflow.compute.functions.base import Function, in_process
from changeflow.compute.types import FLOAT8, SqlType, array_of
from changeflow.errors import EvalError, PlanError

_IN_PROCESS = in_process("ordered-set aggregates are computed in the process")


def _fraction(f: float) -> float:
    f = float(f)
    if not 0 <= f <= 1 or math.isnan(f):
        raise EvalError(f"percentile value {f:g} is not between 0 and 1", sqlstate="22003")
    return f


def _each(fractions: Any, one: Any) -> Any:
    """``one`` of each fraction of an array (a NULL one gives NULL), or of the one fraction."""
    if isinstance(fractions, tuple | list):
        return tuple(None if f is None else one(_fraction(f)) for f in fractions)
    return one(_fraction(fractions))


def percentile_cont(values: Sequence[Any], fractions: Any) -> Any:
    """The value at ``fraction`` of the sorted ``values``, interpolated between the two
    nearest (as double precision), as PostgreSQL's ``percentile_cont``."""
    xs = [float(v) for v in values]

    def one(f: float) -> float:
        at = f * (len(xs) - 1)
        lo, hi = math.floor(at), math.ceil(at)
        return xs[lo] if lo == hi else xs[lo] + (at - lo) * (xs[hi] - xs[lo])

    return _each(fractions, one)


def percentile_disc(values: Sequence[Any], fractions: Any) -> Any:
    """The first of the sorted ``values`` whose position is at least ``fraction`` of them."""

    def one(f: float) -> Any:
        return values[max(math.ceil(f * len(values)), 1) - 1]

    return _each(fractions, one)


def mode(values: Sequence[Any]) -> Any:
    """The most frequent of the sorted ``values``; of several, the first in their order."""
    best, best_count, run, count = None, 0, None, 0
    for i, v in enumerate(values):
        count = count + 1 if i and v == run else 1
        run = v
        if count > best_count:
            best, best_count = v, count
    return best


def _bits(op: str) -> Any:
    def fold(values: Sequence[int]) -> int:
        out = values[0]
        for v in values[1:]:
            out = out & v if op == "and" else out | v if op == "or" else out ^ v
        return out

    return fold


def _no_such(name: str, args: tuple[SqlType, ...]) -> PlanError:
    """42883 naming the aggregate as written: its direct arguments, then the sorted value's
    type (PostgreSQL's order)."""
    element = args[0].element or args[0]
    shown = ", ".join(str(k) for k in (*args[1:], element))
    return PlanError(f"function {name}({shown}) does not exist", sqlstate="42883", named=True)


def _element(args: tuple[SqlType, ...], n: int = 1) -> SqlType:
    if len(args) != n or args[0].element is None:
        raise PlanError("no match", sqlstate="42883")
    return args[0].element


def _cont_rule(args: tuple[SqlType, ...]) -> SqlType:
    if not _element(args, 2).numeric or not (args[1].numeric or args[1].element):
        raise _no_such("percentile_cont", args)
    fraction = args[1]
    return array_of(FLOAT8) if fraction.element is not None else FLOAT8


def _disc_rule(args: tuple[SqlType, ...]) -> SqlType:
    element = _element(args, 2)
    if not (args[1].numeric or args[1].element):
        raise _no_such("percentile_disc", args)
    return array_of(element) if args[1].element is not None else element


def _int_rule(name: str) -> Any:
    def rule(args: tuple[SqlType, ...]) -> SqlType:
        element = _element(args)
        if not element.integer:
            raise _no_such(name, args)
        return element

    return rule


FUNCTIONS = [
    Function("percentile_cont_of", _cont_rule, percentile_cont, spark=_IN_PROCESS),
    Function("percentile_disc_of", _disc_rule, percentile_disc, spark=_IN_PROCESS),
    Function("mode_of", _element, mode, spark=_IN_PROCESS),
    *(
        Function(f"bit_{op}_of", _int_rule(f"bit_{op}"), _bits(op), spark=_IN_PROCESS)
        for op in ("and", "or", "xor")
    ),
]
FORMS = frozenset(f.name for f in FUNCTIONS)
