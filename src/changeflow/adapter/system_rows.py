"""Rows of the system relations that depend on no session: pg_type's, and a table's key
constraints and type modifiers as pg_constraint and pg_attribute show them."""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import Item
from changeflow.adapter.resolver import pads_of
from changeflow.adapter.system_tables import OWNER, PG_CATALOG, TYPES


def key_constraints(item: Item, oid: int, namespace: int) -> dict[str, list[tuple[Any, ...]]]:
    """pg_constraint's rows of a table's PRIMARY KEY and UNIQUE constraints (``conkey`` as
    the text of its array of column numbers; ``conindid`` the index that backs it:
    :mod:`~changeflow.adapter.system_indexes`)."""
    out: dict[str, list[tuple[Any, ...]]] = {"pg_constraint": []}
    nums = attnums(item)
    for k, (name, columns, primary) in enumerate(item.options.get("unique") or []):
        keys = "{" + ",".join(str(nums[c]) for c in columns) + "}"
        index = constraint_oid(oid, k) + 250
        out["pg_constraint"].append(
            (constraint_oid(oid, k), name, namespace, "p" if primary else "u", False, False)
            + (True, oid, 0, index, 0, 0, " ", " ", " ", True, 0, True, keys, None, None)
        )
    return out


def constraint_oid(relation: int, k: int) -> int:
    """The oid of a table's ``k``-th key constraint (after its columns' defaults' oids)."""
    return relation * 1000 + 500 + k


_CATEGORY = {
    16: "B",
    17: "U",
    18: "Z",
    705: "X",
    1082: "D",
    1083: "D",
    1114: "D",
    1184: "D",
    1186: "T",
}
_CATEGORY |= {114: "U", 2950: "U", 3802: "U"} | dict.fromkeys(
    (20, 21, 23, 24, 26, 700, 701, 1700, 2202, 2205, 2206, 4089), "N"
)
_ALIGN = {19: "c", 705: "c", 2950: "c", 1186: "d"}


def type_rows() -> list[tuple[Any, ...]]:
    """pg_type's rows: each type once, an array with its element (``typelem``) and each
    element with its array (``typarray``), length, category, alignment and storage as
    PostgreSQL's."""
    first: dict[int, tuple[str, int, str]] = {}
    for name, (oid, length, typname) in TYPES.items():
        first.setdefault(oid, (name, length, typname))
    arrays = {TYPES[n[:-2]][0]: oid for oid, (n, _, _) in first.items() if n.endswith("[]")}

    def align(oid: int) -> str:
        return _ALIGN.get(oid) or {1: "c", 2: "s", 8: "d"}.get(first[oid][1], "i")

    rows = []
    for oid, (name, length, typname) in first.items():
        element = TYPES[name[:-2]][0] if name.endswith("[]") else (18 if oid == 19 else 0)
        io = "array" if oid in arrays.values() else typname
        storage = "m" if oid == 1700 else ("p" if length > 0 or length == -2 else "x")
        array_align = "d" if element and align(element) == "d" else "i"
        rows.append(
            (oid, typname, PG_CATALOG, OWNER, length, length in (1, 2, 4, 8))
            + ("p" if length == -2 else "b",)
            + ("A" if io == "array" else _CATEGORY.get(oid, "S"), False, True, ",", 0, element)
            + (arrays.get(oid, 0), f"{io}_in", f"{io}_out", f"{io}_recv", f"{io}_send")
            + (None, None, None, array_align if io == "array" else align(oid), storage, False, 0)
            + (-1, 0, 0, None, None, None)
        )
    return rows


def typmods(item: Item) -> dict[str, int]:
    """A table's columns' type modifiers as PostgreSQL encodes them (numeric(p,s):
    ``(p << 16 | s) + 4``; varchar(n) and char(n): ``n + 4``), read from its CREATE statement."""
    return {name: mod for name, (mod, _) in _declared(item).items() if mod >= 0}


def text_types(item: Item) -> dict[str, str]:
    """The columns of a table declared varchar(n) or char(n), by the name PostgreSQL gives
    their type (``character varying``, ``character``); they hold text here."""
    return {name: kind for name, (_, kind) in _declared(item).items() if kind}


def _declared(item: Item) -> dict[str, tuple[int, str]]:
    """Each column's type modifier (-1 for none) and text type name ('' for another type): a
    table's from its CREATE statement, a view's char(n) columns from the n they carry."""
    if item.kind != "table":
        pads = zip(item.columns, pads_of(item), strict=True)
        return {c[0]: (n + 4, "character") for c, n in pads if n is not None}
    try:
        create = sqlglot.parse_one(item.sql, read="postgres")
    except sqlglot.errors.ParseError:
        return {}
    T = exp.DataType.Type
    out = {}
    for column in create.find_all(exp.ColumnDef):
        kind = column.args.get("kind")
        if kind is None:
            continue
        params = [int(p.name) for p in kind.expressions if p.name.isdigit()]
        name = column.name.lower()
        if kind.this in (T.CHAR, T.NCHAR):  # char alone is char(1)
            out[name] = ((params[0] if params else 1) + 4, "character")
        elif kind.this == T.VARCHAR and params:
            out[name] = (params[0] + 4, "character varying")
        elif kind.this == T.DECIMAL and params:
            scale = params[1] if len(params) > 1 else 0
            out[name] = (((params[0] << 16) | scale) + 4, "")
    return out


def precision(oid: int, typmod: int) -> tuple[int | None, int | None, int | None]:
    """information_schema's numeric_precision, numeric_scale and datetime_precision."""
    if oid == 1700 and typmod >= 4:
        return (typmod - 4) >> 16, (typmod - 4) & 0xFFFF, None
    fixed = {21: 16, 23: 32, 20: 64, 700: 24, 701: 53}
    if oid in fixed:
        return fixed[oid], 0 if oid in (20, 21, 23) else None, None
    return None, None, {1082: 0, 1114: 6, 1184: 6}.get(oid)
