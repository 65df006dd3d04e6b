"""ORDER BY, LIMIT/OFFSET and the select list's projection (with DISTINCT) of a query.

At the top of a statement ORDER BY/LIMIT become its finishing; inside one, a LIMIT is a TopK
per correlation key; FETCH … WITH TIES is a filter of ranks (:func:`with_ties`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from changeflow.adapter.relations import Finishing
from changeflow.adapter.sql.colnames import output_name
from changeflow.adapter.sql.enum_order import sort_value
from changeflow.adapter.sql.rows import Output
from changeflow.adapter.sql.scalar import Scalars, bare
from changeflow.adapter.sql.scope import Scope, ident, unsupported
from changeflow.adapter.sql.subquery import Items, Stage
from changeflow.adapter.sql.types import operator_for
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import INT8, NULLTYPE
from changeflow.compute.window import Window, WindowFunc
from changeflow.errors import PlanError


class Ordering:
    """The Planner's ORDER BY, LIMIT and select-list projection."""

    def finish(
        self, out: Output, node: exp.Expression, top: bool, hidden: list[P.Order] | None
    ) -> Output:
        """ORDER BY/LIMIT/OFFSET of a set operation, VALUES or parenthesized query."""
        order = node.args.get("order")
        orders = []
        if order is not None:
            for o in order.expressions:
                orders.append(self.output_order(o, out.names))
            for order in orders:
                operator_for(out.plan.schema[out.keys + order.column].type, ordering=True)
            out, orders = _enum_positions(out, orders)
        return self.limit(out, node, top, orders, len(out.names))

    def output_order(self, o: exp.Ordered, names: list[str]) -> P.Order:
        """An ORDER BY item that must name an output column (by position or name)."""
        target = bare(o.this)
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
        limit, ties = None, False
        if isinstance(limit_node, exp.Fetch):
            options = limit_node.args.get("limit_options")
            if options is not None and options.args.get("percent"):
                raise unsupported("FETCH ... PERCENT", limit_node)
            ties = options is not None and bool(options.args.get("with_ties"))
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
        if ties:
            out = with_ties(out, orders, limit, offset)
            limit, offset = None, 0
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
        on_node = (node.args.get("distinct") or exp.Distinct()).args.get("on")
        on = list(on_node.expressions) if isinstance(on_node, exp.Tuple) else []
        on += [on_node] if on_node is not None and not on else []
        stage.hoist(items.nodes + [o.this for o in ordered] + on)
        sc = stage.scalars()
        exprs = [sc(n) for n in items.nodes]
        names = list(items.names)
        distinct = node.args.get("distinct") is not None and not on
        hidden: list[X.Expr] = []
        orders = [
            _order(self.item_index(o.this, exprs, names, hidden, sc, distinct, "ORDER BY"), o)
            for o in ordered
        ]
        on_cols = [self.item_index(n, exprs, names, hidden, sc, False, "DISTINCT ON") for n in on]
        kinds = [e.type for e in exprs + hidden]
        for c in range(len(exprs)) if distinct else on_cols:
            operator_for(kinds[c])
        for order in orders:
            operator_for(kinds[order.column], ordering=True)
        leading = {o.column for o in orders[: len(on_cols)]}
        if orders and (len(orders) < len(set(on_cols)) or leading != set(on_cols)):
            raise PlanError(
                "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
                sqlstate="42P10",
            )
        orders = [by_position(o, exprs, hidden) for o in orders]
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
        if on_cols:  # the first row of each DISTINCT ON group in ORDER BY's order
            k = len(key_cols)
            group = tuple(range(k)) + tuple(k + c for c in dict.fromkeys(on_cols))
            shifted = tuple(P.Order(o.column + k, o.desc, o.nulls_last) for o in orders)
            plan = P.TopK(plan, group, shifted, 1)
        out_defaults = None
        if defaults is not None and stage.default_row is not None:
            out_defaults = tuple(_eval_default(e, stage.default_row) for e in exprs)
        out = Output(plan, names + hidden_names, len(key_cols), outer_keys, out_defaults)
        return self.limit(out, node, top, orders, len(names))

    def item_index(
        self,
        target: exp.Expression,
        exprs: list[X.Expr],
        names: list[str],
        hidden: list[X.Expr],
        sc: Scalars,
        distinct: bool,
        clause: str,
    ) -> int:
        """The column an ORDER BY or DISTINCT ON item names: a select item by position, by
        output name or by being the same expression, else a hidden column added for it
        (parentheses around a name or position change nothing, as in PostgreSQL)."""
        target = bare(target)
        index = self.ordinal(target, len(exprs))
        if index is None and isinstance(target, exp.Column) and not target.args.get("table"):
            name = ident(target.this)
            matches = [i for i, n in enumerate(names) if n == name]
            if len({exprs[i] for i in matches}) > 1:
                raise PlanError(f'{clause} "{name}" is ambiguous', sqlstate="42702")
            index = matches[0] if matches else None
        if index is not None:
            return index
        sc.clause = clause
        e = sc(target)
        sc.clause = "SELECT"
        if e in exprs:
            return exprs.index(e)
        if e in hidden:
            return len(exprs) + hidden.index(e)
        if distinct:
            raise PlanError(
                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                sqlstate="42P10",
            )
        hidden.append(e)
        return len(exprs) + len(hidden) - 1


def with_ties(out: Output, orders: list[P.Order], limit: int | None, offset: int) -> Output:
    """``OFFSET m FETCH FIRST n ROWS WITH TIES``: the rows past the first ``m`` in ORDER BY's
    order whose rank is at most ``m + n`` (the ``n`` rows and those that tie with the last),
    per correlation key; a filter of a window's ranks, so a view keeps it per partition."""
    if not orders:
        raise PlanError("WITH TIES cannot be specified without ORDER BY clause", sqlstate="42601")
    if limit is None:
        raise PlanError(
            "row count cannot be null in FETCH FIRST ... WITH TIES clause", sqlstate="2201W"
        )
    plan = out.plan
    width = len(plan.schema)
    keys = tuple(range(out.keys))
    shifted = tuple(P.Order(o.column + out.keys, o.desc, o.nulls_last) for o in orders)
    ranks = (WindowFunc("rank"), WindowFunc("row_number"))
    ranked = Window(plan, keys, shifted, ranks, ("rank", "row_number"))
    rank, number = P.col(ranked.schema, width), P.col(ranked.schema, width + 1)
    kept = [X.Cmp("<=", rank, X.Lit(offset + limit, INT8))]
    if offset:
        kept.append(X.Cmp(">", number, X.Lit(offset, INT8)))
    filtered = P.Filter(ranked, tuple(kept))
    return replace(out, plan=P.Project(filtered, tuple(range(width))))


def _enum_positions(out: Output, orders: list[P.Order]) -> tuple[Output, list[P.Order]]:
    """``orders`` of enum output columns as by their labels' positions: columns of them
    added past the output's (the finishing projects them away)."""
    schema, added, shifted = out.plan.schema, [], []
    for o in orders:
        e = P.col(schema, out.keys + o.column)
        if e.type.labels is not None:
            added.append((f"position{len(added)}", sort_value(e)))
            o = replace(o, column=len(schema) - out.keys + len(added) - 1)
        shifted.append(o)
    if not added:
        return out, orders
    return replace(out, plan=P.Map(out.plan, tuple(added))), shifted


def by_position(order: P.Order, exprs: list[X.Expr], hidden: list[X.Expr]) -> P.Order:
    """``order`` of an enum column as by its labels' positions (a hidden column of them)."""
    e = (exprs + hidden)[order.column]
    if e.type.labels is None:
        return order
    hidden.append(sort_value(e))
    return replace(order, column=len(exprs) + len(hidden) - 1)


def _int_constant(node: exp.Expression, what: str) -> int | None:
    if isinstance(node, exp.Var) and node.name.upper() == "ALL" or isinstance(node, exp.Null):
        return None
    sc = Scalars(Scope(), (), what)
    e = sc(node)
    if e.columns() or not e.type.integer and e.type != NULLTYPE:
        raise PlanError(f"argument of {what} must be an integer constant", sqlstate="42804")
    return e.eval(())


def _eval_default(e: X.Expr, row: tuple[Any, ...]) -> Any:
    try:
        return e.eval(row)
    except Exception:  # noqa: BLE001 - an error over no rows surfaces when the plan runs
        return None


def _order(index: int, o: exp.Ordered) -> P.Order:
    desc = bool(o.args.get("desc"))
    nulls_first = o.args.get("nulls_first")
    nulls_last = None if nulls_first is None else not nulls_first
    return P.Order(index, desc, nulls_last)


_OWN = ("group", "having", "distinct", "order", "windows", "qualify", "joins", "laterals")


def inherit_order(tree: exp.Expression) -> None:
    """A SELECT of one derived table with an ORDER BY, and of no order, grouping, DISTINCT,
    window or join of its own (``SELECT * FROM (SELECT … ORDER BY a DESC) s LIMIT 3``), keeps
    that order, as PostgreSQL's plan does: its rows come in it and its LIMIT takes the first."""
    for select in reversed(list(tree.find_all(exp.Select))):  # inner ones first
        source = select.args.get("from_")
        inner = source.this.this if source and isinstance(source.this, exp.Subquery) else None
        if not isinstance(inner, exp.Select) or inner.args.get("order") is None:
            continue
        if any(select.args.get(k) for k in _OWN) or not source.this.alias:
            continue
        if any(e.find(exp.AggFunc, exp.Window) for e in select.expressions):
            continue
        keys = [_outer_key(o, inner, source.this.alias) for o in inner.args["order"].expressions]
        if any(k is None for k in keys):
            keys = _hidden_keys(select, inner, source.this.alias, keys)
        if all(k is not None for k in keys):
            select.set("order", exp.Order(expressions=keys))


def _hidden_keys(
    outer: exp.Select, inner: exp.Select, alias: str, keys: list[exp.Ordered | None]
) -> list[exp.Ordered | None]:
    """``keys`` with those the derived table does not show added to its select list under
    names of their own (``SELECT * FROM (SELECT a FROM t ORDER BY b) s LIMIT 3``), the outer
    ``*`` then written as the columns it showed; ``keys`` as they are where that cannot be
    done (a DISTINCT, a ``*`` or a name twice in the derived table's list)."""
    items = inner.expressions
    names = [output_name(e) for e in items]
    if inner.args.get("distinct") or any(map(_star, items)) or len(set(names)) < len(names):
        return keys
    out = []
    for k, (key, ordered) in enumerate(zip(keys, inner.args["order"].expressions, strict=True)):
        if key is None:
            hidden = f"?order{k}"
            inner.append("expressions", exp.alias_(ordered.this.copy(), hidden, quoted=True))
            key = ordered.copy()
            key.set("this", exp.column(exp.to_identifier(hidden, quoted=True), table=alias))
        out.append(key)
    shown = [exp.column(exp.to_identifier(n, quoted=True), table=alias) for n in names]
    listed = []
    for e in outer.expressions:
        listed += [c.copy() for c in shown] if _star(e) else [e]
    outer.set("expressions", listed)
    return out


def _star(e: exp.Expression) -> bool:
    """Is ``e`` a select list's ``*`` or ``t.*``?"""
    return isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star)


def _outer_key(ordered: exp.Ordered, inner: exp.Select, alias: str) -> exp.Ordered | None:
    """An inner ORDER BY term as the outer SELECT names it (the derived table's column),
    None if the derived table does not show it."""
    key, items = ordered.this, inner.expressions
    names = [e.alias_or_name for e in items]
    starred = any(isinstance(e, exp.Star) or isinstance(e.this, exp.Star) for e in items)
    name = None
    if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(items):
        name = names[int(key.name) - 1]
    elif isinstance(key, exp.Column) and (key.name in names or starred):
        name = key.name
    else:
        name = next((n for e, n in zip(items, names, strict=True) if e.unalias() == key), None)
    if not name or name == "*":
        return None
    out = ordered.copy()
    out.set("this", exp.column(name, table=alias))
    return out
