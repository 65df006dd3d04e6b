"""Columns' type modifiers (PostgreSQL's typmod) as the catalog keeps them: a table's read
from its CREATE TABLE text (which ALTER TABLE keeps up to date), a view's as its plan's
columns had them when it was created (its ``typmods`` option). pg_attribute's atttypmod and
the RowDescription of a query reading the columns show them."""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

from changeflow.adapter.catalog import Item

T = exp.DataType.Type


def typmod(kind: exp.Expression | None) -> int:
    """The type modifier of a declared type: numeric(p,s) ``(p << 16 | s) + 4``, varchar(n)
    and char(n) ``n + 4``; -1 for a type without one."""
    if not isinstance(kind, exp.DataType):
        return -1
    params = [int(p.name) for p in kind.expressions if p.name.isdigit()]
    if not params:
        return -1
    if kind.this == T.DECIMAL:
        scale = params[1] if len(params) > 1 else 0
        return ((params[0] << 16) | scale) + 4
    if kind.this in (T.VARCHAR, T.CHAR, T.BPCHAR, T.NCHAR, T.NVARCHAR):
        return params[0] + 4
    return -1


@lru_cache(maxsize=512)
def _declared(sql: str) -> dict[str, int]:
    try:
        create = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return {}
    out = {}
    for column in create.find_all(exp.ColumnDef):
        mod = typmod(column.args.get("kind"))
        if mod >= 0:
            ident = column.this
            out[ident.this if ident.quoted else ident.this.lower()] = mod
    return out


def typmods(item: Item) -> dict[str, int]:
    """The item's columns that have a type modifier, by name."""
    if item.kind == "table":
        return _declared(item.sql)
    stored = item.options.get("typmods") or []
    return {c[0]: m for c, m in zip(item.columns, stored, strict=False) if m >= 0}


def column_typmods(item: Item) -> list[int]:
    """Each of the item's columns' type modifier, in order (-1 for none)."""
    found = typmods(item)
    return [found.get(c[0], -1) for c in item.columns]
