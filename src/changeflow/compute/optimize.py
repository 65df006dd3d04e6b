"""Plan rewrites that keep a plan's meaning and make its joins keyed.

SQL's ``FROM a, b, c WHERE a.k = b.k AND b.j = c.j`` plans as cross joins under a filter; run as
written, each join would hold the product of its inputs. :func:`optimize` rewrites, bottom up:

- an inner join whose first input is an inner join becomes one n-way join (the inputs' columns
  keep their positions, so equivalences and residuals carry over unchanged);
- a filter directly over an inner join moves each predicate that reads one input's columns
  only down onto that input, and gives the join each predicate that equates columns of two
  inputs (NULL equals nothing in both places) as an equivalence the join is keyed on;
- a keyed n-way join's inputs are put in an order where each input shares an equivalence with
  one before it, where the join graph allows (joins run left to right, so an input that shares
  none would be a cross product of everything before it), under a projection that puts the
  columns back where they were;
- a filter over a map or an unnest moves each predicate that reads the input's own columns
  only below it (so a set-returning function such as jsonb_each never runs on a row the
  WHERE clause removes, as in PostgreSQL).
"""

from __future__ import annotations

from dataclasses import fields, replace

from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute import scalars as S
from changeflow.compute.unnest import Unnest


def optimize(plan: P.Plan) -> P.Plan:
    """``plan`` with its joins flattened and keyed (see the module docstring)."""
    plan = with_inputs(plan, tuple(optimize(p) for p in plan.inputs()))
    if isinstance(plan, P.Join) and plan.kind == "inner":
        return _flatten(plan)
    if isinstance(plan, P.Filter) and _inner(plan.input):
        return _push_equalities(plan)
    if isinstance(plan, P.Filter) and isinstance(plan.input, P.Map | Unnest):
        return _push_below(plan)
    return plan


def _push_below(flt: P.Filter) -> P.Plan:
    """The predicates of ``flt`` that read only the columns its map or unnest passes on, under
    it (those keep their positions there); the others stay above."""
    inner = flt.input
    width = len(inner.inputs()[0].schema)
    down = tuple(p for p in flt.predicates if all(c < width for c in p.columns()))
    if not down:
        return flt
    up = tuple(p for p in flt.predicates if p not in down)
    below = with_inputs(inner, (optimize(P.Filter(inner.inputs()[0], down)),))
    return P.Filter(below, up) if up else below


def _inner(plan: P.Plan) -> bool:
    return isinstance(plan, P.Join) and plan.kind == "inner"


def with_inputs(plan: P.Plan, inputs: tuple[P.Plan, ...]) -> P.Plan:
    if inputs == plan.inputs():
        return plan
    names = {f.name for f in fields(plan)}  # type: ignore[arg-type]
    if "inputs_" in names:
        return replace(plan, inputs_=inputs)  # type: ignore[type-var]
    return replace(plan, input=inputs[0])  # type: ignore[type-var]


def _flatten(join: P.Join) -> P.Join:
    first = join.inputs_[0]
    if not _inner(first):
        return join
    assert isinstance(first, P.Join)
    residuals = [r for r in (first.residual, join.residual) if r is not None]
    return P.Join(
        (*first.inputs_, *join.inputs_[1:]),
        _classes(first.equivalences + join.equivalences),
        "inner",
        residuals[0] if len(residuals) == 1 else X.And(tuple(residuals)) if residuals else None,
    )


def _push_equalities(flt: P.Filter) -> P.Plan:
    join = flt.input
    assert isinstance(join, P.Join)
    starts = [0]
    for p in join.inputs_:
        starts.append(starts[-1] + len(p.schema))
    below: dict[int, list[X.Expr]] = {}
    pairs, rest = [], []
    for p in flt.predicates:
        side = _one_input(p.columns(), starts)
        if side is not None:
            below.setdefault(side, []).append(X.map_columns(p, lambda i, s=starts[side]: i - s))
        elif _equality(p):
            pairs.append((p.a.index, p.b.index))  # type: ignore[attr-defined]
        else:
            rest.append(p)
    if not pairs and not below:
        return flt
    inputs = tuple(
        optimize(P.Filter(p, tuple(below[i]))) if i in below else p
        for i, p in enumerate(join.inputs_)
    )
    keyed = replace(join, inputs_=inputs, equivalences=_classes(join.equivalences + tuple(pairs)))
    ordered = _connected(keyed)
    return P.Filter(ordered, tuple(rest)) if rest else ordered


def _connected(join: P.Join) -> P.Plan:
    """``join`` with its inputs in an order where each shares an equivalence with one before
    it (greedily from the first), under a Project that restores the columns' positions; the
    join itself if it is in such an order already (or no order avoids a cross product)."""
    n = len(join.inputs_)
    if join.kind != "inner" or n < 3:
        return join
    starts = [0]
    for p in join.inputs_:
        starts.append(starts[-1] + len(p.schema))
    side = [i for i in range(n) for _ in range(len(join.inputs_[i].schema))]
    links = [{side[c] for c in klass} for klass in join.equivalences]
    order, left = [0], list(range(1, n))
    while left:
        placed = set(order)
        nxt = next((i for i in left if any(i in s and s & placed for s in links)), left[0])
        order.append(nxt)
        left.remove(nxt)
    if order == list(range(n)):
        return join
    new_at: dict[int, int] = {}
    at = 0
    for i in order:
        for c in range(starts[i], starts[i + 1]):
            new_at[c] = at
            at += 1
    residual = join.residual
    reordered = P.Join(
        tuple(join.inputs_[i] for i in order),
        _classes(tuple(tuple(new_at[c] for c in klass) for klass in join.equivalences)),
        "inner",
        None if residual is None else X.map_columns(residual, new_at.__getitem__),
    )
    return P.Project(reordered, tuple(new_at[c] for c in range(starts[-1])))


def _one_input(columns: set[int], starts: list[int]) -> int | None:
    """The input whose columns are all of ``columns`` (None: none, or several)."""
    if not columns:
        return None
    sides = {next(i for i in range(len(starts) - 1) if c < starts[i + 1]) for c in columns}
    return sides.pop() if len(sides) == 1 else None


def _equality(p: X.Expr) -> bool:
    return (
        isinstance(p, X.Cmp)
        and p.op == "="
        and isinstance(p.a, X.Col)
        and isinstance(p.b, X.Col)
        and S.comparable(p.a.type, p.b.type)
    )


def _classes(pairs: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    """Equivalence classes merged where they share a column, each sorted."""
    merged: list[set[int]] = []
    for klass in pairs:
        group = set(klass)
        for other in [m for m in merged if m & group]:
            group |= other
            merged.remove(other)
        merged.append(group)
    return tuple(sorted(tuple(sorted(g)) for g in merged if len(g) > 1))
