"""Privileges checked: each statement of a role that is no superuser (once any role was
created) needs its privileges on what it touches, as PostgreSQL checks them: SELECT on what a
query reads, INSERT, UPDATE, DELETE or TRUNCATE on the table it writes (and SELECT where it
reads its rows), USAGE on their schemas, CREATE on the schema of what it creates, and to own
what it alters or drops (42501 otherwise). A view is read with its owner's privileges, so
its creator needs SELECT on what it reads."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlglot import exp

from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.default_privileges import defaults_for
from changeflow.adapter.privileges import (
    NOUNS,
    acl_of,
    database_acl,
    denied,
    has,
    item_with,
    owner_of,
    owns,
    schema_acl,
    schema_owner,
    split_list,
)
from changeflow.adapter.roles import current_role, is_superuser, roles
from changeflow.adapter.sql.names import NAME
from changeflow.adapter.sql.session_values import SESSION_NAMES, SessionNames
from changeflow.adapter.sql.statements import Statement, name
from changeflow.errors import PlanError


def checking(state: CatalogState) -> str | None:
    """The role to check privileges for, None when nothing needs checking (no role was
    created, or the current role is a superuser)."""
    if not state.access.get("roles"):
        return None
    role = current_role()
    return None if is_superuser(state, role) else role


def require(state: CatalogState, item: Item, letters: str, role: str | None = None) -> None:
    """42501 unless the current role holds one of ``letters`` on ``item`` (a sequence's
    function: nextval needs USAGE or UPDATE, currval SELECT or USAGE) and USAGE on its
    schema."""
    role = role or checking(state)
    if role is None:
        return
    schema = split_name(item.name)[0]
    usable = has(state, role, schema_acl(state, schema), "U", "schema")
    if not schema.startswith("pg_temp") and not usable:
        raise denied("schema", schema)
    if not any(has(state, role, acl_of(state, item), c) for c in letters):
        raise denied(NOUNS.get(item.kind, "relation"), split_name(item.name)[1])


def require_reads(state: CatalogState, names: frozenset[str] | set[str]) -> None:
    """SELECT on each relation a query reads."""
    role = checking(state)
    for n in names if role is not None else ():
        item = state.by_name(n)
        if item is not None:
            require(state, item, "r", role)


_VERBS = {"insert": "a", "update": "w", "delete": "d"}
_TRUNCATING: ContextVar[bool] = ContextVar("truncating", default=False)


@contextmanager
def truncating(state: CatalogState, names: list[str]) -> Iterator[None]:
    """TRUNCATE's check (its own privilege on each table), and its DELETEs run unchecked."""
    role = checking(state)
    for n in names if role is not None else ():
        if (item := state.find(n)) is not None:
            require(state, item, "D", role)
    token = _TRUNCATING.set(True)
    try:
        yield
    finally:
        _TRUNCATING.reset(token)


def require_write(state: CatalogState, kind: str, tree: Any, table: str, reads: frozenset) -> None:
    """The privileges an INSERT, UPDATE, DELETE or MERGE (``kind``, its ``tree``) on
    ``table`` needs: its verb's, SELECT where it reads the table's rows (a WHERE, RETURNING,
    a SET reading columns, MERGE), and SELECT on the other relations it reads."""
    role = None if _TRUNCATING.get() else checking(state)
    item = state.by_name(table) if role is not None else None
    if item is None:
        return
    letters = _VERBS.get(kind, "")
    if kind == "merge":
        said = re.findall(r"\bTHEN\s+(INSERT|UPDATE|DELETE)", tree.sql(), re.I)
        letters = "r" + "".join(_VERBS[w.lower()] for w in said)
    elif kind == "insert":
        conflict = tree.args.get("conflict")
        letters += "w" if conflict is not None and conflict.args.get("expressions") else ""
    else:
        sets = tree.expressions if kind == "update" else []
        reading = any(e.expression.find(exp.Column) for e in sets if isinstance(e, exp.EQ))
        letters += "r" if tree.args.get("where") is not None or reading else ""
    letters += "r" if tree.args.get("returning") is not None else ""
    for letter in dict.fromkeys(letters):
        require(state, item, letter, role)
    require_reads(state, reads - {table})


def require_owner(state: CatalogState, item: Item) -> None:
    """42501 unless the current role owns ``item`` (or is a member of its owner)."""
    role = checking(state)
    if role is not None and not owns(state, role, owner_of(state, item)):
        what = NOUNS.get(item.kind, "relation")
        raise PlanError(f"must be owner of {what} {split_name(item.name)[1]}", sqlstate="42501")


def require_create(state: CatalogState, schema: str) -> None:
    """CREATE on ``schema`` (a new object's)."""
    role = checking(state)
    if role is None or schema.startswith("pg_temp"):
        return
    if not has(state, role, schema_acl(state, schema), "C", "schema"):
        raise denied("schema", schema)


def created(state: CatalogState, item: Item) -> Item:
    """A new item, once the current role may create it in its schema (CREATE there): owned
    by that role if it is a created one, with the access list its default privileges give."""
    schema = split_name(item.name)[0]
    if item.kind != "index":  # (an index needs its table's owner)
        require_create(state, schema)
    role = current_role()
    if role in roles(state) and "owner" not in item.options:
        item = item_with(item, owner=role)
    if "acl" not in item.options:
        acl = defaults_for(state, item.kind, owner_of(state, item), schema)
        item = item if acl is None else item_with(item, acl=acl)
    return item


_OWNED = {  # statements that change an object its owner alone may change: its name's key
    "alter_table": "name", "rename": "name", "alter_sequence": "name", "enum_alter": "name",
    "domain_alter": "name", "refresh": "name", "create_index": "item",
}  # fmt: skip
_DROPS = ("drop", "drop_sequence", "drop_type", "drop_domain", "drop_function")


def check_ddl(state: CatalogState, stmt: Statement) -> None:
    """42501 for DDL the current role may not run: changing or dropping what it does not
    own, creating a schema without CREATE on the database."""
    role = checking(state)
    if role is None:
        return
    g, found = stmt.args, []
    if stmt.kind in _OWNED and g.get(_OWNED[stmt.kind]):
        found = [g[_OWNED[stmt.kind]]]
    elif stmt.kind in _DROPS:
        given = g["names"] if isinstance(g["names"], list) else split_list(g["names"])
        found = [name(n.split("(")[0].strip()) for n in given]
    elif stmt.kind == "comment" and g["kind"].upper() not in ("SCHEMA", "ROLE"):
        parts = re.findall(NAME, g["name"])  # a column's: its relation's
        found = [name(".".join(parts[:-1] if g["kind"].upper() == "COLUMN" else parts))]
    elif stmt.kind == "drop_schema":
        for schema in g["names"]:
            if schema in state.schemas and not owns(state, role, schema_owner(state, schema)):
                raise PlanError(f"must be owner of schema {schema}", sqlstate="42501")
    elif stmt.kind == "create_schema" and not has(state, role, database_acl(state), "C", "db"):
        raise denied("database", database_name())
    for n in found:
        item = state.find(n)
        if item is not None:
            require_owner(state, item)


def database_name() -> str:
    return (SESSION_NAMES.get() or SessionNames()).database


def login_refusal(state: CatalogState, user: str, database: str) -> tuple[str, str] | None:
    """Why ``user`` may not connect to ``database`` (SQLSTATE and message): a created role
    without LOGIN, or without CONNECT on the database; None if it may."""
    found = roles(state).get(user)
    if found is None:
        return None
    if not found.get("login"):
        return "28000", f'role "{user}" is not permitted to log in'
    if not has(state, user, database_acl(state), "c", "db"):
        return "42501", f'permission denied for database "{database}"'
    return None
