"""CREATE SCHEMA and DROP SCHEMA.

Every item is in a schema: ``public`` (always there) or one created by CREATE SCHEMA, whose
items are named ``schema.name`` in the catalog. A qualified name is looked up as it is; an
unqualified one along the session's ``search_path`` (by default public), and an item created
unqualified goes to the path's first schema that exists (``CatalogState.find`` and
``creation_name``). A schema is a name in the catalog, numbered once (its pg_namespace oid
derives from that number); dropping it drops its items only with CASCADE, as PostgreSQL does.
"""

from __future__ import annotations

from dataclasses import replace

from changeflow.adapter.catalog import PUBLIC, SYSTEM_SCHEMAS, CatalogState, Item
from changeflow.adapter.ddl import release
from changeflow.adapter.default_privileges import defaults_for, without_schemas
from changeflow.adapter.enum_types import used_types
from changeflow.adapter.environment import Environment
from changeflow.adapter.result import Result
from changeflow.adapter.roles import current_role, resolve, roles
from changeflow.adapter.sql.statements import Statement
from changeflow.errors import PlanError


def create_schema(env: Environment, stmt: Statement) -> Result:
    """``CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role]``: owned by that role, or by
    the current one."""
    g = stmt.args
    owner = resolve(env.catalog.load(), g["owner"]) if g.get("owner") else current_role()

    def create(state: CatalogState) -> tuple[CatalogState, None]:
        exists = g["name"] in (PUBLIC, *SYSTEM_SCHEMAS, *state.schemas)
        if exists and g.get("ine"):
            return state, None
        state = state.with_schema(g["name"])
        entry = {"owner": owner} if owner in roles(state) else {}
        acl = defaults_for(state, "schema", owner, g["name"])
        entry |= {"acl": acl} if acl is not None else {}
        if not entry:
            return state, None
        schemas = {**(state.access.get("schemas") or {}), g["name"]: entry}
        return replace(state, access={**state.access, "schemas": schemas}), None

    env.catalog.change(create)
    return Result("CREATE SCHEMA")


def drop_schema(env: Environment, stmt: Statement) -> Result:
    g = stmt.args

    def remove(state: CatalogState) -> tuple[CatalogState, list[Item]]:
        doomed: dict[str, Item] = {}
        schemas = dict(state.schemas)
        for name in g["names"]:
            if name in (PUBLIC, *SYSTEM_SCHEMAS):
                raise PlanError(f'cannot drop schema "{name}"', sqlstate="0A000")
            if name not in schemas:
                if g.get("ie"):
                    continue
                raise PlanError(f'schema "{name}" does not exist', sqlstate="3F000")
            items = state.in_schema(name)
            if items and not g["cascade"]:
                raise PlanError(
                    f"cannot drop schema {name} because other objects depend on it "
                    f"({items[0].kind} {items[0].name}); use DROP SCHEMA … CASCADE",
                    sqlstate="2BP01",
                )
            for item in items:
                doomed.update({d.id: d for d in state.closure(item.id)})
            del schemas[name]
        used_types(state, doomed)
        kept = state.without(list(doomed))
        grants = {k: v for k, v in (state.access.get("schemas") or {}).items() if k in schemas}
        gone = set(state.schemas) - set(schemas)
        access = {**state.access, "schemas": grants, "defaults": without_schemas(state, gone)}
        return replace(kept, schemas=schemas, access=access), list(doomed.values())

    gone = env.catalog.change(remove)
    release(env, gone)
    return Result("DROP SCHEMA")
