"""FROM: tables, views, CTEs, subqueries and VALUES as named relations, and their joins
(ON, USING, NATURAL; inner and outer) with PostgreSQL's errors."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from changeflow.adapter.sql.correlation import conjuncts
from changeflow.adapter.sql.json_records import base_type, is_populate, populate
from changeflow.adapter.sql.lateral import decorrelated, is_lateral_subquery
from changeflow.adapter.sql.rows import ONE_ROW, Output, Rel, resolve_unknown
from changeflow.adapter.sql.scalar import Scalars, contains
from changeflow.adapter.sql.scope import Field, Scope, ident, table_name, unsupported
from changeflow.adapter.sql.table_functions import (
    is_lateral_unnest,
    lateral_unnest,
    table_function,
)
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.errors import PlanError


class FromClause:
    """The Planner's FROM clause."""

    def from_(self, node: exp.Select, outer: Scope | None) -> Rel:
        source = node.args.get("from_") or node.args.get("from")
        if source is None:
            return Rel(ONE_ROW, Scope([], outer))
        return self.joined(source.this, node.args.get("joins") or [], outer)

    def joined(self, first: exp.Expression, joins: list[exp.Join], outer: Scope | None) -> Rel:
        """``first`` and each of ``joins`` joined to what comes before it, left to right."""
        if is_populate(first):  # (with the columns of the row type it names)
            first = populate(first, self.row_type(first))
        for j in joins:
            if is_populate(j.this):
                populate(j.this, self.row_type(j.this))
        rel = self.table_ref(first, outer)
        for i, j in enumerate(joins):
            if is_lateral_unnest(j.this):
                rel = lateral_unnest(rel, j.this, j, outer)
                continue
            if is_lateral_subquery(j.this):
                rel = self.lateral(rel, [first, *joins[:i]], j, outer)
                continue
            rel = self.join(rel, self.table_ref(j.this, outer), j, outer)
        return rel

    def parenthesized(self, node: exp.Expression, outer: Scope | None) -> Rel:
        """A join in parentheses, ``(a JOIN b ON …) [AS j [(c, …)]]``: its own joins first;
        an alias hides the names inside and names the columns its ``*`` shows."""
        inner = node.this if isinstance(node, exp.Subquery) and _has_joins(node.this) else node
        first = inner.copy()
        first.set("joins", None)
        rel = self.joined(first, inner.args["joins"], outer)
        alias = node.args.get("alias") if inner is not node else None
        if alias is None or alias.this is None:
            return rel
        table = ident(alias.this)
        shown = rel.scope.star(None)
        names = [f.name for f in shown]
        if len(alias.columns) > len(names):
            raise PlanError(
                f'table "{table}" has {len(names)} columns available but {len(alias.columns)} '
                "columns specified",
                sqlstate="42P10",
            )
        for i, c in enumerate(alias.columns):
            names[i] = ident(c)
        fields = [Field(table, n, f.index) for n, f in zip(names, shown, strict=True)]
        return Rel(rel.plan, Scope(fields, outer))

    def lookup(self, name: str) -> Output:
        for env in reversed(self.ctes):
            if name in env:
                return env[name]
        relation = self.resolver.relation(name)
        self.items.add(relation.name)
        self.timelines.add(relation.timeline)
        return Output(relation.plan, [c.name for c in relation.plan.schema])

    def row_type(self, call: exp.Expression) -> tuple:
        """The columns of the relation whose row type a populate call names (42704 if none)."""
        name = base_type(call)
        try:
            return self.resolver.relation(name).plan.schema
        except PlanError as e:
            if e.sqlstate != "42P01":
                raise
            found = self.resolver.row_type(name)  # a composite type's (CREATE TYPE … AS (…))
            if found is not None:
                return found
            raise PlanError(f'type "{name}" does not exist', sqlstate="42704") from None

    def table_ref(self, node: exp.Expression, outer: Scope | None) -> Rel:
        if _has_joins(node) or (isinstance(node, exp.Subquery) and _has_joins(node.this)):
            return self.parenthesized(node, outer)
        alias = node.args.get("alias")
        function = table_function(node, alias)
        if function is not None:
            out, default = function, function.names[0] if function.names else None
            if isinstance(node, exp.Table):
                default = "generate_series"
        elif isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                raise unsupported("a function in FROM", node)
            if node.args.get("sample") is not None:
                raise unsupported("TABLESAMPLE", node)
            name = ident(node.this)
            out = self.lookup(table_name(node) if node.args.get("db") else name)
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
        if alias is not None and alias.meta.get("exact") and len(columns) != len(names):
            many = "many" if len(names) > len(columns) else "few"
            raise PlanError(f"subquery has too {many} columns", sqlstate="42601")
        if len(columns) > len(names):
            raise PlanError(
                f'table "{table}" has {len(names)} columns available but {len(columns)} '
                "columns specified",
                sqlstate="42P10",
            )
        for i, c in enumerate(columns):
            names[i] = ident(c)
        fields = [Field(table, n, i) for i, n in enumerate(names)]
        if function is not None and len(names) == 1 and table and table != names[0]:
            fields.append(Field(None, table, 0, star=False))  # its whole row: its one value
        return Rel(out.plan, Scope(fields, outer))

    def lateral(
        self, left: Rel, before: list[exp.Expression], j: exp.Join, outer: Scope | None
    ) -> Rel:
        """``left`` joined to the LATERAL subquery of ``j``, decorrelated: on each outer
        column it names (NULLs matching NULLs where the column may be NULL)."""
        node = self.qualified_outer(j.this, left.scope, outer)
        alias = node.args.get("alias")
        name = alias.name if alias is not None and alias.this is not None else "lateral"
        sub, pairs = decorrelated(node, before, left.scope.tables, name)
        sub.set("alias", alias.copy() if alias is not None else exp.TableAlias(this=name))
        right = self.table_ref(sub, outer)
        keys = {k for _, k in pairs}
        fields = [  # the outer values: hidden from * and x.*, reached unqualified only
            replace(f, table=None, star=False) if f.name in keys else f for f in right.scope.fields
        ]
        right = Rel(right.plan, Scope(fields, outer))
        conditions = []
        for ref, key in pairs:
            nullable = left.plan.schema[left.scope.resolve(ref).index].nullable
            test = exp.NullSafeEQ if nullable else exp.EQ
            conditions.append(test(this=ref.copy(), expression=exp.column(key)))
        on = j.args.get("on")
        if on is not None and not (isinstance(on, exp.Boolean) and on.this is True):
            conditions.append(on.copy())
        side = j.args.get("side")
        if side is not None and str(side).upper() not in ("LEFT", ""):
            raise unsupported(f"{side} JOIN LATERAL", j)
        joined = exp.Join(this=sub, side=side, on=exp.and_(*conditions) if conditions else None)
        return self.join(left, right, joined, outer)

    def qualified_outer(self, node: exp.Lateral, left: Scope, outer: Scope | None) -> exp.Lateral:
        """``node`` (a copy) with each bare column of its subquery's own clauses that none of
        the subquery's FROM items has, but one earlier FROM item does, named with that item
        (``LATERAL (SELECT x * 2)`` reads the outer ``x``, as in PostgreSQL)."""
        node = node.copy()
        query = node.this.this
        if not isinstance(query, exp.Select):
            return node
        items = [query.args["from_"].this] if query.args.get("from_") else []
        items += [j.this for j in query.args.get("joins") or []]
        own: set[str] = set()
        for item in items:
            try:
                own |= {f.name for f in self.table_ref(item.copy(), outer).scope.fields}
            except PlanError:
                return node  # (its own error comes when it is planned)
        aliases = {a.alias.lower() for a in query.expressions if isinstance(a, exp.Alias)}
        for c in list(query.find_all(exp.Column)):
            if c.table or not isinstance(c.this, exp.Identifier) or c.parent_select is not query:
                continue
            name = ident(c.this)
            found = left.find(name, None) if name not in own | aliases else []
            if len(found) == 1 and found[0].table is not None:
                c.set("table", exp.to_identifier(found[0].table))
        return node

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


def _has_joins(node: exp.Expression) -> bool:
    """Is ``node`` a table or subquery with joins of its own (a join in parentheses)?"""
    return isinstance(node, exp.Table | exp.Subquery) and bool(node.args.get("joins"))


def _column_equality(e: X.Expr) -> bool:
    if not (isinstance(e, X.Cmp) and e.op == "="):
        return False
    a, b = e.a, e.b
    return isinstance(a, X.Col) and isinstance(b, X.Col) and X.comparable(a.type, b.type)


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
