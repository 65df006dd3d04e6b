"""``ARRAY(SELECT …)``: the subquery's rows as an array, in its ORDER BY's order.

Planned as the scalar subquery ``COALESCE((SELECT array_agg(x ORDER BY …) FROM … WHERE …),
'{}')`` (no rows give an empty array, not NULL), so a correlated one is decorrelated as other
scalar subqueries are. A subquery that groups, aggregates, is DISTINCT, has a LIMIT or OFFSET
or is a set operation first becomes a derived table (without an ORDER BY: its order could not
be kept).
"""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.sql.colnames import output_name
from changeflow.adapter.sql.scalar import is_aggregate
from changeflow.adapter.sql.scope import unsupported
from changeflow.errors import PlanError


def _aggregated(query: exp.Query) -> exp.Select:
    """The SELECT giving ``query``'s rows' single column as one array."""
    if len(query.selects) != 1:
        raise PlanError("subquery must return only one column", sqlstate="42601")
    simple = (
        isinstance(query, exp.Select)
        and len(query.expressions) == 1
        and not any(query.args.get(k) for k in ("group", "distinct", "limit", "offset", "having"))
        and not any(is_aggregate(n) or isinstance(n, exp.Window) for n in query.walk())
    )
    if simple:
        item = query.expressions[0].unalias()
        order = query.args.get("order")
        query.set("order", None)
        argument = exp.Order(this=item.copy(), expressions=order.expressions) if order else item
        query.set("expressions", [exp.ArrayAgg(this=argument.copy())])
        return query
    if query.args.get("order") is not None:
        raise unsupported("ARRAY(SELECT …) of a grouped or limited query with ORDER BY", query)
    column = exp.column(output_name(query.selects[0]), "_array", quoted=True)
    return exp.select(exp.ArrayAgg(this=column)).from_(query.subquery("_array"))


def plan_array_subqueries(tree: exp.Expression) -> None:
    """Rewrite each ``ARRAY(SELECT …)`` of ``tree`` in place; a select item keeps its name."""
    for node in list(tree.find_all(exp.Array)):
        if len(node.expressions) != 1 or not isinstance(node.expressions[0], exp.Query):
            continue
        rows = exp.Subquery(this=_aggregated(node.expressions[0]))
        new = exp.Coalesce(this=rows, expressions=[exp.Literal.string("{}")])
        top: exp.Expression = node  # the select item it names: itself, or a cast of it
        while isinstance(top.parent, exp.Cast | exp.Paren) and top.parent.this is top:
            top = top.parent
        named = isinstance(top.parent, exp.Select) and top in top.parent.expressions
        node.replace(new)
        if named:
            item = new if top is node else top
            item.replace(exp.alias_(item.copy(), "array"))
