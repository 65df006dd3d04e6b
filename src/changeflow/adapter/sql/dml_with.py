"""``WITH … INSERT``, ``WITH … UPDATE`` and ``WITH … DELETE``: the statement's WITH queries
put where it reads them, so that the DML planner sees one statement. An INSERT's SELECT takes
the WITH clause as its own (``INSERT INTO t WITH c AS (…) SELECT …`` means the same, WITH
RECURSIVE too); elsewhere each table name a WITH query defines is replaced by that query as
a derived table of the same name and columns; WITH RECURSIVE stays on the statement, whose
planner defines its queries (:func:`~changeflow.adapter.sql.dml.statement_planner`). A
data-modifying statement inside WITH is run apart (:mod:`~changeflow.adapter.with_writes`)."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.sql.scope import unsupported
from changeflow.errors import PlanError

DML = (exp.Insert, exp.Update, exp.Delete, exp.Merge)


def writes_in_with(tree: exp.Expression | None) -> bool:
    """Has the statement a data-modifying statement among its WITH queries?"""
    clause = tree.args.get("with_") if tree is not None else None
    return clause is not None and any(isinstance(c.this, DML) for c in clause.expressions)


def with_inlined(dml: exp.Expression) -> exp.Expression:
    """``dml`` (an INSERT, UPDATE or DELETE, changed in place) without its WITH clause."""
    clause = dml.args.get("with_")
    if clause is None:
        return dml
    for cte in clause.expressions:
        if isinstance(cte.this, DML):
            raise unsupported("a data-modifying statement in WITH", cte.this)
    dml.set("with_", None)
    query = dml.expression if isinstance(dml, exp.Insert) else None
    if isinstance(query, exp.Query):
        own = query.args.get("with_")
        if own is not None:  # the SELECT's own WITH queries follow (and may read) the outer's
            clause.set("expressions", [*clause.expressions, *own.expressions])
            clause.set("recursive", clause.args.get("recursive") or own.args.get("recursive"))
        query.set("with_", clause)
        return dml
    if clause.args.get("recursive"):  # kept: the statement's planner defines its queries
        if isinstance(dml, exp.Merge):
            raise PlanError("WITH RECURSIVE is not supported for MERGE statement", sqlstate="42601")
        dml.set("with_", clause)
        return dml
    defined: dict[str, exp.CTE] = {}
    for cte in clause.expressions:
        _replace_reads(cte.this, defined, target=None)
        defined[cte.alias_or_name.lower()] = cte
    _replace_reads(dml, defined, target=dml.this)
    return dml


def _replace_reads(node: exp.Expression, defined: dict[str, exp.CTE], target: object) -> None:
    """Each table of ``node`` named by one of ``defined`` (not the statement's ``target``)
    made that WITH query, as a derived table."""
    for table in list(node.find_all(exp.Table)):
        cte = defined.get(table.name.lower())
        if table is target or cte is None or table.args.get("db") or not table.name:
            continue
        named = cte.args.get("alias")
        columns = [c.copy() for c in named.columns] if named is not None else []
        alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name), columns=columns)
        table.replace(exp.Subquery(this=cte.this.copy(), alias=alias))
