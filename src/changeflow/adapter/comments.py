"""``COMMENT ON TABLE|VIEW|MATERIALIZED VIEW|INDEX|COLUMN name IS 'text'|NULL``.

A comment is kept in the catalog with its object: an item's in its ``comment`` option, a
column's in the ``comments`` option, one entry per column (it goes with a dropped column, as
``defaults`` do; a shorter list means no comment for the columns past its end). So comments
are durable and go with what they describe; pg_description, ``obj_description`` and
``col_description`` read them (:func:`descriptions`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import CatalogState, Item
from changeflow.adapter.result import Result
from changeflow.adapter.sql.statements import NAME, Statement, name
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment

PUBLIC_OID, PG_NAMESPACE = 2200, 2615  # the public schema's OID, pg_namespace's
PUBLIC_COMMENT = "standard public schema"  # as initdb comments it
KINDS = {  # the word after COMMENT ON -> (the item kinds it names, what the error calls it)
    "TABLE": (("table", "source"), "a table"),
    "VIEW": (("view",), "a view"),
    "MATERIALIZED VIEW": (("materialized view",), "a materialized view"),
    "INDEX": (("index",), "an index"),
}
COLUMN_OF = ("table", "source", "view", "materialized view")


def comment_on(env: Environment, stmt: Statement) -> Result:
    env.catalog.change(lambda state: (commented(state, stmt), None))
    return Result("COMMENT")


def commented(state: CatalogState, stmt: Statement) -> CatalogState:
    """``state`` with the comment of ``stmt`` set (42P01, 42809, 42703 as PostgreSQL's)."""
    g = stmt.args
    kind, text = " ".join(g["kind"].upper().split()), g["text"]
    if kind == "COLUMN":
        parts = re.findall(NAME, g["name"])
        if len(parts) < 2:
            raise PlanError("column name must be qualified", sqlstate="42601")
        relation = name(".".join(parts[:-1]))
        item = state.get(relation)
        if item.kind not in COLUMN_OF:
            raise PlanError(f'"{relation}" is not a table', sqlstate="42809")
        column = name(parts[-1])
        names = [c[0] for c in item.columns]
        if column not in names:
            raise PlanError(
                f'column "{column}" of relation "{relation}" does not exist', sqlstate="42703"
            )
        comments = list(item.options.get("comments") or [])
        comments += [None] * (len(names) - len(comments))
        comments[names.index(column)] = text
        options = {**item.options, "comments": comments}
    else:
        relation = name(g["name"])
        table = _constraint_table(state, relation) if kind == "INDEX" else None
        if table is not None:  # the index of a PRIMARY KEY or UNIQUE constraint
            kept = {**(table.options.get("index_comments") or {}), relation: text}
            return state.with_item(
                replace(table, options={**table.options, "index_comments": kept})
            )
        item = state.get(relation)
        kinds, what = KINDS[kind]
        if item.kind not in kinds:
            raise PlanError(f'"{relation}" is not {what}', sqlstate="42809")
        options = {**item.options, "comment": text}
    return state.with_item(replace(item, options=options))


def _constraint_table(state: CatalogState, index: str) -> Item | None:
    """The table whose PRIMARY KEY or UNIQUE constraint (and so its index) is ``index``."""
    if state.find(index) is not None:
        return None
    schema, _, bare = index.rpartition(".")
    for item in state.items.values():
        in_schema = item.name.rpartition(".")[0] == schema
        names = [u[0] for u in item.options.get("unique") or []]
        if item.kind == "table" and in_schema and bare in names:
            return item
    return None


def descriptions(item: Item) -> list[tuple[int, str]]:
    """An item's comments as pg_description holds them: (0, its own) then (column number,
    the column's), those that are set."""
    out = [(0, item.options["comment"])] if item.options.get("comment") is not None else []
    comments = item.options.get("comments") or []
    numbered = zip(attnums(item), comments[: len(item.columns)], strict=False)
    return out + [(n, c) for n, c in numbered if c is not None]


def description_functions(
    by_oid: dict[int, Item], pg_class: int, others: dict[int, str]
) -> dict[str, Any]:
    """``obj_description(oid[, catalog])`` and ``col_description(oid, n)`` over the items,
    and ``others`` (comments of relations that are no items, by oid)."""
    described = {oid: dict(descriptions(item)) for oid, item in by_oid.items()}
    described |= {oid: {0: text} for oid, text in others.items()}

    def obj(oid: Any, catalog: Any = "pg_class") -> str | None:
        if catalog in ("pg_namespace", PG_NAMESPACE) and oid == PUBLIC_OID:
            return PUBLIC_COMMENT
        if catalog not in ("pg_class", pg_class):
            return None
        return described.get(oid, {}).get(0)

    def col(oid: Any, n: Any) -> str | None:
        return described.get(oid, {}).get(n) if n else None

    return {"obj_description": obj, "col_description": col}
