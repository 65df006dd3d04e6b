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
        return 5 if kind.this in (T.CHAR, T.NCHAR) else -1  # char alone is char(1)
    if kind.this == T.DECIMAL:
        scale = params[1] if len(params) > 1 else 0
        return ((params[0] << 16) | scale) + 4
    if kind.this in (T.VARCHAR, T.CHAR, T.BPCHAR, T.NCHAR, T.NVARCHAR):
        return params[0] + 4
    return -1


TEXT_TYPES = {T.CHAR: "character", T.NCHAR: "character", T.VARCHAR: "character varying"}


@lru_cache(maxsize=512)
def _declared(sql: str) -> dict[str, tuple[int, str]]:
    """A CREATE TABLE's columns with a type modifier or a text type's name (``character``,
    ``character varying``): each one's modifier (-1 for none) and that name ('' for another)."""
    try:
        create = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return {}
    out = {}
    for column in create.find_all(exp.ColumnDef):
        kind = column.args.get("kind")
        mod = typmod(kind)
        named = TEXT_TYPES.get(kind.this, "") if isinstance(kind, exp.DataType) else ""
        if mod >= 0 or named:
            ident = column.this
            out[ident.this if ident.quoted else ident.this.lower()] = (mod, named)
    return out


def pads_of(item: Item) -> list[int | None]:
    """The n of an item's char(n) columns (None for the others): a view's or an index's
    ``pads``, a table's from its ``lengths`` (-n for char(n))."""
    pads = item.options.get("pads")
    if pads is not None and len(pads) == len(item.columns):
        return list(pads)
    lengths = item.options.get("lengths") or []
    found = [-n if n is not None and n < 0 else None for n in lengths]
    return (found + [None] * len(item.columns))[: len(item.columns)]


def typmods(item: Item) -> dict[str, int]:
    """The item's columns that have a type modifier, by name (a view's char(n) columns
    ``n + 4``, from the n they carry)."""
    if item.kind == "table":
        return {name: mod for name, (mod, _) in _declared(item.sql).items() if mod >= 0}
    stored = item.options.get("typmods") or []
    out = {c[0]: m for c, m in zip(item.columns, stored, strict=False) if m >= 0}
    for column, n in zip(item.columns, pads_of(item), strict=True):
        if n is not None:
            out[column[0]] = n + 4
    return out


def text_types(item: Item) -> dict[str, str]:
    """The columns declared varchar(n) or char(n), by the name PostgreSQL gives their type
    (they hold text here): a table's from its CREATE statement, a view's char(n) ones."""
    if item.kind == "table":
        return {name: named for name, (_, named) in _declared(item.sql).items() if named}
    pads = zip(item.columns, pads_of(item), strict=True)
    return {c[0]: "character" for c, n in pads if n is not None}


def column_typmods(item: Item) -> list[int]:
    """Each of the item's columns' type modifier, in order (-1 for none)."""
    found = typmods(item)
    return [found.get(c[0], -1) for c in item.columns]
