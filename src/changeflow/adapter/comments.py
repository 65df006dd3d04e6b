"""``COMMENT ON TABLE|VIEW|MATERIALIZED VIEW|INDEX|SEQUENCE|COLUMN|TYPE|DOMAIN|FUNCTION|
SCHEMA|ROLE name IS 'text'|NULL``.

A comment is kept in the catalog with its object: an item's in its ``comment`` option, a
column's in the ``comments`` option, one entry per column (it goes with a dropped column, as
``defaults`` do; a shorter list means no comment for the columns past its end), a schema's
and a created role's in their entries of the catalog's ``access``. So comments are durable
and go with what they describe; pg_description (pg_shdescription for roles),
``obj_description``, ``col_description`` and ``shobj_description`` read them
(:func:`descriptions`, :func:`other_descriptions`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import PUBLIC, CatalogState, Item
from changeflow.adapter.result import Result
from changeflow.adapter.sql.statements import NAME, Statement, name
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment

PG_NAMESPACE = 2615  # pg_namespace's OID
PUBLIC_COMMENT = "standard public schema"  # as initdb comments it
KINDS = {  # the word after COMMENT ON -> (the item kinds it names, what the error calls it)
    "TABLE": (("table", "source"), "a table"),
    "VIEW": (("view",), "a view"),
    "MATERIALIZED VIEW": (("materialized view",), "a materialized view"),
    "INDEX": (("index",), "an index"),
    "SEQUENCE": (("sequence",), "a sequence"),
}
CATALOGS = {"type": 1247, "function": 1255}  # pg_type's and pg_proc's OIDs
COLUMN_OF = ("table", "source", "view", "materialized view")
RELATIONS = (*COLUMN_OF, "index", "sequence", "sink")


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
    elif kind in ("TYPE", "DOMAIN", "FUNCTION"):
        item = state.find(name(g["name"]))
        wanted = "function" if kind == "FUNCTION" else "type"
        if item is None or item.kind != wanted:
            code = "42883" if kind == "FUNCTION" else "42704"
            raise PlanError(f'{kind.lower()} "{g["name"]}" does not exist', sqlstate=code)
        options = {**item.options, "comment": text}
    elif kind in ("SCHEMA", "ROLE"):
        return _named_comment(state, kind.lower(), name(g["name"]), text)
    else:
        relation = name(g["name"])
        table = _constraint_table(state, relation) if kind == "INDEX" else None
        if table is not None:  # the index of a PRIMARY KEY or UNIQUE constraint
            kept = {**(table.options.get("index_comments") or {}), relation: text}
            return state.with_item(
                replace(table, options={**table.options, "index_comments": kept})
            )
        item = state.get(relation, RELATIONS)
        kinds, what = KINDS[kind]
        if item.kind not in kinds:
            raise PlanError(f'"{relation}" is not {what}', sqlstate="42809")
        options = {**item.options, "comment": text}
    return state.with_item(replace(item, options=options))


def _named_comment(state: CatalogState, kind: str, named: str, text: str | None) -> CatalogState:
    """A schema's or a created role's comment, kept in its entry of the catalog's access."""
    from changeflow.adapter.roles import exists, roles

    if kind == "schema" and named not in (PUBLIC, *state.schemas):
        raise PlanError(f'schema "{named}" does not exist', sqlstate="3F000")
    if kind == "role" and not exists(state, named):
        raise PlanError(f'role "{named}" does not exist', sqlstate="42704")
    if kind == "role" and named not in roles(state):
        raise PlanError(f'role "{named}" is built in here: it takes no comment', sqlstate="0A000")
    entries = dict(state.access.get(f"{kind}s") or {})
    entries[named] = {**(entries.get(named) or {}), "comment": text}
    return replace(state, access={**state.access, f"{kind}s": entries})


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


def other_descriptions(state: CatalogState) -> list[tuple[int, int, int, str]]:
    """pg_description's rows of what is no relation: types, domains, functions, schemas."""
    from changeflow.adapter.system_indexes import relation_oid
    from changeflow.adapter.system_tables import namespace_oid

    out = [
        (relation_oid(i), CATALOGS[i.kind], 0, i.options["comment"])
        for i in state.items.values()
        if i.kind in CATALOGS and i.options.get("comment") is not None
    ]
    schemas = dict(state.access.get("schemas") or {})
    schemas[PUBLIC] = {"comment": PUBLIC_COMMENT, **(schemas.get(PUBLIC) or {})}
    return out + [
        (namespace_oid(state, s), PG_NAMESPACE, 0, e["comment"])
        for s, e in schemas.items()
        if e.get("comment") is not None
    ]


def description_functions(
    state: CatalogState, by_oid: dict[int, Item], pg_class: int, others: dict[int, str]
) -> dict[str, Any]:
    """``obj_description(oid[, catalog])``, ``col_description(oid, n)`` and
    ``shobj_description(oid, catalog)`` over the items, ``others`` (comments of relations
    that are no items, by oid), the other objects' and the roles'."""
    from changeflow.adapter.roles import role_named, roles

    described = {oid: dict(descriptions(item)) for oid, item in by_oid.items()}
    described |= {oid: {0: text} for oid, text in others.items()}
    named = {(oid, catalog): text for oid, catalog, _, text in other_descriptions(state)}
    catalogs = {"pg_type": 1247, "pg_proc": 1255, "pg_namespace": PG_NAMESPACE}

    def obj(oid: Any, catalog: Any = "pg_class") -> str | None:
        if catalog not in ("pg_class", pg_class):
            return named.get((oid, catalogs.get(catalog, catalog)))
        return described.get(oid, {}).get(0)

    def col(oid: Any, n: Any) -> str | None:
        return described.get(oid, {}).get(n) if n else None

    def shared(oid: Any, catalog: Any = "pg_authid") -> str | None:
        role = role_named(state, oid) if catalog in ("pg_authid", 1260) else None
        return (roles(state).get(role or "") or {}).get("comment")

    return {"obj_description": obj, "col_description": col, "shobj_description": shared}
