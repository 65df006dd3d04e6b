"""Privileges, as PostgreSQL's: ``GRANT privilege, … | ALL [PRIVILEGES] ON [TABLE | SEQUENCE |
SCHEMA | DATABASE | FUNCTION | TYPE | DOMAIN] name, … | ALL {TABLES | SEQUENCES | FUNCTIONS} IN
SCHEMA s TO role | PUBLIC, … [WITH GRANT OPTION]`` and ``REVOKE [GRANT OPTION FOR] … FROM …
[CASCADE | RESTRICT]``; ``REASSIGN OWNED BY`` and ``DROP OWNED BY``.

An object's access control list is PostgreSQL's aclitem list, ``[grantee, letters,
grantor]`` ("" is PUBLIC; a letter followed by ``*`` may be granted on), kept in a catalog
item's options (``acl``, and its ``owner``: none is the bootstrap superuser), or for a schema
and the database in the catalog's ``access``. None means the default: the owner has every
privilege, PUBLIC has EXECUTE on functions, USAGE on types and on schema public, TEMPORARY
and CONNECT on the database. A superuser passes every check; the others need the letter
through their own grant, one to a role they inherit from, or PUBLIC's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from sqlglot import exp

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
    roles,
)
from changeflow.adapter.sql.names import NAME, QNAME
from changeflow.adapter.sql.session_values import SESSION_NAMES, SessionNames
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


def owns(state: CatalogState, role: str, owner: str) -> bool:
    return is_superuser(state, role) or owner in memberships(state, role)


# -- checks --------------------------------------------------------------------------------------


def checking(state: CatalogState) -> str | None:
    """The role to check privileges for, None when nothing needs checking (no role was
    created, or the current role is a superuser)."""
    if not state.access.get("roles"):
        return None
    role = current_role()
    return None if is_superuser(state, role) else role


def require(state: CatalogState, item: Item, letter: str, role: str | None = None) -> None:
    """42501 unless the current role holds ``letter`` on ``item`` (and USAGE on its
    schema)."""
    role = role or checking(state)
    if role is None:
        return
    schema = split_name(item.name)[0]
    usable = has(state, role, schema_acl(state, schema), "U", "schema")
    if not schema.startswith("pg_temp") and not usable:
        raise denied("schema", schema)
    if not has(state, role, acl_of(state, item), letter):
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


def denied(noun: str, shown: str) -> PlanError:
    return PlanError(f"permission denied for {noun} {shown}", sqlstate="42501")


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
    who = [_grantee(state, w) for w in _split(m["who"])]
    notices: list[tuple[str, str, str]] = []
    for kind, key in objects:
        letters = _letters(m["privs"], kind, key, state)
        if verb == "GRANT":
            option = bool(m["option"])
            if option and "" in who:
                raise PlanError("grant options can only be granted to roles", sqlstate="0LP01")
            change = _granting(kind, key, who, letters, option, notices)
        else:
            cascade = (m["mode"] or "").upper() == "CASCADE"
            change = _revoking(kind, key, who, letters, bool(m["gof"]), cascade)
        env.catalog.change(change)
    return Result(verb, notices=notices)


def _split(text: str) -> list[str]:
    return [p.strip() for p in re.split(r",(?![^()]*\))", text) if p.strip()]


def _grantee(state: CatalogState, text: str) -> str:
    text = re.sub(r"(?i)^GROUP\s+", "", text.strip())
    return "" if text.upper() == "PUBLIC" else resolve(state, text)


def _objects(state: CatalogState, target: str) -> list[tuple[str, str]]:
    """The objects a GRANT names: (privilege family, item id | schema | database name)."""
    m = _TARGET.fullmatch(target.strip())
    assert m is not None
    names = _split(m["names"])
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


def _letters(text: str, kind: str, key: str, state: CatalogState) -> str:
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


def _with_acl(state: CatalogState, kind: str, key: str, acl: list[list[str]]) -> CatalogState:
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
    return replace(state, items={**state.items, key: _item_with(item, acl=acl)})


def _item_with(item: Item, **options: Any) -> Item:
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
        return _with_acl(state, kind, key, acl), None

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
                entry[1] = _without(entry[1], letters, option_only)
            dependents = [e for e in acl if e[2] == grantee and any(c in e[1] for c in letters)]
            if dependents and grantee and not cascade:
                raise PlanError(
                    "dependent privileges exist",
                    sqlstate="2BP01",
                    hint="Use CASCADE to revoke them too.",
                )
            for entry in dependents:
                entry[1] = _without(entry[1], letters, False)
        return _with_acl(state, kind, key, acl), None

    return change


def _without(privs: str, letters: str, option_only: bool) -> str:
    held = {c: privs[i + 1 : i + 2] == "*" for i, c in enumerate(privs) if c != "*"}
    for c in letters:
        if c in held:
            if option_only:
                held[c] = False
            else:
                del held[c]
    return "".join(c + ("*" if held[c] else "") for c in LETTERS if c in held)


# -- roles' objects ------------------------------------------------------------------------------


def dependents(state: CatalogState, role: str) -> list[str]:
    """What keeps ``role`` from being dropped: what it owns, and what it holds privileges on
    (PostgreSQL's detail lines)."""
    out = []
    for item in sorted(state.items.values(), key=lambda i: i.id):
        what = f"{NOUNS.get(item.kind, 'relation')} {split_name(item.name)[1]}"
        if item.options.get("owner") == role:
            out.append(f"owner of {what}")
        elif any(role in (g, by) for g, _, by in item.options.get("acl") or []):
            out.append(f"privileges for {what}")
    for schema, entry in sorted((state.access.get("schemas") or {}).items()):
        if entry.get("owner") == role:
            out.append(f"owner of schema {schema}")
        elif any(role in (g, by) for g, _, by in entry.get("acl") or []):
            out.append(f"privileges for schema {schema}")
    if any(role in (g, by) for g, _, by in (state.access.get("database") or {}).get("acl") or []):
        out.append(f"privileges for database {_database()}")
    return out


def renamed_role(state: CatalogState, old: str, new: str) -> CatalogState:
    """``state`` with the owners and lists naming ``old`` naming ``new``."""

    def acl(entries: list | None) -> list | None:
        if entries is None:
            return None
        return [[new if x == old else x for x in e[:1]] + [e[1]] + [new if e[2] == old else e[2]]
                for e in entries]  # fmt: skip

    items = {}
    for key, item in state.items.items():
        options = dict(item.options)
        if options.get("owner") == old:
            options["owner"] = new
        if options.get("acl") is not None:
            options["acl"] = acl(options["acl"])
        items[key] = replace(item, options=options)
    access = dict(state.access)
    access["schemas"] = {
        s: {
            **e,
            "owner": new if e.get("owner") == old else e.get("owner"),
            "acl": acl(e.get("acl")),
        }
        for s, e in (access.get("schemas") or {}).items()
    }
    if access.get("database"):
        access["database"] = {"acl": acl(access["database"].get("acl"))}
    return replace(state, items=items, access=access)


def owned(env: Any, stmt: Statement) -> Result:
    """``REASSIGN OWNED BY role, … TO role`` and ``DROP OWNED BY role, …``: what the roles own
    goes to the other role; DROP OWNED takes away their privileges (and refuses to drop what
    they own: 0A000, as dropping objects is DROP's)."""
    g = stmt.args
    state = env.catalog.load()
    olds = [resolve(state, n) for n in re.findall(NAME, g["names"])]
    for old in olds:
        if checking(state) is not None and not owns(state, current_role(), old):
            raise PlanError("permission denied to reassign objects", sqlstate="42501")
    if g["verb"].upper() == "REASSIGN":
        new = resolve(state, g["to"])
        owner = None if new == bootstrap(state) else new

        def give(s: CatalogState) -> tuple[CatalogState, None]:
            items = {
                k: _item_with(i, owner=owner) if i.options.get("owner") in olds else i
                for k, i in s.items.items()
            }
            access = dict(s.access)
            access["schemas"] = {
                n: {**e, "owner": owner} if e.get("owner") in olds else e
                for n, e in (access.get("schemas") or {}).items()
            }
            return replace(s, items=items, access=access), None

        env.catalog.change(give)
        return Result("REASSIGN OWNED")
    mine = [i for i in state.items.values() if i.options.get("owner") in olds]
    if mine:
        raise PlanError(
            f"DROP OWNED does not drop objects here: drop {split_name(mine[0].name)[1]} first",
            sqlstate="0A000",
        )

    def strip(s: CatalogState) -> tuple[CatalogState, None]:
        for key, item in list(s.items.items()):
            entries = item.options.get("acl")
            if entries is not None:
                kept = [e for e in entries if e[0] not in olds and e[2] not in olds]
                s = replace(s, items={**s.items, key: _item_with(item, acl=kept)})
        for schema, entry in (s.access.get("schemas") or {}).items():
            if entry.get("acl") is not None:
                kept = [e for e in entry["acl"] if e[0] not in olds and e[2] not in olds]
                s = _with_acl(s, "schema", schema, kept)
        return s, None

    env.catalog.change(strip)
    return Result("DROP OWNED")


def created(state: CatalogState, item: Item) -> Item:
    """A new item, once the current role may create it in its schema (CREATE there), owned
    by that role if it is a created one."""
    if item.kind != "index":  # (an index needs its table's owner)
        require_create(state, split_name(item.name)[0])
    role = current_role()
    if role not in roles(state) or "owner" in item.options:
        return item
    return _item_with(item, owner=role)


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
        given = g["names"] if isinstance(g["names"], list) else _split(g["names"])
        found = [name(n.split("(")[0].strip()) for n in given]
    elif stmt.kind == "drop_schema":
        for schema in g["names"]:
            if schema in state.schemas and not owns(state, role, schema_owner(state, schema)):
                raise PlanError(f"must be owner of schema {schema}", sqlstate="42501")
    elif stmt.kind == "create_schema" and not has(state, role, database_acl(state), "C", "db"):
        raise denied("database", _database())
    for n in found:
        item = state.find(n)
        if item is not None:
            require_owner(state, item)


def _database() -> str:
    return (SESSION_NAMES.get() or SessionNames()).database


def access_restored(state: CatalogState, before: CatalogState) -> CatalogState:
    """``state`` with the roles, owners and privileges of ``before`` (a ROLLBACK's)."""
    items = {}
    for key, item in state.items.items():
        old = before.items.get(key)
        options = {k: v for k, v in item.options.items() if k not in ("owner", "acl")}
        if old is not None:
            options |= {k: old.options[k] for k in ("owner", "acl") if k in old.options}
        items[key] = replace(item, options=options)
    return replace(state, items=items, access=before.access)
