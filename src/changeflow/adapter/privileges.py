"""Privileges, as PostgreSQL's: ``GRANT privilege, … | ALL [PRIVILEGES] ON [TABLE | SEQUENCE |
SCHEMA | DATABASE | FUNCTION | TYPE | DOMAIN] name, … | ALL {TABLES | SEQUENCES | FUNCTIONS} IN
SCHEMA s TO role | PUBLIC, … [WITH GRANT OPTION]`` and ``REVOKE [GRANT OPTION FOR] … FROM …
[CASCADE | RESTRICT]`` (checked as :mod:`.privilege_checks` says; what roles own:
:mod:`.owned`).

An object's access control list is PostgreSQL's aclitem list, ``[grantee, letters,
grantor]`` ("" is PUBLIC; a letter followed by ``*`` may be granted on), kept in a catalog
item's options (``acl``, and its ``owner``: none is the bootstrap superuser), or for a schema
and the database in the catalog's ``access``. None means the default: the owner has every
privilege, PUBLIC has EXECUTE on functions, USAGE on types and on schema public, TEMPORARY
and CONNECT on the database. A superuser passes every check; the others need the letter
through their own grant, one to a role they inherit from, or PUBLIC's."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from changeflow.adapter.catalog import PUBLIC, CatalogState, Item, split_name
from changeflow.adapter.result import Result
from changeflow.adapter.roles import (
    bootstrap,
    current_role,
    grant_roles,
    is_superuser,
    memberships,
    resolve,
    revoke_roles,
)
from changeflow.adapter.sql.names import NAME, QNAME
from changeflow.adapter.sql.statements import Statement, name
from changeflow.errors import PlanError

LETTERS = "arwdDxtXUCTc"  # PostgreSQL's order of aclitem letters
PRIVILEGES = {
    "SELECT": "r", "INSERT": "a", "UPDATE": "w", "DELETE": "d", "TRUNCATE": "D",
    "REFERENCES": "x", "TRIGGER": "t", "EXECUTE": "X", "USAGE": "U", "CREATE": "C",
    "TEMPORARY": "T", "TEMP": "T", "CONNECT": "c",
}  # fmt: skip
ALL = {
    "table": "arwdDxt", "sequence": "rwU", "schema": "UC", "database": "CTc",
    "function": "X", "type": "U",
}  # fmt: skip
NOUNS = {  # how errors name an item of each kind
    "table": "table", "view": "view", "materialized view": "materialized view",
    "sequence": "sequence", "source": "source", "sink": "sink", "index": "index",
    "function": "function", "type": "type",
}  # fmt: skip
RELATIONS = ("table", "view", "materialized view", "source", "sequence", "sink")
_TARGET = re.compile(
    r"(?:ALL\s+(?P<all>TABLES|SEQUENCES|FUNCTIONS|ROUTINES|PROCEDURES)\s+IN\s+SCHEMA\s+"
    r"|(?P<kind>TABLE|SEQUENCE|SCHEMA|DATABASE|FUNCTION|ROUTINE|PROCEDURE|TYPE|DOMAIN|"
    r"LANGUAGE|TABLESPACE|LARGE\s+OBJECT|FOREIGN\s+DATA\s+WRAPPER|FOREIGN\s+SERVER|"
    r"PARAMETER)\s+)?(?P<names>.+)",
    re.I | re.S,
)
_GRANT = re.compile(
    r"(?P<privs>.+?)\s+ON\s+(?P<target>.+?)\s+TO\s+(?P<who>.+?)"
    r"(?P<option>\s+WITH\s+GRANT\s+OPTION)?(?:\s+GRANTED\s+BY\s+\S+)?",
    re.I | re.S,
)
_REVOKE = re.compile(
    r"(?P<gof>GRANT\s+OPTION\s+FOR\s+)?(?P<privs>.+?)\s+ON\s+(?P<target>.+?)\s+FROM\s+"
    r"(?P<who>.+?)(?:\s+GRANTED\s+BY\s+\S+)?(?:\s+(?P<mode>CASCADE|RESTRICT))?",
    re.I | re.S,
)
_ROLES = re.compile(
    rf"(?P<admin_for>ADMIN\s+OPTION\s+FOR\s+)?(?P<roles>{NAME}(?:\s*,\s*{NAME})*)\s+"
    rf"(?:TO|FROM)\s+(?P<who>(?:GROUP\s+)?{NAME}(?:\s*,\s*(?:GROUP\s+)?{NAME})*)"
    r"(?P<admin>\s+WITH\s+ADMIN\s+OPTION)?(?:\s+GRANTED\s+BY\s+\S+)?(?:\s+(?:CASCADE|RESTRICT))?",
    re.I | re.S,
)


# -- objects and their lists ---------------------------------------------------------------------


def owner_of(state: CatalogState, item: Item) -> str:
    return item.options.get("owner") or bootstrap(state)


def schema_entry(state: CatalogState, schema: str) -> dict[str, Any]:
    return (state.access.get("schemas") or {}).get(schema) or {}


def schema_owner(state: CatalogState, schema: str) -> str:
    """The owner of ``schema`` (public's is pg_database_owner, as in PostgreSQL 15)."""
    default = "pg_database_owner" if schema == PUBLIC else bootstrap(state)
    return schema_entry(state, schema).get("owner") or default


def kind_of(item: Item) -> str:
    """The privilege family of a catalog item."""
    if item.kind in ("function", "type"):
        return item.kind
    return "sequence" if item.kind == "sequence" else "table"


def default_acl(kind: str, owner: str, schema: str | None = None) -> list[list[str]]:
    """The list an object has before any GRANT or REVOKE (PostgreSQL's acldefault)."""
    mine = [[owner, ALL[kind], owner]]
    if kind == "schema" and schema == PUBLIC:
        return [*mine, ["", "U", owner]]
    if kind in ("function", "type"):
        return [["", "X" if kind == "function" else "U", owner], *mine]
    if kind == "database":
        return [["", "Tc", owner], *mine]
    return mine


def acl_of(state: CatalogState, item: Item) -> list[list[str]]:
    found = item.options.get("acl")
    return found if found is not None else default_acl(kind_of(item), owner_of(state, item))


def schema_acl(state: CatalogState, schema: str) -> list[list[str]]:
    found = schema_entry(state, schema).get("acl")
    owner = schema_owner(state, schema)
    return found if found is not None else default_acl("schema", owner, schema)


def database_acl(state: CatalogState) -> list[list[str]]:
    found = (state.access.get("database") or {}).get("acl")
    return found if found is not None else default_acl("database", bootstrap(state))


def acl_text(acl: list[list[str]] | None) -> str | None:
    """An aclitem[] as PostgreSQL prints it: ``{u=arwdDxt/u,=r/u}``."""
    if acl is None:
        return None
    return "{" + ",".join(f"{_quoted(g)}={p}/{_quoted(by)}" for g, p, by in acl if p) + "}"


def _quoted(role: str) -> str:
    return role if re.fullmatch(r"[a-z_][a-z0-9_$]*", role) or not role else f'"{role}"'


def has(
    state: CatalogState, role: str, acl: list[list[str]], letter: str, family: str = "table"
) -> bool:
    """Does ``role`` hold privilege ``letter`` by ``acl`` of an object of ``family`` (as a
    superuser holds any, and members of pg_read_all_data and pg_write_all_data theirs)?"""
    if is_superuser(state, role):
        return True
    holders = memberships(state, role) | {""}
    if family == "schema" and letter == "U" and holders & set(_ALL_DATA.values()):
        return True
    if family in ("table", "sequence") and _ALL_DATA.get(letter) in holders:
        return True
    return any(g in holders and letter in p for g, p, _ in acl)


_ALL_DATA = {"r": "pg_read_all_data", "a": "pg_write_all_data", "w": "pg_write_all_data"}
_ALL_DATA["d"] = "pg_write_all_data"


def denied(noun: str, shown: str) -> PlanError:
    return PlanError(f"permission denied for {noun} {shown}", sqlstate="42501")


def owns(state: CatalogState, role: str, owner: str) -> bool:
    return is_superuser(state, role) or owner in memberships(state, role)


# -- GRANT and REVOKE ----------------------------------------------------------------------------


def grant(env: Any, stmt: Statement) -> Result:
    """GRANT or REVOKE, of privileges (``… ON …``) or of roles."""
    verb, rest = stmt.args["verb"].upper(), stmt.args["rest"].strip().rstrip(";")
    pattern = _GRANT if verb == "GRANT" else _REVOKE
    m = pattern.fullmatch(rest) if re.search(r"\sON\s", rest, re.I) else None
    if m is None:
        r = _ROLES.fullmatch(rest)
        if r is None:
            raise PlanError(f"syntax error in {verb}: {rest[:60]!r}", sqlstate="42601")
        granted = [name(n) for n in re.findall(NAME, r["roles"])]
        who = [name(n) for n in re.findall(NAME, re.sub(r"(?i)\bGROUP\s+", "", r["who"]))]
        if verb == "GRANT":
            return grant_roles(env, granted, who, bool(r["admin"]))
        return revoke_roles(env, granted, who, bool(r["admin_for"]))
    if re.search(r"\(", m["privs"]):
        raise PlanError("column privileges are not supported", sqlstate="0A000")
    state = env.catalog.load()
    objects = _objects(state, m["target"])
    who = [_grantee(state, w) for w in split_list(m["who"])]
    notices: list[tuple[str, str, str]] = []
    changes = []
    for kind, key in objects:
        letters = letters_of(m["privs"], kind)
        if verb == "GRANT":
            option = bool(m["option"])
            if option and "" in who:
                raise PlanError("grant options can only be granted to roles", sqlstate="0LP01")
            changes.append(_granting(kind, key, who, letters, option, notices))
        else:
            cascade = (m["mode"] or "").upper() == "CASCADE"
            changes.append(_revoking(kind, key, who, letters, bool(m["gof"]), cascade))

    def every(state: CatalogState) -> tuple[CatalogState, None]:
        notices.clear()  # (all or nothing: one change of the catalog)
        for change in changes:
            state = change(state)[0]
        return state, None

    env.catalog.change(every)
    return Result(verb, notices=notices)


def split_list(text: str) -> list[str]:
    return [p.strip() for p in re.split(r",(?![^()]*\))", text) if p.strip()]


def _grantee(state: CatalogState, text: str) -> str:
    text = re.sub(r"(?i)^GROUP\s+", "", text.strip())
    return "" if text.upper() == "PUBLIC" else resolve(state, text)


def _objects(state: CatalogState, target: str) -> list[tuple[str, str]]:
    """The objects a GRANT names: (privilege family, item id | schema | database name)."""
    m = _TARGET.fullmatch(target.strip())
    assert m is not None
    names = split_list(m["names"])
    if m["all"]:
        family = {"TABLES": "table", "SEQUENCES": "sequence"}.get(m["all"].upper(), "function")
        out = []
        for schema in (name(n) for n in names):
            if schema != PUBLIC and schema not in state.schemas:
                raise PlanError(f'schema "{schema}" does not exist', sqlstate="3F000")
            for item in sorted(state.in_schema(schema), key=lambda i: i.name):
                wanted = family == "function" and item.kind == "function"
                wanted |= family == "sequence" and item.kind == "sequence"
                wanted |= family == "table" and item.kind in RELATIONS[:-2]
                if wanted:
                    out.append((family, item.id))
        return out
    kind = " ".join((m["kind"] or "TABLE").upper().split())
    if kind == "SCHEMA":
        for schema in (name(n) for n in names):
            if schema != PUBLIC and schema not in state.schemas:
                raise PlanError(f'schema "{schema}" does not exist', sqlstate="3F000")
        return [("schema", name(n)) for n in names]
    if kind == "DATABASE":
        return [("database", name(n)) for n in names]
    if kind in ("TABLE", "SEQUENCE"):
        return [_relation(state, n, kind.lower()) for n in names]
    if kind in ("FUNCTION", "ROUTINE", "PROCEDURE", "TYPE", "DOMAIN"):
        family = "type" if kind in ("TYPE", "DOMAIN") else "function"
        out = []
        for n in names:
            item = state.find(name(n.split("(")[0].strip()))
            if item is None or item.kind != family:
                what = "function" if family == "function" else "type"
                code = "42883" if family == "function" else "42704"
                raise PlanError(f'{what} "{n}" does not exist', sqlstate=code)
            out.append((family, item.id))
        return out
    raise PlanError(f"GRANT ON {kind} is not supported", sqlstate="0A000")


def _relation(state: CatalogState, text: str, kind: str) -> tuple[str, str]:
    if not re.fullmatch(QNAME, text.strip()):
        raise PlanError(f"syntax error at or near {text!r}", sqlstate="42601")
    item = state.find(name(text))
    if item is None or item.kind not in RELATIONS:
        raise PlanError(f'relation "{name(text)}" does not exist', sqlstate="42P01")
    if kind == "sequence" and item.kind != "sequence":
        raise PlanError(f'"{split_name(item.name)[1]}" is not a sequence', sqlstate="42809")
    return kind_of(item), item.id


def letters_of(text: str, kind: str) -> str:
    """The aclitem letters of a GRANT's privilege list for an object of family ``kind``."""
    words = [" ".join(w.upper().split()) for w in text.split(",")]
    if words in (["ALL"], ["ALL PRIVILEGES"]):
        return ALL[kind]
    out = ""
    for word in words:
        letter = PRIVILEGES.get(word)
        if letter is None:
            raise PlanError(f'unrecognized privilege type "{word.lower()}"', sqlstate="42601")
        if letter not in ALL[kind]:
            what = {"table": "relation"}.get(kind, kind)
            raise PlanError(f"invalid privilege type {word} for {what}", sqlstate="0LP01")
        out += letter
    return out


def _subject(state: CatalogState, kind: str, key: str) -> tuple[list[list[str]], str, str]:
    """An object's list, owner and name (as errors show it)."""
    if kind == "schema":
        return schema_acl(state, key), schema_owner(state, key), key
    if kind == "database":
        return database_acl(state), bootstrap(state), key
    item = state.items[key]
    return acl_of(state, item), owner_of(state, item), split_name(item.name)[1]


def with_acl(state: CatalogState, kind: str, key: str, acl: list[list[str]]) -> CatalogState:
    acl = [e for e in acl if e[1]]
    if kind in ("schema", "database"):
        access = dict(state.access)
        if kind == "schema":
            entry = {**schema_entry(state, key), "acl": acl}
            access["schemas"] = {**(access.get("schemas") or {}), key: entry}
        else:
            access["database"] = {**(access.get("database") or {}), "acl": acl}
        return replace(state, access=access)
    item = state.items[key]
    return replace(state, items={**state.items, key: item_with(item, acl=acl)})


def item_with(item: Item, **options: Any) -> Item:
    return replace(item, options={**item.options, **options})


def _grantor(state: CatalogState, owner: str) -> str:
    """Who grants: the owner for its owner (and its members) and superusers; else the
    current role, by the grant options it holds."""
    me = current_role()
    return owner if owns(state, me, owner) else me


def _granting(kind: str, key: str, who: list[str], letters: str, option: bool, notices: list):
    def change(state: CatalogState) -> tuple[CatalogState, None]:
        acl, owner, shown = _subject(state, kind, key)
        acl = [list(e) for e in acl]
        grantor = _grantor(state, owner)
        if grantor != owner:
            mine = memberships(state, grantor) | {""}
            held = "".join(p for g, p, _ in acl if g in mine)
            may = "".join(c for i, c in enumerate(held[:-1]) if held[i + 1] == "*")
            if not held.replace("*", ""):
                raise denied({"table": "table"}.get(kind, kind), shown)
            granted = "".join(c for c in letters if c in may)
            if granted != letters:
                word = "no" if not granted else "not all"
                notices.append(("01007", f'{word} privileges were granted for "{shown}"', ""))
            letters_now = granted
        else:
            letters_now = letters
        for grantee in who:
            entry = next((e for e in acl if e[0] == grantee and e[2] == grantor), None)
            if entry is None:
                entry = [grantee, "", grantor]
                acl.append(entry)
            entry[1] = _merged(entry[1], letters_now, option)
        return with_acl(state, kind, key, acl), None

    return change


def _merged(privs: str, letters: str, option: bool) -> str:
    return union(privs, "".join(c + ("*" if option else "") for c in letters))


def union(a: str, b: str) -> str:
    """Two aclitem letter strings as one (a letter grantable if either grants it on)."""
    held: dict[str, bool] = {}
    for privs in (a, b):
        for i, c in enumerate(privs):
            if c != "*":
                held[c] = held.get(c, False) or privs[i + 1 : i + 2] == "*"
    return "".join(c + ("*" if held[c] else "") for c in LETTERS if c in held)


def _revoking(kind: str, key: str, who: list[str], letters: str, option_only: bool, cascade: bool):
    def change(state: CatalogState) -> tuple[CatalogState, None]:
        acl, owner, shown = _subject(state, kind, key)
        acl = [list(e) for e in acl]
        grantor = _grantor(state, owner)
        for grantee in who:
            for entry in [e for e in acl if e[0] == grantee and e[2] == grantor]:
                entry[1] = revoked(entry[1], letters, option_only)
            dependents = [e for e in acl if e[2] == grantee and any(c in e[1] for c in letters)]
            if dependents and grantee and not cascade:
                raise PlanError(
                    "dependent privileges exist",
                    sqlstate="2BP01",
                    hint="Use CASCADE to revoke them too.",
                )
            for entry in dependents:
                entry[1] = revoked(entry[1], letters, False)
        return with_acl(state, kind, key, acl), None

    return change


def revoked(privs: str, letters: str, option_only: bool) -> str:
    """``privs`` without ``letters`` (``option_only``: without their grant options)."""
    held = {c: privs[i + 1 : i + 2] == "*" for i, c in enumerate(privs) if c != "*"}
    for c in letters:
        if c in held:
            if option_only:
                held[c] = False
            else:
                del held[c]
    return "".join(c + ("*" if held[c] else "") for c in LETTERS if c in held)
