"""``ALTER {TABLE | VIEW | MATERIALIZED VIEW | SEQUENCE | INDEX | SOURCE | SINK | SCHEMA |
FUNCTION} name OWNER TO role``, as pg_dump writes after each object it creates (and ``ALTER
TYPE | DOMAIN … OWNER TO``, through :func:`give`).

The role must exist (42704; CURRENT_USER, SESSION_USER and CURRENT_ROLE name the session's);
the object too (42P01, 3F000 for a schema; with IF EXISTS a NOTICE), and ALTER VIEW, SEQUENCE
and the others must name one of their kind (42809); ALTER TABLE takes any relation, as
PostgreSQL's does. The new owner takes the old one's place in the object's access list. A
role that is no superuser must own the object and be a member of the new owner (42501)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from changeflow.adapter.catalog import PUBLIC, CatalogState, Item
from changeflow.adapter.privilege_checks import checking
from changeflow.adapter.privileges import (
    owner_of,
    owns,
    schema_entry,
    schema_owner,
    union,
)
from changeflow.adapter.result import Result
from changeflow.adapter.roles import bootstrap, memberships, resolve
from changeflow.adapter.sql.statements import Statement
from changeflow.errors import PlanError


def owner_to(env: Any, stmt: Statement) -> Result:
    """Give ``stmt``'s object to its role (see the module docstring)."""
    g = stmt.args
    kind, tag = g["kind"], f"ALTER {g['kind'].upper()}"
    state = env.catalog.load()
    role = resolve(state, g["role"])
    if kind == "schema":
        schema = g["name"]
        if schema not in state.schemas and schema != PUBLIC:
            raise PlanError(f'schema "{schema}" does not exist', sqlstate="3F000")
        _may_give(state, schema_owner(state, schema), role, f"schema {schema}")
        env.catalog.change(lambda s: (_schema_given(s, schema, role), None))
        return Result(tag)
    item = state.find(g["name"])
    if kind in ("function", "procedure", "routine"):
        if item is None or item.kind != "function":
            raise PlanError(f'function {g["name"]} does not exist', sqlstate="42883")
        give(env, item, role)
        return Result("ALTER FUNCTION")
    if item is None:
        if g["ie"]:
            skipped = f'relation "{g["name"]}" does not exist, skipping'
            return Result(tag, notices=[("00000", skipped, "")])
        raise PlanError(f'relation "{g["name"]}" does not exist', sqlstate="42P01")
    if kind != "table" and item.kind != kind:
        raise PlanError(f'"{g["name"]}" is not a {kind}', sqlstate="42809")
    give(env, item, role)
    return Result(tag)


def give(env: Any, item: Item, role: str) -> None:
    """``item`` owned by ``role`` (a resolved role's name), its access list following."""
    state = env.catalog.load()
    _may_give(state, owner_of(state, item), role, f"{item.kind} {item.name}")

    def change(s: CatalogState) -> tuple[CatalogState, None]:
        current = s.items.get(item.id)
        if current is None:
            return s, None
        old = owner_of(s, current)
        options = {k: v for k, v in current.options.items() if k != "owner"}
        if role != bootstrap(s):
            options["owner"] = role
        if options.get("acl") is not None:
            options["acl"] = _renamed(options["acl"], old, role)
        return replace(s, items={**s.items, item.id: replace(current, options=options)}), None

    env.catalog.change(change)


def _may_give(state: CatalogState, old: str, new: str, shown: str) -> None:
    me = checking(state)
    if me is None:
        return
    if not owns(state, me, old):
        raise PlanError(f"must be owner of {shown}", sqlstate="42501")
    if new not in memberships(state, me, inheriting=False):
        raise PlanError(f'must be able to SET ROLE "{new}"', sqlstate="42501")


def _schema_given(state: CatalogState, schema: str, role: str) -> CatalogState:
    entry = dict(schema_entry(state, schema))
    old = entry.get("owner") or bootstrap(state)
    entry["owner"] = None if role == bootstrap(state) else role
    if entry.get("acl") is not None:
        entry["acl"] = _renamed(entry["acl"], old, role)
    schemas = {**(state.access.get("schemas") or {}), schema: entry}
    return replace(state, access={**state.access, "schemas": schemas})


def _renamed(acl: list[list[str]], old: str, new: str) -> list[list[str]]:
    """An access list with the old owner's entries (as grantee and grantor) the new one's,
    entries that then name one grantee and grantor merged."""
    merged: dict[tuple[str, str], str] = {}
    for g, p, by in acl:
        key = (new if g == old else g, new if by == old else by)
        merged[key] = union(merged.get(key, ""), p)
    return [[g, p, by] for (g, by), p in merged.items()]
