"""``x op ANY (subquery)`` and ``x op ALL (subquery)`` for the comparisons other than
``= ANY`` and ``<> ALL`` (planned as IN and NOT IN), rewritten before planning into EXISTS
tests with PostgreSQL's three-valued result: ANY is true where some row compares true, else
NULL where some comparison is NULL, else false (no rows: false); ALL is false where some row
compares false, else NULL where some comparison is NULL, else true (no rows: true)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_ALIAS, _VALUE = "quantified_rows", "quantified_value"


Names = Callable[[str], "set[str] | None"]  # a relation's column names, None: not known


def _binds(query: exp.Select, name: str, names: Names | None) -> bool:
    """May a column ``name`` written unqualified in ``query``'s WHERE be bound by its FROM?
    (No only where each of its sources is a named relation without such a column.)"""
    sources = [query.args["from_"].this] if query.args.get("from_") else []
    sources += [j.this for j in query.args.get("joins") or []]
    for source in sources:
        if not isinstance(source, exp.Table) or names is None or source.args.get("joins"):
            return True
        columns = names(".".join(p.name for p in source.parts))
        if columns is None or name.lower() in columns:
            return True
    return False


def _plain(query: exp.Expression, x: exp.Expression, names: Names | None) -> bool:
    """A SELECT of one expression whose WHERE can take the test of its value: no grouping,
    limit or set operation, and no column of ``x`` that the subquery's FROM could bind (so
    the subquery cannot capture it): each is qualified by a name the FROM does not bind, or
    unqualified and a column of none of the FROM's relations."""
    if not isinstance(query, exp.Select) or len(query.expressions) != 1:
        return False
    clauses = ("group", "having", "limit", "offset", "distinct", "order", "with", "windows")
    item = query.expressions[0]
    aggregated = any(isinstance(n, exp.AggFunc | exp.Window) for n in item.walk())
    inner = {t.alias_or_name for t in query.find_all(exp.Table)}
    columns = list(x.find_all(exp.Column))
    captured = any(c.table in inner if c.table else _binds(query, c.name, names) for c in columns)
    return not (aggregated or captured or any(query.args.get(c) for c in clauses))


def _exists(
    query: exp.Expression,
    x: exp.Expression,
    test: Callable[[exp.Expression], Any],
    names: Names | None,
) -> exp.Exists:
    """EXISTS of a row of ``query`` whose value passes ``test``: the test joins its WHERE
    (so a correlated subquery stays one), or it reads the query as a derived table."""
    if _plain(query, x, names):
        select = query.copy()
        value = select.expressions[0].unalias()
        select.set("expressions", [exp.Literal.number(1)])
        return exp.Exists(this=select.where(test(value.copy())))
    rows = exp.Subquery(
        this=query.copy(),
        alias=exp.TableAlias(this=exp.to_identifier(_ALIAS), columns=[exp.to_identifier(_VALUE)]),
    )
    select = exp.select("1").from_(rows).where(test(exp.column(_VALUE, _ALIAS)))
    return exp.Exists(this=select)


def _case(
    node: exp.Binary, query: exp.Expression, every: bool, names: Names | None
) -> exp.Expression:
    """The three-valued CASE of ``node`` (``x op ANY|ALL (query)``)."""
    kind, x = type(node), node.this

    def decided(v: exp.Expression) -> exp.Expression:
        compared = kind(this=x.copy(), expression=v)
        return exp.Not(this=exp.paren(compared)) if every else compared

    def unknown(v: exp.Expression) -> exp.Expression:
        return exp.Is(this=exp.paren(kind(this=x.copy(), expression=v)), expression=exp.Null())

    null = exp.Cast(this=exp.Null(), to=exp.DataType.build("boolean"))
    return exp.paren(
        exp.Case(
            ifs=[
                exp.If(this=_exists(query, x, decided, names), true=exp.Boolean(this=not every)),
                exp.If(this=_exists(query, x, unknown, names), true=null),
            ],
            default=exp.Boolean(this=every),
        )
    )


def rewrite_quantified(tree: exp.Expression, names: Names | None = None) -> None:
    """Rewrite (in place) each quantified comparison with a subquery that IN and NOT IN do
    not already plan; ``names``: the column names of a relation named in a FROM."""
    for node in list(tree.find_all(*_COMPARISONS)):
        q = node.expression
        if not isinstance(q, exp.Any | exp.All):
            continue
        query = q.this.unnest() if isinstance(q.this, exp.Subquery) else q.this
        if not isinstance(query, exp.Query):
            continue
        every = isinstance(q, exp.All)
        if (isinstance(node, exp.EQ) and not every) or (isinstance(node, exp.NEQ) and every):
            continue
        _qualify(node.this, node.find_ancestor(exp.Select), names)
        case = _case(node, query, every, names)
        named = isinstance(node.parent, exp.Select)  # the column keeps PostgreSQL's name
        node.replace(exp.alias_(case, "?column?", quoted=True) if named else case)


def _qualify(x: exp.Expression, outer: exp.Select | None, names: Names | None) -> None:
    """Qualify (in place) each unqualified column of ``x`` by the one relation of ``outer``'s
    FROM that has such a column, so that moved into the subquery it still names the outer
    row's (left as written where the FROM holds anything but named relations)."""
    if outer is None or names is None:
        return
    sources = [outer.args["from_"].this] if outer.args.get("from_") else []
    sources += [j.this for j in outer.args.get("joins") or []]
    if not all(isinstance(s, exp.Table) for s in sources):
        return
    known = [(s, names(".".join(p.name for p in s.parts))) for s in sources]
    if any(columns is None for _, columns in known):
        return
    for column in list(x.find_all(exp.Column)):
        having = [s for s, columns in known if columns and column.name.lower() in columns]
        if not column.table and len(having) == 1:
            column.set("table", exp.to_identifier(having[0].alias_or_name))


def relation_names(tree: exp.Expression, resolver: Any) -> Names:
    """The column names of a relation ``resolver`` knows, None for a CTE's name or any name
    it does not know."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}

    def names(name: str) -> set[str] | None:
        if name.lower() in ctes:
            return None
        try:
            return {c.name.lower() for c in resolver.relation(name).plan.schema}
        except Exception:  # noqa: BLE001 (unknown here: the planner words the error)
            return None

    return names
