"""Queries (sqlglot trees of SELECT, set operations, VALUES, WITH) into the plan language.

:func:`plan_query` resolves names through a :class:`~changeflow.adapter.relations.Resolver` with
PostgreSQL's rules and errors and returns a :class:`~changeflow.adapter.relations.Query`.
Subqueries in expressions become columns joined to the rows that use them; correlated ones are
decorrelated when their correlation is equalities AND-ed at the top of their WHERE.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from changeflow.adapter.relations import Finishing, Query, Resolver
from changeflow.adapter.sql import avg
from changeflow.adapter.sql.rows import (
    ONE_ROW,
    Output,
    Rel,
    col_of,
    one_row,
    resolve_unknown,
    unify_columns,
)
from changeflow.adapter.sql.scalar import (
    AGGREGATE_NODES,
    Scalars,
    contains,
    is_aggregate,
    walk,
)
from changeflow.adapter.sql.scope import Field, Scope, correlated, ident, unsupported
from changeflow.adapter.sql.subquery import Items, Stage
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute import scalars as S
from changeflow.compute.optimize import optimize
from changeflow.compute.types import BOOL, NULLTYPE
from changeflow.errors import PlanError


def plan_query(query: exp.Expression, resolver: Resolver, temporal_and_only: bool = False) -> Query:
    """``query`` planned: its rows, its ORDER BY/LIMIT/OFFSET as finishing, what it read."""
    planner = Planner(resolver, temporal_and_only)
    out = planner.query(query, None, top=True)
    plan = optimize(resolve_unknown(out.plan))
    return Query(
        plan,
        out.finishing or Finishing(),
        frozenset(planner.timelines),
        frozenset(planner.items),
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


def output_name(node: exp.Expression) -> str:
    """The column name PostgreSQL gives a select item."""
    if isinstance(node, exp.Alias):
        return ident(node.args.get("alias"))
    if isinstance(node, exp.Column):
        return ident(node.this)
    if isinstance(node, exp.Paren):
        return output_name(node.this)
    if isinstance(node, exp.Cast) and not isinstance(node.this, exp.Literal):
        return output_name(node.this)
    if type(node) in AGGREGATE_NODES:
        return {exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or"}.get(
            type(node), "string_agg" if isinstance(node, exp.GroupConcat) else node.key
        )
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func) and not isinstance(node, exp.Case | exp.Cast):
        return node.key
    if isinstance(node, exp.Case):
        return "case"
    return "?column?"


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


def _int_constant(node: exp.Expression, what: str) -> int | None:
    if isinstance(node, exp.Var) and node.name.upper() == "ALL" or isinstance(node, exp.Null):
        return None
    sc = Scalars(Scope(), (), what)
    e = sc(node)
    if e.columns() or not e.type.integer and e.type != NULLTYPE:
        raise PlanError(f"argument of {what} must be an integer constant", sqlstate="42804")
    return e.eval(())


Domain = tuple[P.Plan, list[Field], list[exp.Expression]]


class Planner:
    """Plans one statement; remembers the catalog items and timelines it read."""

    def __init__(self, resolver: Resolver, temporal_and_only: bool) -> None:
        self.resolver = resolver
        self.temporal_and_only = temporal_and_only
        self.items: set[str] = set()
        self.timelines: set[str] = set()
        self.ctes: list[dict[str, Output]] = []

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
        if with_.args.get("recursive"):
            raise unsupported("WITH RECURSIVE", with_)
        env: dict[str, Output] = {}
        self.ctes.append(env)
        try:
            for cte in with_.expressions:
                alias = cte.args.get("alias")
                name = ident(alias.this if alias is not None else None)
                if name in env:
                    raise PlanError(
                        f'WITH query name "{name}" specified more than once', sqlstate="42712"
                    )
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
                env[name] = Output(resolve_unknown(body.plan), names)
            bare = node.copy()
            bare.set("with_", None)
            bare.set("with", None)
            return self.query(bare, outer, top, corr, domain)
        finally:
            self.ctes.pop()

    def finish(
        self, out: Output, node: exp.Expression, top: bool, hidden: list[P.Order] | None
    ) -> Output:
        """ORDER BY/LIMIT/OFFSET of a set operation, VALUES or parenthesized query."""
        order = node.args.get("order")
        orders = []
        if order is not None:
            for o in order.expressions:
                orders.append(self.output_order(o, out.names))
        return self.limit(out, node, top, orders, len(out.names))

    def output_order(self, o: exp.Ordered, names: list[str]) -> P.Order:
        """An ORDER BY item that must name an output column (by position or name)."""
        target = o.this
        index = self.ordinal(target, len(names))
        if index is None and isinstance(target, exp.Column) and not target.args.get("table"):
            matches = [i for i, n in enumerate(names) if n == ident(target.this)]
            if len(matches) > 1:
                raise PlanError(f'ORDER BY "{names[matches[0]]}" is ambiguous', sqlstate="42702")
            index = matches[0] if matches else None
            if index is None:
                raise PlanError(f'column "{ident(target.this)}" does not exist', sqlstate="42703")
        if index is None:
            raise unsupported("ORDER BY on a set operation other than by result columns", target)
        return _order(index, o)

    def ordinal(self, node: exp.Expression, width: int) -> int | None:
        if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
            n = int(node.this)
            if not 1 <= n <= width:
                raise PlanError(f"ORDER BY position {n} is not in select list", sqlstate="42P10")
            return n - 1
        return None

    def limit(
        self, out: Output, node: exp.Expression, top: bool, orders: list[P.Order], width: int
    ) -> Output:
        """Apply ORDER BY ``orders`` and LIMIT/OFFSET; keep the first ``width`` columns (past
        the key columns)."""
        limit_node, offset_node = node.args.get("limit"), node.args.get("offset")
        limit = None
        if isinstance(limit_node, exp.Fetch):
            options = limit_node.args.get("limit_options")
            if options is not None and (
                options.args.get("percent") or options.args.get("with_ties")
            ):
                raise unsupported("FETCH ... PERCENT or WITH TIES", limit_node)
            count = limit_node.args.get("count")
            limit = 1 if count is None else _int_constant(count, "FETCH")
        elif limit_node is not None:
            limit = _int_constant(limit_node.expression, "LIMIT")
        offset = 0
        if offset_node is not None:
            offset = _int_constant(offset_node.expression, "OFFSET") or 0
        if limit is not None and limit < 0:
            raise PlanError("LIMIT must not be negative", sqlstate="2201W")
        if offset < 0:
            raise PlanError("OFFSET must not be negative", sqlstate="2201X")
        full = len(out.plan.schema) - out.keys
        if top:
            shifted = tuple(orders)
            finishing = Finishing(shifted, limit, offset, width if width < full else None)
            return replace(out, finishing=finishing)
        plan = out.plan
        if limit is not None or offset:
            keys = tuple(range(out.keys))
            shifted_orders = tuple(
                P.Order(o.column + out.keys, o.desc, o.nulls_last) for o in orders
            )
            plan = P.TopK(plan, keys, shifted_orders, limit, offset)
        if width < full:
            plan = P.Project(plan, tuple(range(out.keys + width)))
        return replace(out, plan=plan, names=out.names[:width])

    # -- set operations and VALUES -----------------------------------------------------------

    def setop(self, node: exp.Expression, outer: Scope | None, top: bool) -> Output:
        left = self.query(node.this, outer)
        right = self.query(node.expression, outer)
        if len(left.names) != len(right.names):
            word = type(node).__name__.upper()
            raise PlanError(
                f"each {word} query must have the same number of columns", sqlstate="42601"
            )
        a, b = unify_columns([left.plan, right.plan], type(node).__name__.upper())
        distinct = node.args.get("distinct") is not False
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
        rows = []
        width = None
        for row in node.expressions:
            items = row.expressions if isinstance(row, exp.Tuple) else [row]
            if width is not None and len(items) != width:
                raise PlanError("VALUES lists must all be the same length", sqlstate="42601")
            width = len(items)
            sc = Scalars(Scope([], outer), (), "VALUES")
            exprs = tuple((f"column{i + 1}", sc(e)) for i, e in enumerate(items))
            rows.append(P.Map(ONE_ROW, exprs))
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
        distinct = node.args.get("distinct")
        if distinct is not None and distinct.args.get("on") is not None:
            raise unsupported("SELECT DISTINCT ON", distinct)
        for key in ("windows", "qualify", "connect", "laterals", "into"):
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
        out = self.project(node, stage, items, key_cols, top, outer_keys, defaults)
        return replace(out, null_safe=domain is not None)

    def with_domain(
        self, rel: Rel, domain: Domain
    ) -> tuple[Rel, list[X.Expr], list[exp.Expression]]:
        """``rel`` joined with the domain, whose columns the query names as the outer ones."""
        plan, bound, outer_keys = domain
        width = rel.width
        joined = P.Join((rel.plan, plan))
        fields = [Field(b.table, b.name, width + b.index, star=False) for b in bound]
        scope = Scope(rel.scope.fields, rel.scope.outer, fields)
        keys: list[X.Expr] = [col_of(joined, width + i) for i in range(len(bound))]
        return Rel(joined, scope), keys, outer_keys

    def split_correlation(
        self, where: exp.Expression | None, scope: Scope, corr: bool
    ) -> tuple[list[exp.Expression], list[tuple[exp.Expression, exp.Expression]]]:
        """WHERE's conjuncts without outer references, and the (inner, outer) sides of those
        that are correlated equalities; any other correlation is an error."""
        local, pairs = [], []
        for c in conjuncts(where):
            sides = self.correlation(c, scope)
            if sides is None:
                local.append(c)
            elif not corr:
                raise correlated()
            else:
                pairs.append(sides)
        return local, pairs

    def correlation(
        self, node: exp.Expression, scope: Scope
    ) -> tuple[exp.Expression, exp.Expression] | None:
        if scope.outer is None or not _refers_out(node, scope):
            return None
        if isinstance(node, exp.EQ):
            a, b = node.this, node.expression
            for inner, out in ((a, b), (b, a)):
                if _only_inner(inner, scope) and _only_outer(out, scope):
                    return inner, out
        raise correlated()

    def aggregating(self, node: exp.Select, nodes: list[exp.Expression]) -> bool:
        avg.refuse_windows(nodes)
        if node.args.get("group") is not None or node.args.get("having") is not None:
            return True
        return any(contains(n, is_aggregate) for n in nodes)

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

    # -- FROM --------------------------------------------------------------------------------

    def from_(self, node: exp.Select, outer: Scope | None) -> Rel:
        source = node.args.get("from_") or node.args.get("from")
        if source is None:
            return Rel(ONE_ROW, Scope([], outer))
        rel = self.table_ref(source.this, outer)
        for j in node.args.get("joins") or []:
            rel = self.join(rel, self.table_ref(j.this, outer), j, outer)
        return rel

    def lookup(self, name: str) -> Output:
        for env in reversed(self.ctes):
            if name in env:
                return env[name]
        relation = self.resolver.relation(name)
        self.items.add(relation.name)
        self.timelines.add(relation.timeline)
        return Output(relation.plan, [c.name for c in relation.plan.schema])

    def table_ref(self, node: exp.Expression, outer: Scope | None) -> Rel:
        alias = node.args.get("alias")
        if isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                raise unsupported("a function in FROM", node)
            if node.args.get("sample") is not None:
                raise unsupported("TABLESAMPLE", node)
            name = ident(node.this)
            full = ".".join(ident(p) for p in (node.args.get("catalog"), node.args.get("db")) if p)
            out = self.lookup(f"{full}.{name}" if full else name)
            default = name
        elif isinstance(node, exp.Subquery):
            inner = self.query(node.this, outer)
            out = self.finish(inner, node, False, None)
            out = Output(resolve_unknown(out.plan), out.names)
            default = None
        elif isinstance(node, exp.Values):
            out = self.values(node, outer)
            default = None
        elif isinstance(node, exp.Lateral):
            raise unsupported("LATERAL", node)
        else:
            raise unsupported(f"{type(node).__name__} in FROM", node)
        table = ident(alias.this) if alias is not None and alias.this else default
        names = list(out.names)
        columns = alias.columns if alias is not None else []
        if len(columns) > len(names):
            raise PlanError(
                f'table "{table}" has {len(names)} columns available but {len(columns)} '
                "columns specified",
                sqlstate="42P10",
            )
        for i, c in enumerate(columns):
            names[i] = ident(c)
        fields = [Field(table, n, i) for i, n in enumerate(names)]
        return Rel(out.plan, Scope(fields, outer))

    def join(self, left: Rel, right: Rel, j: exp.Join, outer: Scope | None) -> Rel:
        clash = left.scope.tables & right.scope.tables
        if clash:
            name = sorted(clash)[0]
            raise PlanError(f'table name "{name}" specified more than once', sqlstate="42712")
        side = str(j.args.get("side") or "").lower()
        kind = {"left": "left", "right": "right", "full": "full"}.get(side, "inner")
        if str(j.args.get("kind") or "").upper() in ("SEMI", "ANTI", "ASOF"):
            raise unsupported(f"{j.args['kind']} JOIN", j)
        width = left.width
        shifted = right.scope.shifted(width)
        using = [ident(u) for u in j.args.get("using") or []]
        if str(j.args.get("method") or "").upper() == "NATURAL":
            right_names = {f.name for f in right.scope.star(None)}
            using = [f.name for f in left.scope.star(None) if f.name in right_names]
        equivalences: list[tuple[int, int]] = []
        merged: list[tuple[str, int, int]] = []
        for name in using:
            lf = _using_side(left.scope, name, "left")
            rf = _using_side(shifted, name, "right")
            equivalences.append((lf.index, rf.index))
            merged.append((name, lf.index, rf.index))
        residual = None
        on = j.args.get("on")
        scope = Scope(left.scope.fields + shifted.fields, outer)
        if on is not None:
            if contains(on, lambda n: isinstance(n, exp.Query | exp.Exists)):
                raise unsupported("a subquery in JOIN/ON", on)
            probe = P.Join((left.plan, right.plan))
            sc = Scalars(scope, probe.schema, "JOIN/ON")
            rest = []
            for c in conjuncts(on):
                e = sc(c)
                if _column_equality(e):
                    equivalences.append((e.a.index, e.b.index))  # type: ignore[attr-defined]
                    continue
                rest.append(e)
            if rest:
                residual = rest[0] if len(rest) == 1 else X.And(tuple(rest))
        plan: P.Plan = P.Join((left.plan, right.plan), tuple(equivalences), kind, residual)
        if not merged:
            return Rel(plan, scope)
        hidden = {i for _, li, ri in merged for i in (li, ri)}
        fields = []
        coalesced = []
        for name, li, ri in merged:
            index = {"inner": li, "left": li, "right": ri}.get(kind)
            if index is None:
                a, b = P.col(plan.schema, li), P.col(plan.schema, ri)
                index = len(plan.schema) + len(coalesced)
                coalesced.append((name, X.Coalesce((a, b))))
            fields.append(Field(None, name, index))
        if coalesced:
            plan = P.Map(plan, tuple(coalesced))
        for f in scope.fields:
            if f.index in hidden:
                fields.append(Field(f.table, f.name, f.index, star=False, bare=False))
            else:
                fields.append(f)
        return Rel(plan, Scope(fields, outer))

    # -- WHERE and HAVING --------------------------------------------------------------------

    def filter(self, rel: Rel, predicates: list[exp.Expression], clause: str) -> Rel:
        stage = Stage(self, rel, clause, allow_now=True)
        return stage.filter(predicates)

    # -- GROUP BY ----------------------------------------------------------------------------

    def aggregate(
        self,
        node: exp.Select,
        stage: Stage,
        items: Items,
        inner_keys: list[X.Expr],
        order_nodes: list[exp.Expression],
    ) -> tuple[Stage, tuple[Any, ...] | None]:
        """Group the stage's rows: GROUP BY, the aggregates of the select list, HAVING and
        ORDER BY. Returns the grouped stage and, without GROUP BY, the row over no input."""
        rel = stage.rel
        pre = Scalars(rel.scope, rel.plan.schema, "GROUP BY", dict(items.replacements))
        group = node.args.get("group")
        groups = group.expressions if group is not None else []
        keys = list(inner_keys) + [self.group_key(g, pre, items) for g in groups]
        having = node.args.get("having")
        sources = items.nodes + ([having.this] if having else []) + order_nodes
        aggs: list[P.Aggregate] = []
        slots: dict[int, list[int]] = {}
        agg_scalars = Scalars(rel.scope, rel.plan.schema, "an aggregate", dict(items.replacements))
        filtered = {
            id(n.this) for source in sources for n in walk(source) if _filtered_aggregate(n)
        }
        for source in sources:
            for n in walk(source):
                if id(n) in filtered or id(n) in slots:
                    continue
                if is_aggregate(n) or _filtered_aggregate(n):
                    parts = avg.parts(self.aggregate_call(n, agg_scalars))
                    aggs += [a for a in parts if a not in aggs]
                    slots[id(n)] = [aggs.index(a) for a in parts]
        plan = rel.plan
        extra = [(f"group{i}", k) for i, k in enumerate(keys) if not isinstance(k, X.Col)]
        if extra:
            plan = P.Map(plan, tuple(extra))
        indices, fresh = [], len(rel.plan.schema)
        for k in keys:
            if isinstance(k, X.Col):
                indices.append(k.index)
            else:
                indices.append(fresh)
                fresh += 1
        names = tuple(f"{a.func}" for a in aggs)
        reduced: P.Plan = P.Reduce(plan, tuple(indices), tuple(aggs), names)
        defaults = None
        if not keys or (group is None and inner_keys):
            if not inner_keys:
                reduced = one_row(reduced)
            defaults = tuple(0 if a.func == "count" else None for a in aggs)
        width = len(keys)
        agg_cols = {i: avg.combine(reduced, width, js) for i, js in slots.items()}

        def hook(n: exp.Expression) -> X.Expr | None:
            if id(n) in agg_cols:
                return agg_cols[id(n)]
            if contains(n, is_aggregate) or contains(
                n, lambda m: isinstance(m, exp.Query | exp.Exists)
            ):
                return None
            try:
                e = pre.expr(n)
            except PlanError:
                e = None
            if e is not None and not isinstance(e, X.Lit):
                for i, k in enumerate(keys):
                    if e == k:
                        return col_of(reduced, i)
            if isinstance(n, exp.Column):
                f = items.fields.get(id(n)) or rel.scope.resolve(n)
                shown = f"{f.table}.{f.name}" if f.table else f.name
                raise PlanError(
                    f'column "{shown}" must appear in the GROUP BY clause or be used in an '
                    "aggregate function",
                    sqlstate="42803",
                )
            return None

        grouped = Stage(self, Rel(reduced, Scope([], rel.scope)), "SELECT", hook=hook)
        if having is not None:
            if defaults is not None and inner_keys:
                raise correlated()
            grouped.clause = "HAVING"
            grouped.allow_now = True
            grouped.rel = grouped.filter([having.this])
            grouped.allow_now = False
            grouped.clause = "SELECT"
        grouped.default_row = (None,) * width + defaults if defaults is not None else None
        return grouped, defaults

    def group_key(self, g: exp.Expression, pre: Scalars, items: Items) -> X.Expr:
        if isinstance(g, exp.Literal) and not g.is_string and str(g.this).isdigit():
            n = int(g.this)
            if not 1 <= n <= len(items.nodes):
                raise PlanError(f"GROUP BY position {n} is not in select list", sqlstate="42P10")
            target = items.nodes[n - 1]
            if contains(target, is_aggregate):
                raise PlanError(
                    f"aggregate functions are not allowed in GROUP BY: {target.sql('postgres')}",
                    sqlstate="42803",
                )
            return pre(target)
        if isinstance(g, exp.Column) and not g.args.get("table"):
            name = ident(g.this)
            if not pre.scope.find(name, None) and name in items.names:
                return pre(items.nodes[items.names.index(name)])
        if contains(g, is_aggregate):
            raise PlanError("aggregate functions are not allowed in GROUP BY", sqlstate="42803")
        return pre(g)

    def aggregate_call(self, n: exp.Expression, sc: Scalars) -> P.Aggregate:
        if isinstance(n, exp.Filter):
            plain = self.aggregate_call(n.this, sc)
            sc.clause = "FILTER"
            cond = sc(n.expression.this)
            arg = plain.arg if plain.arg is not None else X.Lit(True, BOOL)
            when = X.Case(((cond, arg),), X.Lit(None))
            return P.Aggregate(plain.func, when, plain.distinct, plain.separator)
        func = AGGREGATE_NODES.get(type(n), "bool_and")
        arg = n.this if not isinstance(n, exp.Anonymous) else n.expressions[0]
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            if len(arg.expressions) != 1:
                raise unsupported("an aggregate of several DISTINCT arguments", n)
            arg = arg.expressions[0]
        if isinstance(arg, exp.Order):
            raise unsupported("ORDER BY inside an aggregate", n)
        if isinstance(n, exp.Count) and n.expressions:
            raise PlanError(
                f"function count() of {1 + len(n.expressions)} arguments does not exist",
                sqlstate="42883",
            )
        if isinstance(n, exp.Min | exp.Max) and n.expressions:
            raise unsupported(f"{func}() of several arguments", n)
        if contains(arg, is_aggregate):
            raise PlanError("aggregate function calls cannot be nested", sqlstate="42803")
        if contains(arg, lambda m: isinstance(m, exp.Query | exp.Exists)):
            raise unsupported("a subquery in an aggregate", n)
        separator = ","
        if func == "string_agg":
            sep = n.args.get("separator")
            if not (isinstance(sep, exp.Literal) and sep.is_string):
                raise unsupported("string_agg with a separator that is not a text literal", n)
            separator = str(sep.this)
        if isinstance(arg, exp.Star):
            if func != "count":
                raise PlanError(f"function {func}(*) does not exist", sqlstate="42883")
            return P.Aggregate("count")
        sc.clause = f"{func}()"
        return P.Aggregate(func, sc(arg), distinct, separator)

    # -- the select list, DISTINCT, ORDER BY -------------------------------------------------

    def project(
        self,
        node: exp.Select,
        stage: Stage,
        items: Items,
        key_cols: list[int],
        top: bool,
        outer_keys: list[exp.Expression],
        defaults: tuple[Any, ...] | None,
    ) -> Output:
        order = node.args.get("order")
        ordered = list(order.expressions) if order is not None else []
        stage.hoist(items.nodes + [o.this for o in ordered])
        sc = stage.scalars()
        exprs = [sc(n) for n in items.nodes]
        names = list(items.names)
        distinct = node.args.get("distinct") is not None
        orders: list[P.Order] = []
        hidden: list[X.Expr] = []
        for o in ordered:
            target = o.this
            index = self.ordinal(target, len(exprs))
            if index is None and isinstance(target, exp.Column) and not target.args.get("table"):
                name = ident(target.this)
                matches = [i for i, n in enumerate(names) if n == name]
                if len({exprs[i] for i in matches}) > 1:
                    raise PlanError(f'ORDER BY "{name}" is ambiguous', sqlstate="42702")
                index = matches[0] if matches else None
            if index is None:
                sc.clause = "ORDER BY"
                e = sc(target)
                sc.clause = "SELECT"
                if e in exprs:
                    index = exprs.index(e)
                elif distinct:
                    raise PlanError(
                        "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                        sqlstate="42P10",
                    )
                else:
                    index = len(exprs) + len(hidden)
                    hidden.append(e)
            orders.append(_order(index, o))
        plan = stage.rel.plan
        base = len(plan.schema)
        all_exprs = exprs + hidden
        new = [(f"c{i}", e) for i, e in enumerate(all_exprs) if not isinstance(e, X.Col)]
        if new:
            plan = P.Map(plan, tuple(new))
        columns, fresh = list(key_cols), base
        for e in all_exprs:
            if isinstance(e, X.Col):
                columns.append(e.index)
            else:
                columns.append(fresh)
                fresh += 1
        key_names = [f"key{i}" for i in range(len(key_cols))]
        hidden_names = [f"order{i}" for i in range(len(hidden))]
        plan = P.Project(plan, tuple(columns), tuple(key_names + names + hidden_names))
        if distinct:
            plan = P.Distinct(plan)
        out_defaults = None
        if defaults is not None and stage.default_row is not None:
            out_defaults = tuple(_eval_default(e, stage.default_row) for e in exprs)
        out = Output(plan, names + hidden_names, len(key_cols), outer_keys, out_defaults)
        return self.limit(out, node, top, orders, len(names))


def _eval_default(e: X.Expr, row: tuple[Any, ...]) -> Any:
    try:
        return e.eval(row)
    except Exception:  # noqa: BLE001 - an error over no rows surfaces when the plan runs
        return None


def _filtered_aggregate(n: exp.Expression) -> bool:
    return isinstance(n, exp.Filter) and is_aggregate(n.this)


def _column_equality(e: X.Expr) -> bool:
    if not (isinstance(e, X.Cmp) and e.op == "="):
        return False
    a, b = e.a, e.b
    return isinstance(a, X.Col) and isinstance(b, X.Col) and S.comparable(a.type, b.type)


def _order(index: int, o: exp.Ordered) -> P.Order:
    desc = bool(o.args.get("desc"))
    nulls_first = o.args.get("nulls_first")
    nulls_last = None if nulls_first is None else not nulls_first
    return P.Order(index, desc, nulls_last)


def _using_side(scope: Scope, name: str, side: str) -> Field:
    found = scope.find(name, None)
    if not found:
        raise PlanError(
            f'column "{name}" specified in USING clause does not exist in {side} table',
            sqlstate="42703",
        )
    if len(found) > 1:
        raise PlanError(
            f'common column name "{name}" appears more than once in {side} table',
            sqlstate="42702",
        )
    return found[0]


def _columns_of(node: exp.Expression) -> list[exp.Column]:
    return [n for n in walk(node) if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star)]


def _is_inner(c: exp.Column, scope: Scope) -> bool:
    return bool(scope.find(ident(c.this), ident(c.args.get("table")) or None))


def _refers_out(node: exp.Expression, scope: Scope) -> bool:
    return any(not _is_inner(c, scope) for c in _columns_of(node)) and any(
        scope.outer is not None and scope.outer.knows(ident(c.this), ident(c.args.get("table")))
        for c in _columns_of(node)
        if not _is_inner(c, scope)
    )


def _only_inner(node: exp.Expression, scope: Scope) -> bool:
    cols = _columns_of(node)
    return bool(cols) and all(_is_inner(c, scope) for c in cols) and not _has_query(node)


def _only_outer(node: exp.Expression, scope: Scope) -> bool:
    cols = _columns_of(node)
    return bool(cols) and not any(_is_inner(c, scope) for c in cols) and not _has_query(node)


def _has_query(node: exp.Expression) -> bool:
    return any(
        isinstance(n, exp.Query | exp.Exists) or (isinstance(n, exp.In) and n.args.get("query"))
        for n in walk(node)
        if n is not node
    ) or isinstance(node, exp.Query | exp.Exists)
