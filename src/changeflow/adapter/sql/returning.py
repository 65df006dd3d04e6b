"""``INSERT``/``UPDATE``/``DELETE … RETURNING``: the list's expressions over the written rows
(the inserted rows, the new versions of updated rows, the deleted rows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from changeflow.adapter.sql.colnames import output_name
from changeflow.adapter.sql.scalar import Scalars, contains, is_aggregate
from changeflow.adapter.sql.scope import Field, Scope, unsupported
from changeflow.compute import expr as X
from changeflow.compute.pads import padded_rows
from changeflow.compute.types import Column, Schema
from changeflow.compute.typmods import mod_of
from changeflow.errors import PlanError


@dataclass(frozen=True)
class Returning:
    """The RETURNING list planned over the table's columns."""

    columns: Schema
    exprs: tuple[X.Expr, ...]

    def rows(self, written: list[tuple[tuple[Any, ...], int]]) -> list[tuple[Any, ...]]:
        """One output row per written row (a row written n times gives n)."""
        out = []
        for row, count in written:
            values = tuple(e.eval(row) for e in self.exprs)
            out += [values] * abs(count)
        return padded_rows(out, self.columns)


def plan_returning(node: exp.Expression, table: str, schema: Schema) -> Returning | None:
    """The RETURNING clause of a DML statement over ``table`` (None without one)."""
    clause = node.args.get("returning")
    if clause is None:
        return None
    alias = node.this.alias if isinstance(node.this, exp.Table) and node.this.alias else table
    alias = alias.rpartition(".")[2]  # a table of a schema is qualified by its own name
    scope = Scope([Field(alias, c.name, i) for i, c in enumerate(schema)])
    sc = Scalars(scope, schema, "RETURNING")
    columns: list[Column] = []
    exprs: list[X.Expr] = []
    for item in clause.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Star) or (
            isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)
        ):
            _own_star(node, inner, alias)
            for i, c in enumerate(schema):
                exprs.append(X.Col(i, c.type, c.nullable, c.name))
                columns.append(c)
            continue
        if contains(inner, is_aggregate):
            raise PlanError("aggregate functions are not allowed in RETURNING", sqlstate="42803")
        if contains(inner, lambda m: isinstance(m, exp.Query | exp.Exists)):
            raise unsupported("a subquery in RETURNING", inner)
        e = sc(inner)
        exprs.append(e)
        columns.append(Column(output_name(item), e.type, e.nullable, None, *mod_of(e, sc.schema)))
    return Returning(tuple(columns), tuple(exprs))


def _own_star(node: exp.Expression, star: exp.Expression, alias: str) -> None:
    """Refuse a RETURNING ``*`` that would take other relations' columns than the target's:
    a bare ``*`` of UPDATE … FROM or DELETE … USING (0A000, as those columns are not kept
    here), or ``name.*`` of another relation (42P01 if the statement has none of that name)."""
    others = ([node.args["from_"].this] if node.args.get("from_") else []) + list(
        node.args.get("using") or []
    )
    if isinstance(star, exp.Star):
        if others:
            raise unsupported("RETURNING * with FROM or USING (name the target's columns)", star)
        return
    name = star.table
    if name.lower() == alias.lower():
        return
    if any(o.alias_or_name.lower() == name.lower() for o in others):
        raise unsupported("RETURNING the columns of a FROM or USING relation", star)
    raise PlanError(f'missing FROM-clause entry for table "{name}"', sqlstate="42P01")
