"""Queries (sqlglot trees of SELECT, set operations, VALUES, WITH) into the plan language.

:func:`plan_query` resolves names through a :class:`~changeflow.adapter.relations.Resolver` with
PostgreSQL's rules and errors and returns a :class:`~changeflow.adapter.relations.Query`.
Subqueries in expressions become columns joined to the rows that use them; correlated ones are
decorrelated when their correlation is equalities AND-ed at the top of their WHERE.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from dataclasses import replace

from sqlglot import exp

from changeflow.adapter.object_ids import (
    fold_object_ids,
    read_ids,
    reg_columns_read,
    shown_ids,
)
from changeflow.adapter.relations import Finishing, Query, Resolver
from changeflow.adapter.sql.array_subquery import plan_array_subqueries
from changeflow.adapter.sql.colnames import output_name
from changeflow.adapter.sql.correlation import Correlation, Domain
from changeflow.adapter.sql.from_clause import FromClause
from changeflow.adapter.sql.grouping import Grouping
from changeflow.adapter.sql.maintainable import varies
from changeflow.adapter.sql.ordering import Ordering, inherit_order
from changeflow.adapter.sql.quantified import relation_names, rewrite_quantified
from changeflow.adapter.sql.recursive import RUN, is_recursive, recursive_cte
from changeflow.adapter.sql.row_compare import rewrite_row_comparisons
from changeflow.adapter.sql.rows import (
    ONE_ROW,
    Output,
    Rel,
    col_of,
    quoted_literal_columns,
    resolve_unknown,
    unify_columns,
)
from changeflow.adapter.sql.scalar import Scalars
from changeflow.adapter.sql.scope import Scope, correlated, ident, unsupported
from changeflow.adapter.sql.subquery import Items, Stage
from changeflow.adapter.sql.table_functions import set_returning
from changeflow.adapter.sql.types import operator_for
from changeflow.adapter.sql.windows import Windows
from changeflow.adapter.sql_functions import inline_calls
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.optimize import optimize
from changeflow.errors import PlanError

# the rows that a statement's data-modifying WITH queries returned, by name: the statement
# reads them as WITH queries (see adapter/with_writes.py)
WRITTEN: ContextVar[dict[str, Output] | None] = ContextVar("WRITTEN", default=None)


def plan_query(
    query: exp.Expression,
    resolver: Resolver,
    temporal_and_only: bool = False,
    shown_types: bool = False,
) -> Query:
    """``query`` planned: its rows, its ORDER BY/LIMIT/OFFSET as finishing, what it read;
    ``shown_types``: its rows are shown, with the oid and reg* types of its select list."""
    unbound = next(query.find_all(exp.Parameter), None)
    if unbound is not None:  # bound values replace $n before a statement is parsed
        raise PlanError(f"there is no parameter ${unbound.name}", sqlstate="42P02")
    query = inline_calls(query)
    state = getattr(resolver, "state", None)
    shown = shown_ids(query) if shown_types else ()
    read = read_ids(query, state)  # refuses operators PostgreSQL has none of for an oid
    fold_object_ids(query, state, shown)
    reg_columns_read(query, state)
    plan_array_subqueries(query)
    rewrite_row_comparisons(query)
    rewrite_quantified(query, relation_names(query, resolver))
    inherit_order(query)
    planner = Planner(resolver, temporal_and_only)
    out = planner.query(query, None, top=True)
    plan = optimize(resolve_unknown(out.plan))
    return Query(
        plan,
        out.finishing or Finishing(),
        frozenset(planner.timelines),
        frozenset(planner.items),
        tuple(sorted(set(shown + read))) if shown_types else (),
    )


def view_plan(query: Query) -> P.Plan:
    """A planned query as a view's collection: LIMIT/OFFSET as a TopK by its ORDER BY, hidden
    ORDER BY columns dropped (an ORDER BY alone orders nothing in a collection)."""
    f = query.finishing
    plan = query.plan
    if f.limit is not None or f.offset:
        plan = P.TopK(plan, (), f.order_by, f.limit, f.offset)
    if f.width is not None:
        plan = P.Project(plan, tuple(range(f.width)))
    return plan


class Planner(FromClause, Grouping, Windows, Ordering, Correlation):
    """Plans one statement; remembers the catalog items and timelines it read."""

    def __init__(self, resolver: Resolver, temporal_and_only: bool) -> None:
        self.resolver = resolver
        self.temporal_and_only = temporal_and_only
        self.items: set[str] = set()
        self.timelines: set[str] = set()
        self.ctes: list[dict[str, Output]] = [dict(w)] if (w := WRITTEN.get()) else []

    # -- queries -----------------------------------------------------------------------------

    def query(
        self,
        node: exp.Expression,
        outer: Scope | None,
        top: bool = False,
        corr: bool = False,
        domain: Domain | None = None,
    ) -> Output:
        """Any query node; ``top``: ORDER BY/LIMIT go to finishing; ``corr``: correlation by
        equalities in WHERE is allowed (and planned as key columns); ``domain``: the outer
        columns' distinct values, joined to a SELECT's FROM to decorrelate it."""
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is not None:
            return self.with_(node, with_, outer, top, corr, domain)
        if isinstance(node, exp.Subquery):
            inner = self.query(node.this, outer, corr=corr, domain=domain)
            return self.finish(inner, node, top, None)
        if isinstance(node, exp.Select):
            return self.select(node, outer, top, corr, domain)
        if domain is not None:
            raise correlated()
        if isinstance(node, exp.Union | exp.Except | exp.Intersect):
            return self.setop(node, outer, top)
        if isinstance(node, exp.Values):
            return self.finish(self.values(node, outer), node, top, None)
        raise unsupported(f"{type(node).__name__} as a query", node)

    def with_(
        self,
        node: exp.Expression,
        with_: exp.With,
        outer: Scope | None,
        top: bool,
        corr: bool,
        domain: Domain | None,
    ) -> Output:
        self.ctes.append({})
        try:
            self.define(with_, outer)
            bare = node.copy()
            bare.set("with_", None)
            bare.set("with", None)
            return self.query(bare, outer, top, corr, domain)
        finally:
            self.ctes.pop()

    def define(self, with_: exp.With, outer: Scope | None) -> None:
        """The WITH queries of ``with_`` planned into the innermost of :attr:`ctes`, each
        readable by those after it (and by itself, WITH RECURSIVE)."""
        recursive = bool(with_.args.get("recursive"))
        env = self.ctes[-1]
        for cte in with_.expressions:
            alias = cte.args.get("alias")
            name = ident(alias.this if alias is not None else None)
            if name in env:
                raise PlanError(
                    f'WITH query name "{name}" specified more than once', sqlstate="42712"
                )
            if recursive and is_recursive(cte, name):
                recursive_cte(self, cte, name, env, outer)
                continue
            body = self.query(cte.this, outer)
            names = list(body.names)
            columns = alias.columns if alias is not None else []
            if len(columns) > len(names):
                raise PlanError(
                    f'WITH query "{name}" has {len(names)} columns available but '
                    f"{len(columns)} columns specified",
                    sqlstate="42P10",
                )
            for i, c in enumerate(columns):
                names[i] = ident(c)
            plan, run = resolve_unknown(body.plan), RUN.get()
            if run is not None and outer is None and varies(cte.this):  # run once, here
                plan = P.Constant(tuple(run(optimize(plan)).items()), plan.schema)
            env[name] = Output(plan, names)

    # -- set operations and VALUES -----------------------------------------------------------

    def setop(self, node: exp.Expression, outer: Scope | None, top: bool) -> Output:
        left = self.query(node.this, outer)
        right = self.query(node.expression, outer)
        if len(left.names) != len(right.names):
            word = type(node).__name__.upper()
            raise PlanError(
                f"each {word} query must have the same number of columns", sqlstate="42601"
            )
        plans = quoted_literal_columns([left.plan, right.plan], [node.this, node.expression])
        a, b = unify_columns(plans, type(node).__name__.upper())
        distinct = node.args.get("distinct") is not False
        for c in a.schema if distinct else ():
            operator_for(c.type)
        if isinstance(node, exp.Union):
            plan: P.Plan = P.Union((a, b))
            plan = P.Distinct(plan) if distinct else plan
        elif isinstance(node, exp.Except):
            if distinct:
                a, b = P.Distinct(a), P.Distinct(b)
            plan = P.Threshold(P.Union((a, P.Negate(b))))
        else:
            only_a = P.Threshold(P.Union((a, P.Negate(b))))
            plan = P.Union((a, P.Negate(only_a)))
            plan = P.Distinct(plan) if distinct else plan
        return self.finish(Output(plan, left.names), node, top, None)

    def values(self, node: exp.Values, outer: Scope | None) -> Output:
        lists = [r.expressions if isinstance(r, exp.Tuple) else [r] for r in node.expressions]
        width = len(lists[0])
        if any(len(items) != width for items in lists):
            raise PlanError("VALUES lists must all be the same length", sqlstate="42601")
        if any(item.find(exp.Select) for items in lists for item in items):  # subqueries:
            selects = [  # each row a SELECT (its subqueries joined on as there), UNION ALL
                exp.Select(
                    expressions=[
                        exp.Alias(this=e.copy(), alias=exp.to_identifier(f"column{k + 1}"))
                        for k, e in enumerate(items)
                    ]
                )
                for items in lists
            ]
            union = functools.reduce(
                lambda a, b: exp.Union(this=a, expression=b, distinct=False), selects
            )
            return self.query(union, outer)
        sc = Scalars(Scope([], outer), (), "VALUES")
        # a quoted literal takes its column's type from the other rows, as in PostgreSQL
        columns = [sc.unify([items[i] for items in lists]) for i in range(width)]
        rows = [
            P.Map(ONE_ROW, tuple((f"column{i + 1}", columns[i][r]) for i in range(width)))
            for r in range(len(lists))
        ]
        unified = unify_columns(rows, "VALUES")
        plan = unified[0] if len(unified) == 1 else P.Union(tuple(unified))
        return Output(plan, [c.name for c in plan.schema])

    # -- SELECT ------------------------------------------------------------------------------

    def select(
        self,
        node: exp.Select,
        outer: Scope | None,
        top: bool,
        corr: bool,
        domain: Domain | None = None,
    ) -> Output:
        for key in ("qualify", "connect", "laterals", "into"):
            if node.args.get(key):
                raise unsupported(key.upper(), node)
        rel = self.from_(node, outer)
        where = node.args.get("where")
        inner_keys: list[X.Expr] = []
        outer_keys: list[exp.Expression] = []
        if domain is not None:
            rel, inner_keys, outer_keys = self.with_domain(rel, domain)
        local, pairs = self.split_correlation(where.this if where else None, rel.scope, corr)
        if pairs:
            sc = Scalars(rel.scope, rel.plan.schema, "WHERE")
            inner_keys = [sc(inner) for inner, _ in pairs]
            outer_keys = [o for _, o in pairs]
        if local:
            rel = self.filter(rel, local, "WHERE")
        if inner_keys:
            mapped = P.Map(rel.plan, tuple((f"key{i}", k) for i, k in enumerate(inner_keys)))
            base = rel.width
            inner_keys = [P.col(mapped.schema, base + i) for i in range(len(inner_keys))]
            rel = Rel(mapped, rel.scope)
        items = self.select_items(node, rel)
        stage = Stage(self, rel, "SELECT")
        stage.replacements.update(items.replacements)
        order_nodes = [o.this for o in (node.args.get("order") or exp.Order()).expressions]
        defaults = None
        if self.aggregating(node, items.nodes + order_nodes):
            stage, defaults = self.aggregate(node, stage, items, inner_keys, order_nodes)
            key_cols = list(range(len(inner_keys)))
        else:
            key_cols = [k.index for k in inner_keys]  # type: ignore[attr-defined]
        stage = self.windows(node, stage, items.nodes + order_nodes)
        stage = set_returning(stage, items.nodes)
        out = self.project(node, stage, items, key_cols, top, outer_keys, defaults)
        return replace(out, null_safe=domain is not None)

    def select_items(self, node: exp.Select, rel: Rel) -> Items:
        items = Items()
        for e in node.expressions:
            target = e.this if isinstance(e, exp.Alias) else e
            star = isinstance(target, exp.Star) or (
                isinstance(target, exp.Column) and isinstance(target.this, exp.Star)
            )
            if star:
                table = ident(target.args.get("table")) or None
                if isinstance(e, exp.Alias):
                    raise unsupported("an alias for *", e)
                fields = rel.scope.star(table)
                for f in fields:
                    synthetic = exp.column(
                        exp.to_identifier(f.name, quoted=True),
                        exp.to_identifier(f.table, quoted=True) if f.table else None,
                    )
                    items.replacements[id(synthetic)] = col_of(rel.plan, f.index, f.name)
                    items.fields[id(synthetic)] = f
                    items.add(synthetic, f.name)
            else:
                items.add(target, output_name(e))
        if not items.nodes and node.expressions:
            raise PlanError("SELECT * with no tables is not allowed", sqlstate="42601")
        return items

    # -- WHERE and HAVING --------------------------------------------------------------------

    def filter(self, rel: Rel, predicates: list[exp.Expression], clause: str) -> Rel:
        stage = Stage(self, rel, clause, allow_now=True)
        return stage.filter(predicates)
