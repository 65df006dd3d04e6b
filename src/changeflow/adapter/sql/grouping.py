"""GROUP BY, HAVING and aggregate calls: a SELECT's rows reduced per group, and the stage that
translates the select list over the groups (a column not grouped is 42803)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from changeflow.adapter.sql import avg, grouping_sets, regression, statistics, whole_row
from changeflow.adapter.sql.enum_order import sort_value
from changeflow.adapter.sql.rows import Rel, col_of, one_row
from changeflow.adapter.sql.scalar import (
    AGGREGATE_NODES,
    Scalars,
    bare,
    contains,
    is_aggregate,
    is_string_literal,
    walk,
)
from changeflow.adapter.sql.scope import Scope, correlated, ident, unsupported
from changeflow.adapter.sql.subquery import Items, Stage
from changeflow.adapter.sql.types import operator_for
from changeflow.adapter.sql.windows import windowed_functions
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.functions.regression import REGRESSIONS
from changeflow.compute.types import BOOL, INT4, NULLTYPE
from changeflow.errors import PlanError


class Grouping:
    """The Planner's GROUP BY and aggregates."""

    def aggregating(self, node: exp.Select, nodes: list[exp.Expression]) -> bool:
        if node.args.get("group") is not None or node.args.get("having") is not None:
            return True
        windowed = windowed_functions(nodes)
        return any(contains(n, lambda m: is_aggregate(m) and id(m) not in windowed) for n in nodes)

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
        expanded = grouping_sets.expand(groups)
        sets = None
        if expanded is not None:
            groups, sets = expanded
        keys = list(inner_keys) + [self.group_key(g, pre, items) for g in groups]
        for k in keys[len(inner_keys) :]:
            operator_for(k.type)
        having = node.args.get("having")
        sources = items.nodes + ([having.this] if having else []) + order_nodes
        aggs: list[P.Aggregate] = []
        slots: dict[int, list[int]] = {}
        called: dict[int, P.Aggregate] = {}
        agg_scalars = Scalars(rel.scope, rel.plan.schema, "an aggregate", dict(items.replacements))
        windowed = windowed_functions(sources)
        filtered = {
            id(n.this) for source in sources for n in walk(source) if _filtered_aggregate(n)
        } | windowed
        for source in sources:
            for n in walk(source):
                if id(n) in filtered or id(n) in slots:
                    continue
                if is_aggregate(n) or _filtered_aggregate(n):
                    called[id(n)] = self.aggregate_call(n, agg_scalars)
                    parts = avg.parts(called[id(n)])
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
        calls = [n for source in sources for n in walk(source) if isinstance(n, exp.Grouping)]
        arguments = [self.grouping_arguments(c, pre, keys, len(inner_keys)) for c in calls]
        reduced: P.Plan = P.Reduce(plan, tuple(indices), tuple(aggs), names)
        if sets is not None:
            reduced = grouping_sets.reduce_sets(
                plan, indices, len(inner_keys), sets, tuple(aggs), names, arguments
            )
        defaults = None
        if not keys or (group is None and inner_keys):
            if not inner_keys:
                reduced = one_row(reduced)
            defaults = tuple(0 if a.func == "count" else None for a in aggs)
        width = len(keys)
        agg_cols = {i: avg.combine(called[i], reduced, width, js) for i, js in slots.items()}
        for j, c in enumerate(calls):  # GROUPING(…): 0 without grouping sets
            at = width + len(aggs) + j
            agg_cols[id(c)] = col_of(reduced, at) if sets is not None else X.Lit(0, INT4)

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

    def grouping_arguments(
        self, call: exp.Grouping, pre: Scalars, keys: list[X.Expr], inner: int
    ) -> list[int]:
        """The grouping keys ``GROUPING(args)`` names (past the correlation keys)."""
        out = []
        for arg in call.expressions:
            e = pre(arg)
            found = [i for i, k in enumerate(keys) if i >= inner and k == e]
            if not found:
                raise PlanError(
                    "arguments to GROUPING must be grouping expressions of the associated "
                    "query level",
                    sqlstate="42803",
                )
            out.append(found[0] - inner)
        return out

    def group_key(self, g: exp.Expression, pre: Scalars, items: Items) -> X.Expr:
        g = bare(g)  # GROUP BY (1) and GROUP BY (name) are GROUP BY 1 and GROUP BY name
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
                named = {
                    n.sql() for n, m in zip(items.nodes, items.names, strict=True) if m == name
                }
                if len(named) > 1:
                    raise PlanError(f'GROUP BY "{name}" is ambiguous', sqlstate="42702")
                return pre(items.nodes[items.names.index(name)])
        if contains(g, is_aggregate):
            raise PlanError("aggregate functions are not allowed in GROUP BY", sqlstate="42803")
        return pre(g)

    def aggregate_call(self, n: exp.Expression, sc: Scalars) -> P.Aggregate:
        if isinstance(n, exp.Filter):
            plain = self.aggregate_call(n.this, sc)
            sc.clause = "FILTER"
            cond = sc(n.expression.this)
            if plain.func == "array_agg":  # it keeps NULLs: the rows left out are told apart
                return replace(plain, filter=cond)
            arg = plain.arg if plain.arg is not None else X.Lit(True, BOOL)
            if plain.func in REGRESSIONS:  # each of the pair left out
                return regression.filtered(plain, cond)
            when = X.Case(((cond, arg),), X.Lit(None))
            return P.Aggregate(plain.func, when, plain.distinct, plain.separator, plain.order)
        func = AGGREGATE_NODES.get(type(n), "bool_and")
        arg = n.this if not isinstance(n, exp.Anonymous) else n.expressions[0]
        ordered: list[exp.Ordered] = []
        if isinstance(arg, exp.Order):
            if func not in P.ORDERED:
                raise unsupported(f"ORDER BY inside {func}()", n)
            arg, ordered = arg.this, list(arg.expressions)
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            if len(arg.expressions) != 1:
                raise unsupported("an aggregate of several DISTINCT arguments", n)
            arg = arg.expressions[0]
        if isinstance(n, exp.Count) and n.expressions:
            raise PlanError(
                f"function count() of {1 + len(n.expressions)} arguments does not exist",
                sqlstate="42883",
            )
        if arg is None:  # count()
            raise PlanError(
                f"{func}(*) must be used to call a parameterless aggregate function",
                sqlstate="42809",
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
        row = whole_row.as_json(sc, arg, jsonb=True) if n.meta.get("jsonb") else None
        if n.meta.get("json") and (row := whole_row.as_json(sc, arg, jsonb=False)) is not None:
            call = n.find_ancestor(exp.Anonymous)  # json_agg_of(this, whether rows)
            call.expressions[1].replace(exp.true())
        value = sc(arg) if row is None else row
        if func in REGRESSIONS:  # (y, x)
            return regression.call(func, [arg, n.expression], [value, sc(n.expression)])
        if distinct:
            operator_for(value.type)
        unknown = value.type is NULLTYPE or is_string_literal(arg)
        if func in _OVERLOADED and unknown:
            raise PlanError(f"function {func}(unknown) is not unique", sqlstate="42725")
        if func in statistics.COMBINED and unknown:  # the numeric category's preferred type
            value = statistics.preferred(arg, value)
        order = tuple(_sort_expr(o, sc) for o in ordered)
        if distinct and any(o.expr != value for o in order):
            raise PlanError(
                "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                sqlstate="42P10",
            )
        if func == "string_agg" and order == (P.SortExpr(value),):
            order = ()  # its values' own order, string_agg's default here
        return P.Aggregate(func, value, distinct, separator, order)


# aggregates PostgreSQL has several of, none preferred for a NULL or a quoted literal
_OVERLOADED = frozenset({"sum", "avg", "array_agg"})


def _sort_expr(o: exp.Ordered, sc: Scalars) -> P.SortExpr:
    """An aggregate's ORDER BY key (a position is a constant there, as in PostgreSQL)."""
    if contains(o.this, is_aggregate):
        raise PlanError("aggregate function calls cannot be nested", sqlstate="42803")
    desc = bool(o.args.get("desc"))
    nulls_first = o.args.get("nulls_first")
    nulls_last = None if nulls_first is None else not nulls_first
    e = sc(o.this)
    operator_for(e.type, ordering=True)
    return P.SortExpr(sort_value(e), desc, nulls_last)


def _filtered_aggregate(n: exp.Expression) -> bool:
    return isinstance(n, exp.Filter) and is_aggregate(n.this)
