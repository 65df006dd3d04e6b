"""A filtered read's plan kept per plan, without the filter where the columns decide it.

A statement run again takes its plan from the plan cache, the same object each time
(:class:`~changeflow.adapter.plan_cache.Template` keeps the plans of its last values), so what
a read works out from the plan alone is kept with that plan in the cache: what the filter right
above its only input fixes (:func:`~changeflow.adapter.arrangements.point`), and the plan with
that filter taken out where :func:`~changeflow.adapter.arrangements.narrowed` picks exactly the
rows the filter passes. That holds when every predicate is a comparison of a column with a
literal that Arrow's kernels decide as SQL does (an integer column with an integer literal,
text with text; a NULL column value passes neither) and no column is said equal to two values.
The rows picked so are then handed to the rest of the plan as they are, instead of every row's
predicates being evaluated again by the row operators, and with the columns the rest of the
plan does not read (:func:`demanded`) left NULL: rows that differ only there become one row
with their counts summed (a client's rows counted and summed by a point query reach its
aggregate as a few rows instead of one per row).
"""

from __future__ import annotations

from functools import cached_property

from changeflow.adapter.arrangements import FLIP, Fixed, _same, point
from changeflow.adapter.plan_cache import PlanCache
from changeflow.adapter.rows import Counted, summed_rows
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.optimize import with_inputs


class Path:
    """What a read of ``plan`` works out from it alone (see the module docstring): what
    the filter above its only input fixes (None: nothing) at once, the rest when a read
    picks its rows exactly (a read through an index needs only ``fixed``)."""

    def __init__(self, plan: P.Plan) -> None:
        self.plan = plan
        self.fixed: Fixed | None = point(plan)

    @cached_property
    def unfiltered(self) -> P.Plan | None:
        """The plan without that filter, if the kernels decide it; else None."""
        return None if self.fixed is None else _unfiltered(self.plan)

    @cached_property
    def used(self) -> frozenset[int] | None:
        """The input's columns :attr:`unfiltered` reads; None: all of them."""
        return None if self.unfiltered is None else demanded(self.unfiltered)


def point_path(plans: PlanCache, plan: P.Plan) -> Path:
    """``plan``'s :class:`Path`, made once per plan object and kept with the plan cache's
    plans (:meth:`~changeflow.adapter.plan_cache.PlanCache.derived`)."""
    return plans.derived(plan, Path)


def demanded(plan: P.Plan) -> frozenset[int] | None:
    """The columns of ``plan``'s only input that its rows depend on: those a projection,
    map, aggregate (its keys, arguments, filters and orders), union or filter on the way
    reads; None (all of them) past any other node. A map's and an aggregate's expressions
    count whether or not their results are used (each row evaluates them as before)."""
    return _demand(plan, frozenset(range(len(plan.schema))))


def _demand(node: P.Plan, out: frozenset[int]) -> frozenset[int] | None:
    if isinstance(node, P.Get):
        return out
    reading = [p for p in node.inputs() if p.collections()]
    if len(reading) != 1:
        return None
    need: set[int] = set()
    if isinstance(node, P.Project):
        need = {node.columns[i] for i in out}
    elif isinstance(node, P.Map):
        width = len(node.input.schema)
        need = {i for i in out if i < width}.union(*(e.columns() for _, e in node.exprs))
    elif isinstance(node, P.Reduce):
        need = set(node.group_by)
        for a in node.aggregates:
            exprs = [a.arg, a.filter, *(o.expr for o in a.order)]
            need = need.union(*(e.columns() for e in exprs if e is not None))
    elif isinstance(node, P.Union):
        need = set(out)
    elif isinstance(node, P.Filter):
        need = set(out).union(*(p.columns() for p in node.predicates))
    else:
        return None
    return _demand(reading[0], frozenset(need))


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


def exact_rows(path: Path, read: dict, key: tuple, ts: int) -> tuple[P.Plan, Counted] | None:
    """The plan without its filter and its input's rows at ``ts`` (the columns it does not
    read NULL), where the updates picked for ``key`` (kept in ``read``, the statement's reads
    at ``("picked", *key)``) are exactly those the filter passes; None where they are not.
    The rows are kept in ``read`` for the statement's other plans of the same columns."""
    if not read.get(("exact", *key)) or path.unfiltered is None:
        return None
    at = ("rows", *key, path.used)
    rows = read.get(at)
    if rows is None:
        rows = read[at] = summed_rows(read[("picked", *key)], ts, path.used)
    return path.unfiltered, rows
