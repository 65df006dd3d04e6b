"""Default privileges, as PostgreSQL's: ``ALTER DEFAULT PRIVILEGES [FOR ROLE r, …] [IN SCHEMA
s, …] GRANT … ON {TABLES | SEQUENCES | FUNCTIONS | TYPES | SCHEMAS} TO …`` (and REVOKE):
the access list an object gets when role ``r`` creates it (in schema ``s``).

The catalog keeps them as pg_default_acl's rows (``access["defaults"]``: the role, None for
the bootstrap superuser; the schema, None for every schema; the object type letter; the
list). A row for every schema replaces the built-in default; a row for one schema adds to
it. A row that comes back to where it started goes away."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from changeflow.adapter.catalog import PUBLIC, CatalogState
from changeflow.adapter.privileges import (
    acl_text,
    default_acl,
    letters_of,
    revoked,
    split_list,
    union,
)
from changeflow.adapter.result import Result
from changeflow.adapter.roles import (
    bootstrap,
    current_role,
    is_superuser,
    memberships,
    resolve,
    role_oid,
    roles,
)
from changeflow.adapter.sql.names import NAME
from changeflow.adapter.sql.statements import Statement, name
from changeflow.adapter.system_tables import RELATION_BASE, namespace_oid
from changeflow.errors import PlanError

TYPES = {  # the word of ON -> (pg_default_acl's letter, the privilege family)
    "TABLES": ("r", "table"), "SEQUENCES": ("S", "sequence"), "FUNCTIONS": ("f", "function"),
    "ROUTINES": ("f", "function"), "TYPES": ("T", "type"), "SCHEMAS": ("n", "schema"),
}  # fmt: skip
FAMILY = {letter: family for letter, family in TYPES.values()}
LETTER = {"table": "r", "view": "r", "materialized view": "r", "source": "r", "sequence": "S"}
LETTER |= {"function": "f", "type": "T"}
_NAMES = rf"{NAME}(?:\s*,\s*{NAME})*"
_OPTION = re.compile(
    rf"\s*(?:FOR\s+(?:ROLE|USER)\s+(?P<roles>{_NAMES})|IN\s+SCHEMA\s+(?P<schemas>{_NAMES}))\s*",
    re.I,
)
_CHANGE = re.compile(
    r"(?P<verb>GRANT|REVOKE)\s+(?P<gof>GRANT\s+OPTION\s+FOR\s+)?(?P<privs>.+?)\s+ON\s+"
    r"(?P<type>TABLES|SEQUENCES|FUNCTIONS|ROUTINES|TYPES|SCHEMAS)\s+(?:TO|FROM)\s+(?P<who>.+?)"
    r"(?P<option>\s+WITH\s+GRANT\s+OPTION)?(?:\s+(?:CASCADE|RESTRICT))?",
    re.I | re.S,
)


def entries(state: CatalogState) -> list[dict[str, Any]]:
    return state.access.get("defaults") or []


def alter_default_privileges(env: Any, stmt: Statement) -> Result:
    """``ALTER DEFAULT PRIVILEGES …`` (see the module docstring)."""
    rest, pos = stmt.args["rest"].strip().rstrip(";"), 0
    state = env.catalog.load()
    targets: list[str | None] = []
    schemas: list[str | None] = []
    while (m := _OPTION.match(rest, pos)) is not None and m.end() > pos:
        pos = m.end()
        targets += [_role(state, n) for n in re.findall(NAME, m["roles"] or "")]
        schemas += [name(n) for n in re.findall(NAME, m["schemas"] or "")]
    change = _CHANGE.fullmatch(rest[pos:])
    if change is None:
        message = f"syntax error in ALTER DEFAULT PRIVILEGES: {rest[pos:][:60]!r}"
        raise PlanError(message, sqlstate="42601")
    type_letter, family = TYPES[change["type"].upper()]
    if type_letter == "n" and schemas:
        message = "cannot use IN SCHEMA clause when using GRANT/REVOKE ON SCHEMAS"
        raise PlanError(message, sqlstate="0LP01")
    for schema in schemas:
        if schema != PUBLIC and schema not in state.schemas:
            raise PlanError(f'schema "{schema}" does not exist', sqlstate="3F000")
    me = current_role()
    for target in targets:
        shown = target or bootstrap(state)
        if not is_superuser(state, me) and shown not in memberships(state, me, False):
            raise PlanError("permission denied to change default privileges", sqlstate="42501")
    letters = letters_of(change["privs"], family)
    who = ["" if w.upper() == "PUBLIC" else resolve(state, w) for w in split_list(change["who"])]
    granting = change["verb"].upper() == "GRANT"
    mine = targets or [_role(state, me)]

    def apply(s: CatalogState) -> tuple[CatalogState, None]:
        found = list(entries(s))
        for role in mine:
            owner = role or bootstrap(s)
            for schema in schemas or [None]:
                key = {"role": role, "schema": schema, "type": type_letter}
                old = next((e for e in found if all(e[k] == v for k, v in key.items())), None)
                start = default_acl(family, owner) if schema is None else []
                acl = [list(e) for e in (old["acl"] if old else start)]
                for grantee in who:
                    entry = next((e for e in acl if e[0] == grantee and e[2] == owner), None)
                    if entry is None:
                        entry = [grantee, "", owner]
                        acl.append(entry)
                    if granting:
                        option = bool(change["option"])
                        entry[1] = union(entry[1], "".join(c + "*" * option for c in letters))
                    else:
                        entry[1] = revoked(entry[1], letters, bool(change["gof"]))
                acl = _sorted(s, [e for e in acl if e[1]])
                found = [e for e in found if e is not old]
                if acl != _sorted(s, start):
                    found.append({**key, "acl": acl})
        return replace(s, access={**s.access, "defaults": found}), None

    env.catalog.change(apply)
    return Result("ALTER DEFAULT PRIVILEGES")


def _role(state: CatalogState, text: str) -> str | None:
    """A role as the defaults keep it: None for the bootstrap superuser."""
    role = resolve(state, text)
    return role if role in roles(state) else None


def defaults_for(state: CatalogState, kind: str, owner: str, schema: str) -> list | None:
    """The access list a new object of ``kind`` owned by ``owner`` in ``schema`` gets, None
    for the built-in default."""
    type_letter = "n" if kind == "schema" else LETTER.get(kind)
    if type_letter is None or not entries(state):
        return None
    role = owner if owner in roles(state) else None
    family = FAMILY[type_letter]
    base = default_acl(family, owner)
    found = {(e["schema"], e["type"]): e["acl"] for e in entries(state) if e["role"] == role}
    acl = [list(e) for e in found.get((None, type_letter), base)]
    for grantee, privs, grantor in found.get((schema, type_letter), []) if kind != "schema" else []:
        entry = next((e for e in acl if e[0] == grantee and e[2] == grantor), None)
        if entry is None:
            acl.append([grantee, privs, grantor])
        else:
            entry[1] = union(entry[1], privs)
    acl = _sorted(state, acl)
    return None if acl == _sorted(state, base) else acl


def _sorted(state: CatalogState, acl: list[list[str]]) -> list[list[str]]:
    """An access list in PostgreSQL's aclitemsort order: by grantee's OID (PUBLIC's 0), then
    grantor's."""
    return sorted(acl, key=lambda e: (role_oid(state, e[0]) or 0, role_oid(state, e[2]) or 0))


def default_acl_rows(state: CatalogState) -> list[tuple[Any, ...]]:
    """pg_default_acl's rows."""
    return [
        (
            RELATION_BASE * 64 + k,
            role_oid(state, e["role"] or bootstrap(state)),
            namespace_oid(state, e["schema"]) if e["schema"] else 0,
            e["type"],
            acl_text(e["acl"]),
        )
        for k, e in enumerate(entries(state))
    ]


def without_role(state: CatalogState, role: str) -> list[dict[str, Any]]:
    """The defaults once ``role``'s own are gone and it is taken out of the others'."""
    kept = []
    for e in entries(state):
        acl = [x for x in e["acl"] if role not in (x[0], x[2])]
        if e["role"] != role and (acl or e["schema"] is None):  # (one schema's: none left)
            kept.append({**e, "acl": acl})
    return kept


def without_schemas(state: CatalogState, schemas: set[str]) -> list[dict[str, Any]]:
    """The defaults once ``schemas`` are dropped (theirs go with them, as PostgreSQL's)."""
    return [e for e in entries(state) if e["schema"] not in schemas]


def role_dependents(state: CatalogState, role: str) -> list[str]:
    """DROP ROLE's detail lines for the defaults that name ``role``."""
    out = []
    for e in entries(state):
        owner = e["role"] or bootstrap(state)
        what = {"r": "relations", "S": "sequences", "f": "functions", "T": "types"}.get(
            e["type"], "schemas"
        )
        where = f" in schema {e['schema']}" if e["schema"] else ""
        shown = f"default privileges on new {what} belonging to role {owner}{where}"
        if owner == role:
            out.append(f"owner of {shown}")
        elif any(role in (x[0], x[2]) for x in e["acl"]):
            out.append(f"privileges for {shown}")
    return out
