"""Rows of the system relations that depend on no session: pg_type's, and a table's key
constraints and type modifiers as pg_constraint and pg_attribute show them."""

from __future__ import annotations

from typing import Any

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import Item
from changeflow.adapter.constraint_options import not_valid
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
    2278: "P",
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
VOID_OID = 2278  # a pseudo-type, as unknown is


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
            + ("p" if length == -2 or oid == VOID_OID else "b",)
            + ("A" if io == "array" else _CATEGORY.get(oid, "S"), False, True, ",", 0, element)
            + (arrays.get(oid, 0), f"{io}_in", f"{io}_out", f"{io}_recv", f"{io}_send")
            + (None, None, None, array_align if io == "array" else align(oid), storage, False, 0)
            + (-1, 0, 0, None, None, None)
        )
    return rows


def precision(oid: int, typmod: int) -> tuple[int | None, int | None, int | None]:
    """information_schema's numeric_precision, numeric_scale and datetime_precision."""
    if oid == 1700 and typmod >= 4:
        return (typmod - 4) >> 16, (typmod - 4) & 0xFFFF, None
    fixed = {21: 16, 23: 32, 20: 64, 700: 24, 701: 53}
    if oid in fixed:
        return fixed[oid], 0 if oid in (20, 21, 23) else None, None
    return None, None, {1082: 0, 1114: 6, 1184: 6}.get(oid)


def check_constraints(item: Item, oid: int, namespace: int) -> list[tuple[Any, ...]]:
    """pg_constraint's rows of a table's CHECK constraints (contype ``c``, ``conkey`` the
    numbers of the columns the expression reads, ``conbin`` the expression as pg_get_expr
    shows it)."""
    from changeflow.adapter.checks import checks_of
    from changeflow.adapter.deparse import checks_shown

    nums = dict(zip((c[0] for c in item.columns), attnums(item), strict=True))
    rows, unchecked = [], not_valid(item)
    for k, check in enumerate(checks_of(item)):
        keys = "{" + ",".join(str(nums[c]) for c in check.columns() if c in nums) + "}"
        expression = checks_shown(item, check.sql)[0][len("CHECK (") : -1]  # pg_get_expr's
        rows.append(
            (check_oid(oid, k), check.name, namespace, "c", False, False)
            + (check.name not in unchecked, oid, 0, 0, 0)
            + (0, " ", " ", " ", True, 0, False, keys, None, expression)
        )
    return rows


def check_oid(relation: int, k: int) -> int:
    """The oid of a table's ``k``-th CHECK constraint."""
    return relation * 1000 + 850 + k


def constraint_defs(items: list[Item], relation_oid: Any) -> dict[int, tuple[str, str]]:
    """pg_get_constraintdef of each table constraint by oid: (plain, pretty)."""
    from changeflow.adapter.checks import checks_of
    from changeflow.adapter.deparse import checks_shown

    out: dict[int, tuple[str, str]] = {}
    for i in items:
        if i.kind != "table":
            continue
        rel = relation_oid(i)
        for k, (_, columns, primary) in enumerate(i.options.get("unique") or []):
            text = ("PRIMARY KEY" if primary else "UNIQUE") + (
                f" ({', '.join(i.columns[c][0] for c in columns)})"
            )
            out[constraint_oid(rel, k)] = (text, text)
        for k, check in enumerate(checks_of(i)):
            tail = " NOT VALID" if check.name in not_valid(i) else ""
            out[check_oid(rel, k)] = tuple(t + tail for t in checks_shown(i, check.sql))
    return out
