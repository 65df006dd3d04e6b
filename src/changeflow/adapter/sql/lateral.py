"""LATERAL subqueries in FROM, decorrelated as Materialize does: the subquery runs once per
distinct value of the outer columns it names, over a derived table of those values, and is
joined to the outer rows on them. ``FROM t, LATERAL (SELECT t.a * 2 AS v) x``,
``LEFT JOIN LATERAL (…) x ON true`` and a top-k per outer row (``… ORDER BY … LIMIT k``, as a
``row_number()`` per outer value) become plain joins, so views over them are maintained like
any other; so is an aggregate without GROUP BY (one row per outer row even where none
matches: grouped by the outer values, then left-joined to all of them)."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.sql.colnames import output_name
from changeflow.adapter.sql.scope import unsupported

KEYS = "_lateral_d"  # the derived table of the outer values
RANK = "_lateral_rn"


def is_lateral_subquery(node: exp.Expression) -> bool:
    return isinstance(node, exp.Lateral) and isinstance(node.this, exp.Subquery)


def _inner_names(query: exp.Expression) -> set[str]:
    """The names FROM items inside ``query`` go by (its own and its subqueries')."""
    names = set()
    for node in query.find_all(exp.Table, exp.Subquery, exp.CTE):
        alias = node.args.get("alias")
        if alias is not None and alias.this is not None:
            names.add(alias.name.lower())
        elif isinstance(node, exp.Table):
            names.add(node.name.lower())
    return names


def outer_columns(query: exp.Select, outer_names: set[str]) -> list[exp.Column]:
    """The distinct references of ``query`` to the earlier FROM items (``outer_names``)."""
    inner = _inner_names(query)
    seen: dict[tuple[str, str], exp.Column] = {}
    for c in query.find_all(exp.Column):
        table = c.table.lower()
        if table and table in outer_names and table not in inner:
            seen.setdefault((table, c.name.lower()), c)
    return list(seen.values())


def _keep_names(query: exp.Select) -> None:
    """Name ``query``'s columns as written before its outer references are rewritten (a bare
    ``*`` becomes each FROM item's ``*``, so the keys added to its FROM stay out of it)."""
    sources = [query.args["from_"].this] if query.args.get("from_") else []
    sources += [j.this for j in query.args.get("joins") or []]
    names = [s.alias_or_name for s in sources]
    items: list[exp.Expression] = []
    for item in query.expressions:
        if isinstance(item, exp.Star) and names and all(names):
            items += [exp.Column(this=exp.Star(), table=exp.to_identifier(n)) for n in names]
        elif not isinstance(item, exp.Alias) and not item.find(exp.Star):
            items.append(exp.alias_(item.copy(), output_name(item), quoted=True))
        else:
            items.append(item)
    query.set("expressions", items)


def decorrelated(
    node: exp.Lateral, left: list[exp.Expression], outer_names: set[str], tag: str
) -> tuple[exp.Subquery, list[tuple[exp.Column, str]]]:
    """The LATERAL subquery ``node`` as a derived table of no outer reference, with a column
    per outer column it names (the second value: each outer column and its column there,
    named after ``tag``). ``left`` is the FROM items before it (the first, then the joins, as
    written)."""
    query = node.this.this
    if not isinstance(query, exp.Select):
        raise unsupported("LATERAL of a set operation", node)
    query = query.copy()
    refs = outer_columns(query, outer_names)
    if not refs:
        return exp.Subquery(this=query), []
    keys = [f"_lateral_{tag}_c{i}" for i in range(len(refs))]
    _keep_names(query)
    by_ref = {(c.table.lower(), c.name.lower()): k for c, k in zip(refs, keys, strict=True)}
    for c in list(query.find_all(exp.Column)):
        key = by_ref.get((c.table.lower(), c.name.lower()))
        if key is not None and c.table.lower() not in _inner_names(query):
            c.replace(exp.column(key, KEYS))
    grouped = query.args.get("group") is not None
    ungrouped = not grouped and any(
        isinstance(n, exp.AggFunc) for e in query.expressions for n in e.walk()
    )
    if ungrouped and (
        query.args.get("from_") is None
        or any(query.args.get(a) is not None for a in ("having", "limit", "offset", "distinct"))
    ):
        raise unsupported("LATERAL with an aggregate and no GROUP BY of this form", node)
    distinct = exp.select(
        *(exp.alias_(r.copy(), k) for r, k in zip(refs, keys, strict=True))
    ).distinct()
    distinct.set("from_", exp.From(this=left[0].copy()))
    distinct.set("joins", [j.copy() for j in left[1:]])
    derived = exp.Subquery(this=distinct, alias=_named(KEYS))
    source = query.args.get("from_")
    joins = list(query.args.get("joins") or [])
    if source is not None:
        joins = [exp.Join(this=source.this), *joins]
    query.set("from_", exp.From(this=derived))
    query.set("joins", joins)
    if ungrouped:
        return _aggregated(query, keys, distinct), list(zip(refs, keys, strict=True))
    for k in keys:
        query.append("expressions", exp.alias_(exp.column(k, KEYS), k))
        if grouped:
            query.args["group"].append("expressions", exp.column(k, KEYS))
    limit, offset = query.args.get("limit"), query.args.get("offset")
    order = query.args.get("order")
    query.set("order", None)
    if limit is None and offset is None:
        return exp.Subquery(this=query), list(zip(refs, keys, strict=True))
    if query.args.get("distinct") is not None:
        raise unsupported("LATERAL with DISTINCT and LIMIT", node)
    query.set("limit", None)
    query.set("offset", None)
    names = [n for n in _output_names(query, node) if n not in keys]
    window = exp.Window(
        this=exp.RowNumber(),
        partition_by=[exp.column(k, KEYS) for k in keys],
        order=_by_inputs(order, query) if order is not None else None,
    )
    query.append("expressions", exp.alias_(window, RANK))
    ranked = exp.select(*(exp.column(n, "_lateral_q") for n in [*names, *keys])).from_(
        exp.Subquery(this=query, alias=_named("_lateral_q"))
    )
    rank = exp.column(RANK, "_lateral_q")
    conditions = []
    if limit is not None:
        bound = limit.expression
        if offset is not None:
            bound = exp.Add(this=bound.copy(), expression=offset.expression.copy())
        conditions.append(exp.LTE(this=rank, expression=bound))
    if offset is not None:
        conditions.append(exp.GT(this=rank.copy(), expression=offset.expression.copy()))
    return exp.Subquery(this=ranked.where(exp.and_(*conditions))), list(
        zip(refs, keys, strict=True)
    )


def _by_inputs(order: exp.Order, query: exp.Select) -> exp.Order:
    """``order`` with each key naming an output column (``ORDER BY z`` of ``y AS z``, or
    ``ORDER BY 1``) replaced by its expression, as a window's ORDER BY needs it."""
    order = order.copy()
    outputs = [e for e in query.expressions if not isinstance(e, exp.Star)]
    named = {e.alias.lower(): e.this for e in outputs if isinstance(e, exp.Alias)}
    for key in order.expressions:
        item = key.this
        if isinstance(item, exp.Column) and not item.table and item.name.lower() in named:
            key.set("this", named[item.name.lower()].copy())
        elif isinstance(item, exp.Literal) and not item.is_string and item.name.isdigit():
            at = int(item.name) - 1
            if 0 <= at < len(outputs):
                chosen = outputs[at]
                key.set("this", (chosen.this if isinstance(chosen, exp.Alias) else chosen).copy())
    return order


def _output_names(query: exp.Select, node: exp.Expression) -> list[str]:
    names = []
    for e in query.expressions:
        if isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            raise unsupported("* in a LATERAL subquery with LIMIT", node)
        name = e.alias_or_name
        if not name:
            raise unsupported("an unnamed expression in a LATERAL subquery with LIMIT", node)
        names.append(name)
    return names


def _aggregated(query: exp.Select, keys: list[str], distinct: exp.Select) -> exp.Subquery:
    """An aggregate without GROUP BY, once per outer value even where no row matches (count
    0, the others NULL): grouped by the outer values, then joined to all of them."""
    for e in query.expressions:
        if isinstance(e, exp.AggFunc):  # PostgreSQL names an unnamed aggregate after itself
            e.replace(exp.alias_(e.copy(), e.sql_name().lower()))
    calls = [n for e in query.expressions for n in e.walk() if isinstance(n, exp.AggFunc)]
    grouped = query.copy()
    grouped.set(
        "expressions",
        [exp.alias_(c.copy(), f"_lateral_a{i}") for i, c in enumerate(calls)]
        + [exp.alias_(exp.column(k, KEYS), k) for k in keys],
    )
    grouped.set("group", exp.Group(expressions=[exp.column(k, KEYS) for k in keys]))
    grouped.set("order", None)
    for i, call in enumerate(calls):
        value: exp.Expression = exp.column(f"_lateral_a{i}", "_lateral_g")
        if isinstance(call, exp.Count):
            value = exp.Coalesce(this=value, expressions=[exp.Literal.number(0)])
        call.replace(value)
    outer = exp.select(*query.expressions, *(exp.alias_(exp.column(k, KEYS), k) for k in keys))
    outer.set("from_", exp.From(this=exp.Subquery(this=distinct.copy(), alias=_named(KEYS))))
    pairs = [(exp.column(k, KEYS), exp.column(k, "_lateral_g")) for k in keys]
    on = exp.and_(*(exp.NullSafeEQ(this=a, expression=b) for a, b in pairs))
    outer = outer.join(
        exp.Subquery(this=grouped, alias=_named("_lateral_g")),
        on=on,
        join_type="left",
    )
    return exp.Subquery(this=outer)


def _named(name: str) -> exp.TableAlias:
    return exp.TableAlias(this=exp.to_identifier(name))
