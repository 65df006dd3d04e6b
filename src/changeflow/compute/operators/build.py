"""A plan built into operators, and their hydration from collections at an as_of."""

from __future__ import annotations

from collections.abc import Callable

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.evaluate import Row
from changeflow.compute.operators.base import Constant, Inputs, Operator, Source, _key
from changeflow.compute.operators.batch import (
    Update,
    by_rows,
    filter_batch,
    map_batch,
    negate_batch,
    project_batch,
)
from changeflow.compute.operators.join import _build_join
from changeflow.compute.operators.linear import Linear, Window
from changeflow.compute.operators.recursive import RecursiveOp
from changeflow.compute.operators.reduce import Group, Reduce
from changeflow.compute.operators.threshold import KeyedRecompute, Threshold
from changeflow.compute.operators.topk import TopK
from changeflow.compute.recursive import Recursive
from changeflow.compute.types import SqlType
from changeflow.compute.unnest import Unnest
from changeflow.compute.volatile import copies, volatile
from changeflow.errors import PlanError


def hydrate(
    root: Operator,
    collection_at: Callable[[P.Plan], list[tuple[Row, int]]],
    as_of: int,
    groups_at: Callable[[Reduce], dict[Row, Group]] | None = None,
) -> None:
    """Give every operator under ``root`` the state its inputs' collections at ``as_of`` leave.
    Inputs first: an input whose state tells its output (a reduce's groups, a top-k's windows)
    hands it on; the other collections are computed by ``collection_at`` (in bulk: on Spark, or
    by the reference), a reduce's groups by ``groups_at`` where given."""
    for op in root.walk():
        if not op.hydrates:
            op.hydrate([], as_of)
            continue
        known = [child.contents() for child in op.inputs]
        if len(op.inputs) == len(op.input_plans) and all(k is not None for k in known):
            op.hydrate(known, as_of)
        elif groups_at is not None and isinstance(op, Reduce):
            op.adopt(groups_at(op))
        else:
            op.hydrate([collection_at(p) for p in op.hydration_inputs(as_of)], as_of)


def build(plan: P.Plan, sources: Inputs, at: int) -> Operator:
    """The operators of ``plan``, reading its collections through ``sources``; ``at`` is the
    first time (constants appear there)."""
    op = _build(plan, sources, at)
    if not op.input_plans and not isinstance(op, Source | Constant):
        op.input_plans = plan.inputs()
    return op


def _kinds(plan: P.Plan) -> tuple[SqlType, ...]:
    return tuple(c.type for c in plan.schema)


def _build(plan: P.Plan, sources: Inputs, at: int) -> Operator:
    """The operators of ``plan``, reading its collections through ``sources``; ``at`` is the
    first time (constants appear there)."""
    match plan:
        case P.Get(name=name):
            return sources.reader(name, _kinds(plan))
        case P.Constant(rows=rows):
            return Constant(rows, at)
    children = tuple(build(p, sources, at) for p in plan.inputs())
    kinds = _kinds(plan)
    match plan:
        case P.Map(exprs=exprs):
            added = tuple(e for _, e in exprs)

            def mapped(u: Update) -> list[Update]:
                return [(u[0] + tuple(e.eval(u[0]) for e in added), u[1], u[2])]

            if any(volatile(e) for e in added):  # each copy of a row gets its own value

                def each(u: Update) -> list[Update]:
                    return [mapped((r, u[1], d))[0] for r, d in copies(u[0], u[2])]

                return Linear(children, each, lambda b: by_rows(b, each, kinds), kinds)
            return Linear(children, mapped, lambda b: map_batch(b, added, mapped, kinds), kinds)
        case P.Project(columns=columns):
            return Linear(
                children,
                lambda u: [(_key(u[0], columns), u[1], u[2])],
                lambda b: project_batch(b, columns, kinds),
                kinds,
            )
        case P.Filter(predicates=predicates):

            def kept(u: Update) -> list[Update]:
                return [u] if all(p.eval(u[0]) is True for p in predicates) else []

            return Linear(children, kept, lambda b: filter_batch(b, predicates, kept), kinds)
        case P.Union():
            return Linear(children, lambda u: [u], lambda b: b, kinds)
        case P.Negate():
            return Linear(children, lambda u: [(u[0], u[1], -u[2])], negate_batch, kinds)
        case P.TemporalFilter(lower=lower, upper=upper):
            return Window(children[0], lower, upper, kinds)
        case P.Join():
            return _build_join(plan, children)
        case P.Reduce():
            return Reduce(children[0], plan)
        case P.Distinct():
            return Threshold(children[0], kinds, distinct=True)
        case P.Threshold():
            return Threshold(children[0], kinds, distinct=False)
        case P.TopK():
            return TopK(children[0], plan)
        case Recursive():  # a change recomputes the fixed point
            return RecursiveOp(children, plan)
        case Unnest():
            return Linear(children, lambda u: [(r, u[1], u[2]) for r in plan.rows(u[0])])
        case W.Window(partition_by=partition_by):  # a change recomputes its partition
            return KeyedRecompute(
                children[0], partition_by, lambda key, rows: dict(W.partition_output(plan, rows))
            )
    raise PlanError(f"no operator for {type(plan).__name__}")
