"""UPDATE's (and MERGE's) SET clause: ``c = e``, ``(a, b) = (x, y)``, ``(a, b) = (SELECT
…)``, ``c = DEFAULT``, and assignments to an array's element (``a[2] = e``) or into a jsonb
value (``j['k'][0] = e``), with PostgreSQL's rules and errors."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.relations import Relation
from changeflow.adapter.sql.dml import assign, column_default, is_default
from changeflow.adapter.sql.generated import refuse_value, with_generated
from changeflow.adapter.sql.scalar import Scalars, bare, coerce_text, is_string_literal
from changeflow.adapter.sql.scope import ident, unsupported
from changeflow.adapter.sql.subquery import Stage
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.functions import Func
from changeflow.compute.types import INT2, INT4, JSONB, NULLTYPE, Column
from changeflow.errors import PlanError

Chain = list[list[exp.Expression]]  # the subscripts of an assignment's target, outermost last


def set_columns(
    stage: Stage, relation: Relation, items: list[exp.Expression], shown: str
) -> tuple[tuple[str, X.Expr], ...]:
    """SET's ``items`` over ``stage``'s rows (the table's columns first): every column of
    the table, assigned or kept, with PostgreSQL's errors (``shown`` names the table).
    Several assignments into one column's elements apply in order."""
    schema = relation.plan.schema
    names = [c.name for c in schema]
    sets: dict[int, list[tuple[Chain, exp.Expression]]] = {}
    for assignment in _assignments(items):
        if not isinstance(assignment, exp.EQ):
            raise unsupported("this SET clause", assignment)
        target, chain = assignment.this, []
        while isinstance(target, exp.Bracket):
            chain.insert(0, list(target.expressions))
            target = target.this
        if not isinstance(target, exp.Column):
            raise unsupported("this SET clause", assignment)
        name = ident(target.this)
        if target.args.get("table") is not None or name not in names:
            first = ident(target.args.get("table")) or name
            raise PlanError(
                f'column "{first}" of relation "{shown}" does not exist', sqlstate="42703"
            )
        done = sets.setdefault(names.index(name), [])
        if done and not (chain and done[0][0]):
            raise PlanError(f'multiple assignments to same column "{name}"', sqlstate="42601")
        if name in relation.always and not is_default(assignment.expression):
            raise PlanError(f'column "{name}" can only be updated to DEFAULT', sqlstate="428C9")
        if not is_default(assignment.expression):
            refuse_value(relation, name, update=True)
        done.append((chain, assignment.expression))
    stage.clause = "UPDATE SET"
    stage.hoist([node for made in sets.values() for _, node in made])
    sc = stage.scalars()
    exprs = []
    for i, column in enumerate(schema):
        e: X.Expr = P.col(stage.rel.plan.schema, i)
        for chain, node in sets.get(i, []):
            if chain:
                e = _into(sc, e, column, chain, node)
                continue
            if is_default(node):
                e, node = column_default(relation, i)
            else:
                e = sc(node)
            e = assign(e, node, column)
        exprs.append(e)
    values = with_generated(relation, exprs)
    return tuple((c.name, e) for c, e in zip(schema, values, strict=True))


def _into(sc: Scalars, whole: X.Expr, column: Column, chain: Chain, node: exp.Expression) -> X.Expr:
    """``whole`` (the column's value so far) with ``node``'s value assigned at ``chain``."""
    if column.type == JSONB:
        value = sc(node) if not is_string_literal(bare(node)) else None
        if value is None:
            value = coerce_text(str(bare(node).this), JSONB)
        elif value.type == NULLTYPE:
            value = X.Lit(None, JSONB)
        elif value.type != JSONB:
            raise PlanError(
                f'subscripted assignment to "{column.name}" requires type jsonb but expression '
                f"is of type {value.type}",
                sqlstate="42804",
                hint="You will need to rewrite or cast the expression.",
            )
        first = chain[0][0]
        integer = not is_string_literal(first) and sc(first).type in (INT2, INT4)
        return Func("jsonb_assign", (whole, sc.jsonb_steps(chain), value, X.lit(integer)))
    element = column.type.element
    if element is None:
        raise PlanError(
            f"cannot subscript type {column.type} because it does not support subscripting",
            sqlstate="42804",
        )
    if len(chain) != 1 or len(chain[0]) != 1 or isinstance(chain[0][0], exp.Slice):
        raise unsupported("assigning an array slice or an element of several dimensions", node)
    value = assign(sc(node), node, Column(column.name, element, True))
    return Func("array_assign", (whole, sc._array_index(chain[0][0]), value))


def _assignments(items: list[exp.Expression]) -> list[exp.Expression]:
    """SET's items, ``(a, b) = (x, y)`` (or ``ROW(x, y)``) as ``a = x, b = y``, and
    ``(a, b) = (SELECT x, y …)`` as one scalar subquery a column (:func:`_from_one_row`): one
    row's values, NULLs for none, 21000 for several, as PostgreSQL's."""
    out: list[exp.Expression] = []
    for item in items:
        names, values = item.this, item.expression
        if isinstance(names, exp.Paren) and isinstance(values, exp.Subquery):  # (a) = (SELECT …)
            names = exp.Tuple(expressions=[names.this])
        if not (isinstance(item, exp.EQ) and isinstance(names, exp.Tuple)):
            out.append(item)
        elif isinstance(values, exp.Subquery):
            out += _from_one_row(names.expressions, values.this, item)
        elif not isinstance(values, exp.Tuple):
            raise PlanError(
                "source for a multiple-column UPDATE item must be a sub-SELECT or ROW() expression",
                sqlstate="0A000",
            )
        elif len(names.expressions) != len(values.expressions):
            raise PlanError("number of columns does not match number of values", sqlstate="42601")
        else:
            out += [
                exp.EQ(this=n, expression=v)
                for n, v in zip(names.expressions, values.expressions, strict=True)
            ]
    return out


def _from_one_row(
    names: list[exp.Expression], query: exp.Expression, item: exp.Expression
) -> list[exp.Expression]:
    """``(a, b) = (query)``: each column the matching output column of the query's one row,
    ``a = (SELECT x …)`` where the query's rows do not depend on its select list (so a
    correlated one is planned as any correlated subquery), else ``a = (SELECT m.c1 FROM
    (query) m(c1, c2))``."""
    first = query
    while isinstance(first, exp.SetOperation):
        first = first.this
    if not isinstance(first, exp.Select) or any(e.is_star for e in first.expressions):
        raise unsupported("SET (columns) = (this subquery)", item)
    if len(first.expressions) != len(names):
        raise PlanError("number of columns does not match number of values", sqlstate="42601")
    plain = ("distinct", "group", "having", "order", "limit", "offset")
    if query is first and not any(query.args.get(k) for k in plain):
        values = [query.copy().select(e, append=False) for e in query.expressions]
    else:
        keys = [exp.to_identifier(f"_set_{i}") for i in range(len(names))]
        row = exp.TableAlias(this=exp.to_identifier("_set_row"), columns=keys)
        values = [
            exp.select(exp.column(key.copy(), "_set_row")).from_(
                exp.Subquery(this=query.copy(), alias=row.copy())
            )
            for key in keys
        ]
    return [
        exp.EQ(this=name, expression=exp.Subquery(this=value))
        for name, value in zip(names, values, strict=True)
    ]
