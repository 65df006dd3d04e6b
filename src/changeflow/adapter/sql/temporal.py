"""WHERE and HAVING predicates into Filter and TemporalFilter, with Materialize's rules for
``mz_now()``: it may only be compared (``= < <= > >=``, BETWEEN) with an expression free of
it, and in views and SUBSCRIBE (``temporal_and_only``) only in predicates AND-ed at the top.

Elsewhere a predicate with ``mz_now()`` under OR or NOT is split by each comparison's three
outcomes (TRUE: its bounds; FALSE: the opposite bounds; NULL: its expression is NULL) into
disjoint branches whose union is the filter."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import BOOL, INT8
from changeflow.errors import PlanError

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _rule(message: str) -> PlanError:
    return PlanError(message, sqlstate="0A000")


def conjuncts(e: X.Expr) -> list[X.Expr]:
    if isinstance(e, X.And):
        return [c for a in e.args for c in conjuncts(a)]
    return [e]


def _atom(e: X.Expr) -> tuple[str, X.Expr] | None:
    """``mz_now() op bound`` as (op, bound) with mz_now() on the left; None if not an atom."""
    if not isinstance(e, X.Cmp) or e.op == "<>":
        return None
    if isinstance(e.a, X.MzNow) and not e.b.mentions_now():
        return e.op, e.b
    if isinstance(e.b, X.MzNow) and not e.a.mentions_now():
        return _FLIP[e.op], e.a
    return None


def check(e: X.Expr, top: bool, and_only: bool) -> None:
    """Refuse every use of mz_now() but comparisons (under AND only, with ``and_only``)."""
    if not e.mentions_now():
        return
    if _atom(e) is not None:
        return
    if isinstance(e, X.MzNow):
        raise _rule("mz_now() must be compared (=, <, <=, >, >=, BETWEEN) with an expression")
    if isinstance(e, X.Arith | X.Neg):
        raise _rule("arithmetic on mz_now() is not supported; compare mz_now() with an expression")
    if isinstance(e, X.Cmp):
        for side in (e.a, e.b):
            if not isinstance(side, X.MzNow) and side.mentions_now():
                check(side, top, and_only)
        if e.op == "<>":
            raise _rule("mz_now() may be compared with =, <, <=, >, >=, BETWEEN only, not <>")
        raise _rule("mz_now() must be compared with an expression free of mz_now()")
    if isinstance(e, X.And):
        for a in e.args:
            check(a, top, and_only)
        return
    if isinstance(e, X.Or | X.Not):
        if and_only:
            raise _rule(
                "mz_now() in a view or SUBSCRIBE may appear only in predicates joined by AND "
                "at the top of WHERE or HAVING, not under OR or NOT"
            )
        for a in e.children():
            check(a, False, and_only)
        return
    raise _rule(
        f"mz_now() must be compared (=, <, <=, >, >=, BETWEEN) with an expression, not used in {e}"
    )


def _bigint(e: X.Expr) -> X.Expr:
    return e if e.type in (INT8,) or not e.type.integer else X.Cast(e, INT8)


def _plus_one(e: X.Expr) -> X.Expr:
    return X.Arith("+", _bigint(e), X.Lit(1, INT8))


def bounds(op: str, e: X.Expr) -> tuple[list[X.Expr], list[X.Expr]]:
    """The (lower, upper) bounds that make ``mz_now() op e`` TRUE."""
    e = _bigint(e)
    if op == ">=":
        return [e], []
    if op == ">":
        return [_plus_one(e)], []
    if op == "<":
        return [], [e]
    if op == "<=":
        return [], [_plus_one(e)]
    return [e], [_plus_one(e)]  # =


def apply(plan: P.Plan, predicate: X.Expr, and_only: bool) -> P.Plan:
    """``plan`` filtered by ``predicate`` (which may compare mz_now())."""
    check(predicate, True, and_only)
    plain, lower, upper, rest = [], [], [], []
    for c in conjuncts(predicate):
        atom = _atom(c)
        if not c.mentions_now():
            plain.append(c)
        elif atom is not None:
            lo, hi = bounds(*atom)
            lower += lo
            upper += hi
        else:
            rest.append(c)
    out = P.Filter(plan, tuple(plain)) if plain else plan
    if lower or upper:
        out = P.TemporalFilter(out, tuple(lower), tuple(upper))
    if rest:
        out = _split(out, X.And(tuple(rest)) if len(rest) > 1 else rest[0])
    return out


def _atoms(e: X.Expr) -> list[X.Expr]:
    if _atom(e) is not None:
        return [e]
    found: list[X.Expr] = []
    for c in e.children():
        found += [a for a in _atoms(c) if a not in found]
    return found


def substitute(e: X.Expr, values: dict[X.Expr, X.Expr]) -> X.Expr:
    """``e`` with each subexpression found in ``values`` replaced."""
    if e in values:
        return values[e]
    if not e.children():
        return e
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(e):  # type: ignore[arg-type]
        if f.init:
            changes[f.name] = _sub_field(getattr(e, f.name), values)
    return type(e)(**changes)


def _sub_field(value: Any, values: dict[X.Expr, X.Expr]) -> Any:
    if isinstance(value, X.Expr):
        return substitute(value, values)
    if isinstance(value, tuple):
        return tuple(_sub_field(v, values) for v in value)
    return value


def _outcome(op: str, e: X.Expr, outcome: bool | None) -> list[tuple[list, list, list]]:
    """For ``mz_now() op e`` having ``outcome``: alternatives of (filters, lower, upper)."""
    if outcome is None:
        return [([X.IsNull(e)], [], [])]
    if outcome:
        return [([], *bounds(op, e))]
    if op == "=":
        return [([], *bounds("<", e)), ([], *bounds(">", e))]
    return [([], *bounds(_NEGATE[op], e))]


def _split(plan: P.Plan, predicate: X.Expr) -> P.Plan:
    atoms = _atoms(predicate)
    branches: list[P.Plan] = []
    for outcomes in itertools.product((True, False, None), repeat=len(atoms)):
        values = {a: X.Lit(o, BOOL) for a, o in zip(atoms, outcomes, strict=True)}
        rest = substitute(predicate, values)
        if not rest.columns() and rest.eval(()) is not True:
            continue
        choices = [_outcome(*_atom(a), o) for a, o in zip(atoms, outcomes, strict=True)]  # type: ignore[misc]
        for combo in itertools.product(*choices):
            filters = [rest] + [f for c in combo for f in c[0]]
            lower = [b for c in combo for b in c[1]]
            upper = [b for c in combo for b in c[2]]
            branch: P.Plan = P.Filter(plan, tuple(filters))
            if lower or upper:
                branch = P.TemporalFilter(branch, tuple(lower), tuple(upper))
            branches.append(branch)
    if not branches:
        return P.Filter(plan, (X.Lit(False, BOOL),))
    return branches[0] if len(branches) == 1 else P.Union(tuple(branches))
