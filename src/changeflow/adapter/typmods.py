"""Columns' type modifiers (PostgreSQL's typmod) as the catalog keeps them: a table's read
from its CREATE TABLE text (which ALTER TABLE keeps up to date), a view's as its plan's
columns had them when it was created (its ``typmods`` and ``text_types`` options).
pg_attribute's atttypmod and the RowDescription of a query reading the columns show them."""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

from changeflow.adapter.catalog import Item
from changeflow.compute.types import Schema
from changeflow.compute.typmods import Mod, bpchar

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
TEXT_TYPES[T.NAME] = "name"
_TEXT_TYPE = {"character": "bpchar", "character varying": "varchar", "name": "name"}


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


def mods_of(item: Item) -> list[Mod]:
    """Each of an item's columns' type modifier and text type, in order: a table's as
    declared, a view's or an index's as stored (``typmods`` and ``text_types``; one stored
    before typmods held char(n)'s n keeps it in ``pads``)."""
    width = len(item.columns)
    if item.kind == "table":
        declared = _declared(item.sql)
        lengths = (list(item.options.get("lengths") or []) + [None] * width)[:width]
        out = []
        for (name, *_), n in zip(item.columns, lengths, strict=True):
            mod, named = declared.get(name, (-1, ""))
            if n is not None and n < 0:  # char(n), as ALTER TABLE keeps it
                out.append(bpchar(-n))
            else:
                out.append(Mod(mod, _TEXT_TYPE.get(named, "")))
        return out
    typmods = (list(item.options.get("typmods") or []) + [-1] * width)[:width]
    kinds = item.options.get("text_types")
    if kinds is None:  # stored before text types: a text column's typmod was varchar(n)'s
        kinds = [
            "varchar" if c[1] == "text" and m >= 4 else ""
            for c, m in zip(item.columns, typmods, strict=True)
        ]
    pads = (list(item.options.get("pads") or []) + [None] * width)[:width]
    return [
        bpchar(pad) if pad is not None else Mod(mod, kind)
        for mod, kind, pad in zip(typmods, kinds, pads, strict=True)
    ]


def stored_mods(schema: Schema) -> dict[str, list[int] | list[str]]:
    """A view's or an index's columns' type modifiers as its options keep them."""
    return {"typmods": [c.typmod for c in schema], "text_types": [c.text_type for c in schema]}


def typmods(item: Item) -> dict[str, int]:
    """The item's columns that have a type modifier, by name."""
    mods = zip(item.columns, mods_of(item), strict=True)
    return {c[0]: m.typmod for c, m in mods if m.typmod >= 0}


def text_types(item: Item) -> dict[str, str]:
    """The columns declared (or a view's read as) varchar(n) or char(n), by the name
    PostgreSQL gives their type (they hold text here)."""
    if item.kind == "table":
        return {name: named for name, (_, named) in _declared(item.sql).items() if named}
    names = {kind: name for name, kind in _TEXT_TYPE.items()}
    mods = zip(item.columns, mods_of(item), strict=True)
    return {c[0]: names[m.text_type] for c, m in mods if m.text_type}


def pads(item: Item) -> dict[str, int]:
    """The item's char(n) columns and their n, by name."""
    mods = zip(item.columns, mods_of(item), strict=True)
    return {c[0]: m.pad for c, m in mods if m.pad is not None}


def column_typmods(item: Item) -> list[int]:
    """Each of the item's columns' type modifier, in order (-1 for none)."""
    return [m.typmod for m in mods_of(item)]
