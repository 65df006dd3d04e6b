"""The catalogs of roles and privileges: pg_roles, pg_authid, pg_user and pg_auth_members;
the owners and access lists of pg_class, pg_namespace, pg_database and pg_proc (and the
owner names of pg_tables, pg_views, pg_matviews, information_schema.schemata);
information_schema.table_privileges, role_table_grants, applicable_roles and enabled_roles;
and the functions that read them: ``has_table_privilege`` and its kin, ``pg_has_role``,
``pg_get_userbyid``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from changeflow.adapter.catalog import PUBLIC, CatalogState, Item, split_name
from changeflow.adapter.default_privileges import default_acl_rows
from changeflow.adapter.privileges import (
    ALL,
    PRIVILEGES,
    acl_of,
    acl_text,
    database_acl,
    has,
    kind_of,
    owner_of,
    schema_acl,
    schema_owner,
)
from changeflow.adapter.roles import (
    PREDEFINED,
    PREDEFINED_MEMBERS,
    bootstrap,
    is_superuser,
    members,
    memberships,
    role_named,
    role_oid,
    roles,
)
from changeflow.adapter.sql.session_values import current_role
from changeflow.adapter.system_indexes import relation_oid
from changeflow.adapter.system_tables import KINDS, OWNER, namespace_oid
from changeflow.compute.scalars import from_text, output_text
from changeflow.compute.types import TIMESTAMPTZ

Rows = dict[str, list[tuple[Any, ...]]]
_WORDS = {letter: word for word, letter in PRIVILEGES.items() if word != "TEMP"}


def _role_list(state: CatalogState) -> list[tuple[str, dict[str, Any]]]:
    """Every role: the bootstrap superuser's attributes, then the created roles'."""
    boot = dict.fromkeys(("superuser", "inherit", "createrole", "createdb", "login"), True)
    boot |= {"replication": True, "bypassrls": True, "connlimit": -1}
    plain = {"inherit": True, "connlimit": -1}
    return [
        (bootstrap(state), boot),
        *((name, plain) for name in PREDEFINED),
        *sorted(roles(state).items()),
    ]


def access_rows(state: CatalogState, out: Rows, info: Rows, database: str) -> None:
    """Add the rows of roles, memberships and privileges to ``out`` (pg_catalog) and ``info``
    (information_schema), and set the owners and lists of the rows made already."""
    superuser = is_superuser(state, current_role())
    for role, r in _role_list(state):
        oid = role_oid(state, role)
        config = "{" + ",".join(f"{k}={v}" for k, v in r.get("config") or []) + "}"
        config = config if r.get("config") else None
        password = "********" if r.get("password") or role == bootstrap(state) else None
        flags = [bool(r.get(f)) for f in ("superuser", "inherit", "createrole", "createdb")]
        flags += [bool(r.get("login")), bool(r.get("replication"))]
        until = _timestamp(r.get("valid_until"))
        out["pg_roles"].append(
            (role, *flags, r["connlimit"], password, until, bool(r.get("bypassrls")), config, oid)
        )
        secret = r.get("password") if isinstance(r.get("password"), str) else None
        secret = secret if superuser else None  # (PostgreSQL lets only superusers read it)
        out["pg_authid"].append(
            (oid, role, *flags, bool(r.get("bypassrls")), r["connlimit"], secret, until)
        )
        if r.get("login"):
            out["pg_user"].append(
                (role, oid, flags[3], flags[0], flags[5], bool(r.get("bypassrls")))
                + ("********", until, config)
            )
    for role, member, admin, grantor in (*PREDEFINED_MEMBERS, *members(state)):
        ids = [role_oid(state, n) or OWNER for n in (role, member, grantor)]
        out["pg_auth_members"].append((*ids, bool(admin)))
    out["pg_default_acl"] += default_acl_rows(state)
    out["pg_shdescription"] += [
        (role_oid(state, n), 1260, r["comment"])
        for n, r in roles(state).items()
        if r.get("comment")
    ]
    _owners(state, out, info)
    _visible(state, info)
    info["table_privileges"] += _table_grants(state, database)
    info["role_table_grants"] += info["table_privileges"]
    mine = sorted(_enabled(state))
    info["enabled_roles"] += [(r,) for r in mine]
    info["applicable_roles"] += [
        (member, role, "YES" if admin else "NO")
        for role, member, admin, _ in members(state)
        if member in mine
    ]


def _visible(state: CatalogState, info: Rows) -> None:
    """information_schema's tables, columns and views of what the current role holds some
    privilege on (or owns), as PostgreSQL's show no others (a superuser sees all)."""
    role = current_role()
    if not roles(state) or is_superuser(state, role):
        return
    mine = memberships(state, role)
    held = {
        split_name(i.name)
        for i in state.items.values()
        if owner_of(state, i) in mine
        or any(has(state, role, acl_of(state, i), c) for c in ALL["table"])
    }
    for view in ("tables", "columns", "views"):
        info[view] = [r for r in info[view] if (r[1], r[2]) in held]


def _timestamp(text: str | None) -> str | None:
    """VALID UNTIL's time as PostgreSQL shows a timestamptz."""
    if text is None or text.strip().lower() == "infinity":
        return text and "infinity"
    return output_text(from_text(text, TIMESTAMPTZ), TIMESTAMPTZ)


def _owners(state: CatalogState, out: Rows, info: Rows) -> None:
    by_oid = {relation_oid(i): i for i in state.items.values() if i.kind in KINDS}
    out["pg_class"] = [
        _with(row, {5: role_oid(state, owner_of(state, item)), 30: _acl(item)})
        if (item := by_oid.get(row[0])) is not None
        else row
        for row in out["pg_class"]
    ]
    names = {(split_name(i.name)): owner_of(state, i) for i in state.items.values()}
    for view in ("pg_tables", "pg_views", "pg_matviews"):
        out[view] = [_with(r, {2: names.get((r[0], r[1]), r[2])}) for r in out[view]]
    schemas = {namespace_oid(state, s): s for s in [PUBLIC, *state.schemas]}
    out["pg_namespace"] = [
        _with(r, {2: role_oid(state, schema_owner(state, s)), 3: _schema_acl(state, s)})
        if (s := schemas.get(r[0])) is not None
        else r
        for r in out["pg_namespace"]
    ]
    info["schemata"] = [
        _with(r, {2: schema_owner(state, r[1])}) if r[1] in schemas.values() else r
        for r in info["schemata"]
    ]
    if state.access.get("database"):
        out["pg_database"] = [
            _with(r, {13: acl_text(database_acl(state))}) for r in out["pg_database"]
        ]
    types = {relation_oid(i): i for i in state.items.values() if i.kind == "type"}
    out["pg_type"] = [
        _with(r, {3: role_oid(state, owner_of(state, t))}) if (t := types.get(r[0])) else r
        for r in out["pg_type"]
    ]
    functions = {relation_oid(i): i for i in state.items.values() if i.kind == "function"}
    out["pg_proc"] = [
        _with(r, {3: role_oid(state, owner_of(state, f)), 15: _acl(f)})
        if (f := functions.get(r[0])) is not None
        else r
        for r in out["pg_proc"]
    ]


def _with(row: tuple[Any, ...], changes: dict[int, Any]) -> tuple[Any, ...]:
    return tuple(changes.get(i, v) for i, v in enumerate(row))


def _acl(item: Item) -> str | None:
    return acl_text(item.options.get("acl"))


def _schema_acl(state: CatalogState, schema: str) -> str | None:
    entry = (state.access.get("schemas") or {}).get(schema) or {}
    if entry.get("acl") is None:
        return acl_text(schema_acl(state, schema)) if schema == PUBLIC else None
    return acl_text(entry["acl"])


def _table_grants(state: CatalogState, database: str) -> list[tuple[Any, ...]]:
    """information_schema.table_privileges' rows: each table privilege granted to or by an
    enabled role (or to PUBLIC)."""
    mine = _enabled(state)
    rows = []
    for item in sorted(state.items.values(), key=lambda i: i.name):
        if item.kind not in KINDS or item.kind in ("index", "sequence"):
            continue
        schema, table = split_name(item.name)
        owner = owner_of(state, item)
        for grantee, privs, grantor in acl_of(state, item):
            if grantee not in mine and grantor not in mine and grantee:
                continue
            for i, letter in enumerate(privs):
                if letter == "*":
                    continue
                owning = grantee and owner in memberships(state, grantee)
                grantable = "YES" if privs[i + 1 : i + 2] == "*" or owning else "NO"
                word = _WORDS[letter]
                hierarchy = "YES" if letter == "r" else "NO"
                rows.append(
                    (grantor, grantee or "PUBLIC", database, schema, table, word, grantable)
                    + (hierarchy,)
                )
    return rows


# -- functions -----------------------------------------------------------------------------------


def privilege_functions(state: CatalogState) -> dict[str, Callable[..., Any]]:
    """has_table_privilege([role,] table, privilege) and its kin, pg_has_role,
    pg_get_userbyid, current_user."""
    items = [i for i in state.items.values() if i.kind in KINDS or i.kind == "function"]
    by_oid = {relation_oid(i): i for i in items}

    def role_of(value: Any) -> str | None:
        if isinstance(value, int):
            return role_named(state, value)
        return str(value) if value is not None else None

    def split(args: tuple) -> tuple[str | None, Any, str]:
        if len(args) == 2:
            return current_role(), args[0], str(args[1])
        return role_of(args[0]), args[1], str(args[2])

    def checked(role: str | None, acl: list, privileges: str, kind: str) -> int | None:
        if role is None:
            return None
        for word in privileges.upper().split(","):
            word = word.replace("WITH GRANT OPTION", "").strip()
            letter = PRIVILEGES.get(word)
            if letter is None or letter not in ALL[kind]:
                continue
            if has(state, role, acl, letter, kind):
                return 1
        return 0

    def on_item(*args: Any) -> int | None:
        role, target, privileges = split(args)
        named = str(target).split("(")[0].strip()  # a function's: its name, not its types
        item = by_oid.get(target) if isinstance(target, int) else state.find(named)
        if item is None:
            return None
        return checked(role, acl_of(state, item), privileges, kind_of(item))

    def on_column(*args: Any) -> int | None:
        """has_column_privilege([role,] table, column, privilege): the table's (no column
        has privileges of its own here)."""
        return on_item(*args[:-2], args[-1]) if len(args) in (3, 4) else None

    def on_schema(*args: Any) -> int | None:
        role, target, privileges = split(args)
        schema = str(target) if not isinstance(target, int) else _schema_named(state, target)
        if schema is None:
            return None
        return checked(role, schema_acl(state, schema), privileges, "schema")

    def on_database(*args: Any) -> int | None:
        role, _, privileges = split(args)
        return checked(role, database_acl(state), privileges, "database")

    def has_role(*args: Any) -> int | None:
        role, target, _ = split(args)
        other = role_of(target)
        if role is None or other is None:
            return None
        return int(is_superuser(state, role) or other in memberships(state, role, False))

    return {
        "has_table_privilege": on_item,
        "has_sequence_privilege": on_item,
        "has_function_privilege": on_item,
        "has_any_column_privilege": on_item,
        "has_column_privilege": on_column,
        "has_schema_privilege": on_schema,
        "has_database_privilege": on_database,
        "pg_has_role": has_role,
        "pg_get_userbyid": lambda oid: role_named(state, oid) or f"unknown (OID={oid})",
        "current_user": current_role,
    }


def _enabled(state: CatalogState) -> set[str]:
    """The roles the current one has the privileges of (a superuser: every one)."""
    role = current_role()
    if is_superuser(state, role):
        return {name for name, _ in _role_list(state)}
    return memberships(state, role, inheriting=False)


def _schema_named(state: CatalogState, oid: int) -> str | None:
    return next((s for s in [PUBLIC, *state.schemas] if namespace_oid(state, s) == oid), None)
