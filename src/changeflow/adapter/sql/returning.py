"""``INSERT``/``UPDATE``/``DELETE … RETURNING``: the list's expressions over the written rows
(the inserted rows, the new versions of updated rows, the deleted rows)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp

from changeflow.adapter.sql.colnames import output_name
from changeflow.adapter.sql.dml import FromColumns
from changeflow.adapter.sql.scalar import Scalars, contains, is_aggregate
from changeflow.adapter.sql.scope import Field, Scope, ident, unsupported
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


def plan_returning(
    node: exp.Expression, table: str, schema: Schema, sources: FromColumns | None = None
) -> Returning | None:
    """The RETURNING clause of a DML statement over ``table`` (None without one); the
    ``sources`` of UPDATE … FROM or DELETE … USING follow the table's columns in the rows
    it reads."""
    clause = node.args.get("returning")
    if clause is None:
        return None
    alias = node.this.alias if isinstance(node.this, exp.Table) and node.this.alias else table
    alias = alias.rpartition(".")[2]  # a table of a schema is qualified by its own name
    fields = [Field(alias, c.name, i) for i, c in enumerate(schema)]
    if sources is not None:
        fields += sources.fields
        schema = (*schema, *sources.schema)
    sc = Scalars(Scope(fields), schema, "RETURNING")
    columns: list[Column] = []
    exprs: list[X.Expr] = []
    for item in clause.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Star) or (
            isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)
        ):
            if sources is None:
                _own_star(node, inner, alias)
            named = ident(inner.args.get("table")) if isinstance(inner, exp.Column) else None
            starred = [f for f in fields if f.star and named in (None, f.table)]
            if not starred:
                raise PlanError(f'missing FROM-clause entry for table "{named}"', sqlstate="42P01")
            for f in starred:
                c = schema[f.index]
                exprs.append(X.Col(f.index, c.type, c.nullable, f.name))
                columns.append(replace(c, name=f.name))
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
    """42P01 for a RETURNING ``name.*`` of a relation the statement does not have."""
    if isinstance(star, exp.Column) and ident(star.args.get("table")) != alias.lower():
        raise PlanError(f'missing FROM-clause entry for table "{star.table}"', sqlstate="42P01")
