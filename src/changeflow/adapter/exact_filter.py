"""A filtered read's plan kept per plan, without the filter where the columns decide it.

A statement run again takes its plan from the plan cache, the same object each time
(:class:`~changeflow.adapter.plan_cache.Template` keeps the plans of its last values), so
what a read works out from the plan alone is kept with it here: what the filter right above
its only input fixes (:func:`~changeflow.adapter.arrangements.point`), and the plan with
that filter taken out where :func:`~changeflow.adapter.arrangements.narrowed` picks exactly
the rows the filter passes. That holds when every predicate is a comparison of a column
with a literal that Arrow's kernels decide as SQL does (an integer column with an integer
literal, text with text; a NULL column value passes neither) and no column is said equal to
two values. The rows picked so are then handed to the rest of the plan as they are, instead
of every row's predicates being evaluated again by the row operators.
"""

from __future__ import annotations

import threading

from changeflow.adapter.arrangements import FLIP, Fixed, _same, point
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.optimize import with_inputs

KEPT = 1024  # plans kept (all forgotten at once past this many)

_lock = threading.Lock()
_kept: dict[int, tuple[P.Plan, Fixed | None, P.Plan | None]] = {}


def point_path(plan: P.Plan) -> tuple[Fixed | None, P.Plan | None]:
    """What the filter above ``plan``'s only input fixes (None: nothing), and ``plan``
    without that filter where the rows :func:`narrowed` picks are exactly those it passes
    (None: the filter must run on them). Worked out once per plan object."""
    found = _kept.get(id(plan))
    if found is not None and found[0] is plan:
        return found[1], found[2]
    fixed = point(plan)
    unfiltered = None if fixed is None else _unfiltered(plan)
    with _lock:
        if len(_kept) >= KEPT:
            _kept.clear()
        _kept[id(plan)] = (plan, fixed, unfiltered)  # the plan held: its id is not reused
    return fixed, unfiltered


def _unfiltered(plan: P.Plan) -> P.Plan | None:
    """``plan`` with the filter over its only input replaced by that input, if
    :func:`exact`; else None. The other inputs on the way (a global aggregate's row of
    defaults) read nothing and stay as they are."""
    if isinstance(plan, P.Filter) and isinstance(plan.input, P.Get):
        return plan.input if exact(plan) else None
    inputs = plan.inputs()
    reading = [i for i, p in enumerate(inputs) if p.collections()]  # the one that reads it
    if len(reading) != 1:
        return None
    below = _unfiltered(inputs[reading[0]])
    if below is None:
        return None
    return with_inputs(plan, tuple(below if p is inputs[reading[0]] else p for p in inputs))


def exact(flt: P.Filter) -> bool:
    """Does :func:`narrowed` pick exactly the rows ``flt`` passes? Every predicate is a
    comparison :func:`point` takes in full (``col op literal`` either way round, a range
    only of integers) and no column is said equal to two values."""
    equal: dict[int, object] = {}
    for predicate in flt.predicates:
        if not isinstance(predicate, X.Cmp) or predicate.op not in FLIP:
            return False
        a, b, op = predicate.a, predicate.b, predicate.op
        if isinstance(b, X.Col) and isinstance(a, X.Lit):
            a, b, op = b, a, FLIP[op]
        if not (isinstance(a, X.Col) and isinstance(b, X.Lit) and _same(a, b)):
            return False
        if op == "=":
            if a.index in equal and equal[a.index] != b.value:
                return False
            equal[a.index] = b.value
        elif type(b.value) is not int:
            return False
    return True
