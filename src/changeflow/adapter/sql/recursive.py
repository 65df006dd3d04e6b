"""WITH RECURSIVE: ad hoc, the non-recursive term's rows, then the recursive term's over the
rows the last step added, to a fixed point (UNION ALL keeps every row; UNION drops the rows
already found, as PostgreSQL's), each step run now; in a view or a SUBSCRIBE, a
:class:`~changeflow.compute.recursive.Recursive` node, maintained by recomputing the fixed
point as its inputs change. A recursion that does not end is stopped with an error (54001)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from changeflow.adapter.sql.rows import Output, resolve_unknown
from changeflow.adapter.sql.scope import ident, unsupported
from changeflow.compute import plan as P
from changeflow.compute import recursive as R
from changeflow.compute.optimize import optimize
from changeflow.compute.types import Column
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.sql.query import Planner
    from changeflow.adapter.sql.scope import Scope

Rows = dict[tuple[Any, ...], int]

# How a statement being planned runs a plan now (unset where the query is to be maintained).
RUN: ContextVar[Callable[[P.Plan], Rows] | None] = ContextVar("recursive_run", default=None)


@contextmanager
def running(run: Callable[[P.Plan], Rows]) -> Iterator[None]:
    """Plan with WITH RECURSIVE allowed, its terms run by ``run``."""
    token = RUN.set(run)
    try:
        yield
    finally:
        RUN.reset(token)


def is_recursive(cte: exp.CTE, name: str) -> bool:
    return any(ident(t.this) == name for t in cte.this.find_all(exp.Table) if not t.db)


def _recursion_error(name: str, where: str) -> PlanError:
    return PlanError(
        f'recursive reference to query "{name}" must not appear {where}', sqlstate="42P19"
    )


def _outer_joined(node: exp.Expression) -> bool:
    """Whether the FROM item ``node`` (a table, or its join) is on a nullable side of an
    outer join of its SELECT."""
    select = node.parent
    joins = (select.args.get("joins") or []) if isinstance(select, exp.Select) else []
    if isinstance(node, exp.From):
        later = joins
    elif isinstance(node, exp.Join) and node in joins:
        if node.side in ("LEFT", "FULL"):
            return True
        later = joins[joins.index(node) + 1 :]
    else:
        return False
    return any(j.side in ("RIGHT", "FULL") for j in later)


def check_recursive_term(term: exp.Expression, name: str) -> None:
    """PostgreSQL's rules for a recursive term (42P19): the query refers to itself once, not
    inside a subquery, an outer join's nullable side, INTERSECT ALL or EXCEPT (ALL, or its
    right side), and with no
    aggregate; FOR UPDATE is refused (0A000)."""
    refs = [t for t in term.find_all(exp.Table) if not t.db and ident(t.this) == name]
    for ref in refs:
        node: exp.Expression = ref
        while node is not term and node.parent is not None:
            parent = node.parent
            every = not parent.args.get("distinct")
            if isinstance(parent, exp.Intersect) and every:
                raise _recursion_error(name, "within INTERSECT")
            if isinstance(parent, exp.Except) and (every or node is parent.expression):
                raise _recursion_error(name, "within EXCEPT")
            if isinstance(node, exp.From | exp.Join) and _outer_joined(node):
                raise _recursion_error(name, "within an outer join")
            query = isinstance(node, exp.Query) and not isinstance(node, exp.Subquery)
            nested = (exp.Subquery, exp.SetOperation, exp.CTE, exp.With)
            if (query and not isinstance(parent, nested)) or (
                isinstance(node, exp.Subquery)
                and not isinstance(parent, exp.From | exp.Join | exp.SetOperation)
            ):
                raise _recursion_error(name, "within a subquery")
            node = parent
    if len(refs) > 1:
        raise _recursion_error(name, "more than once")
    if isinstance(term, exp.Select):
        if term.args.get("locks"):
            raise PlanError(
                "FOR UPDATE/SHARE in a recursive query is not implemented", sqlstate="0A000"
            )
        for agg in term.find_all(exp.AggFunc):
            if agg.find_ancestor(exp.Select) is term and not agg.find_ancestor(exp.Window):
                raise PlanError(
                    "aggregate functions are not allowed in a recursive query's recursive term",
                    sqlstate="42P19",
                )


def recursive_cte(
    planner: Planner, cte: exp.CTE, name: str, env: dict[str, Output], outer: Scope | None
) -> Output:
    """The rows of the recursive CTE ``name`` as a constant relation."""
    body = cte.this
    run = RUN.get()
    if not isinstance(body, exp.Union) or is_recursive(exp.CTE(this=body.this), name):
        raise PlanError(
            f'recursive query "{name}" does not have the form non-recursive-term UNION [ALL] '
            "recursive-term",
            sqlstate="42P19",
        )
    if body.args.get("order") or body.args.get("limit"):
        raise unsupported("ORDER BY or LIMIT in a recursive query", cte)
    check_recursive_term(body.expression, name)
    distinct = bool(body.args.get("distinct"))
    base = planner.query(body.this, outer)
    names = list(base.names)
    alias = cte.args.get("alias")
    for i, c in enumerate(alias.columns if alias is not None else []):
        if i >= len(names):
            raise PlanError(
                f'WITH query "{name}" has {len(names)} columns available but '
                f"{len(alias.columns)} columns specified",
                sqlstate="42P10",
            )
        names[i] = ident(c)
    plan = resolve_unknown(base.plan)
    schema = tuple(Column(n, c.type, True) for n, c in zip(names, plan.schema, strict=True))
    if run is None:
        return _maintained(planner, cte, name, env, outer, base, plan, schema, distinct)
    found = R.added(run(optimize(plan)), distinct, {})
    total = dict(found)
    for _ in range(R.MAX_STEPS):
        if not found:
            env[name] = Output(P.Constant(tuple(total.items()), schema), names)
            return env[name]
        env[name] = Output(P.Constant(tuple(found.items()), schema), names)
        step = _step(planner, body, name, schema, outer)
        found = R.added(run(optimize(step)), distinct, total)
        for row, count in found.items():
            total[row] = total.get(row, 0) + count
        if sum(total.values()) > R.MAX_ROWS:
            break
    raise R.endless(name)


def _step(
    planner: Planner, body: exp.Union, name: str, schema: tuple[Column, ...], outer: Scope | None
) -> P.Plan:
    """The recursive term's plan, its types checked against the non-recursive term's."""
    step = resolve_unknown(planner.query(body.expression, outer).plan)
    for ours, theirs in zip(schema, step.schema, strict=False):
        if ours.type != theirs.type:
            raise PlanError(
                f'recursive query "{name}" column has type {ours.type} in non-recursive '
                f"term but type {theirs.type} overall",
                sqlstate="42804",
            )
    if len(step.schema) != len(schema):
        raise PlanError("each UNION query must have the same number of columns", sqlstate="42601")
    return step


def _maintained(
    planner: Planner,
    cte: exp.CTE,
    name: str,
    env: dict[str, Output],
    outer: Scope | None,
    base: Output,
    plan: P.Plan,
    schema: tuple[Column, ...],
    distinct: bool,
) -> Output:
    """The recursive CTE as a :class:`~changeflow.compute.recursive.Recursive` node, the rows
    of the last iteration read as a collection of its own name."""
    if base.keys:
        raise unsupported("a correlated WITH RECURSIVE in a view or SUBSCRIBE", cte)
    names = [c.name for c in schema]
    marker = R.marker(name)
    env[name] = Output(P.Get(marker, schema), names)
    step = optimize(_step(planner, cte.this, name, schema, outer))
    node = R.Recursive((plan, *R.reads(step, marker)), step, marker, distinct, schema)
    env[name] = Output(node, names)
    return env[name]
