"""Correlated subqueries: WHERE's correlated equalities as key columns, and the outer columns'
distinct values (the domain) joined in to decorrelate a SELECT."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.sql.rows import Rel, col_of
from changeflow.adapter.sql.scalar import walk
from changeflow.adapter.sql.scope import Field, Scope, correlated, ident
from changeflow.compute import expr as X
from changeflow.compute import plan as P

Domain = tuple[P.Plan, list[Field], list[exp.Expression]]


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The AND-ed terms of a condition."""
    if node is None:
        return []
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


class Correlation:
    """The Planner's handling of references to an enclosing query."""

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
