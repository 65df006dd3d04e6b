"""Roles, as PostgreSQL's: ``CREATE ROLE | USER | GROUP name [[WITH] option …]``, ``ALTER
ROLE`` (options, ``RENAME TO``, ``SET``/``RESET`` of a parameter), ``DROP ROLE [IF EXISTS]``,
``GRANT role TO role [WITH ADMIN OPTION]`` and ``REVOKE [ADMIN OPTION FOR] role FROM role``.

The catalog keeps the roles created (``access["roles"]``: name -> attributes and OID) and who
is a member of whom (``access["members"]``: ``[role, member, admin, grantor]``). The user a
session connects as is the bootstrap superuser unless a role of that name was created; then
the session is that role (and must have LOGIN). ``SET ROLE`` and ``SET SESSION
AUTHORIZATION`` change the current role (:func:`current_role`); privileges are checked
against it (:mod:`changeflow.adapter.privileges`)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from changeflow.adapter.catalog import CatalogState
from changeflow.adapter.result import Result
from changeflow.adapter.scram import ScramSecret
from changeflow.adapter.sql.names import NAME
from changeflow.adapter.sql.session_values import (
    SESSION_NAMES,
    SessionNames,
    current_role,
    session_user,
)
from changeflow.adapter.sql.statements import Statement, name
from changeflow.adapter.system_tables import OWNER, RELATION_BASE
from changeflow.errors import PlanError

# PostgreSQL's predefined roles and their OIDs; pg_read_all_data and pg_write_all_data give
# their members those privileges on every table (:func:`changeflow.adapter.privileges.has`)
PREDEFINED = {
    "pg_database_owner": 6171, "pg_read_all_data": 6181, "pg_write_all_data": 6182,
    "pg_monitor": 3373, "pg_read_all_settings": 3374, "pg_read_all_stats": 3375,
    "pg_stat_scan_tables": 3377, "pg_read_server_files": 4569, "pg_write_server_files": 4570,
    "pg_execute_server_program": 4571, "pg_signal_backend": 4200, "pg_checkpoint": 4544,
}  # fmt: skip
_PREDEFINED_OIDS = {oid: name for name, oid in PREDEFINED.items()}
PREDEFINED_MEMBERS = tuple(
    [granted, "pg_monitor", False, "changeflow"]
    for granted in ("pg_read_all_settings", "pg_read_all_stats", "pg_stat_scan_tables")
)
_FLAGS = ("superuser", "createdb", "createrole", "inherit", "login", "replication", "bypassrls")
_NAMES = rf"{NAME}(?:\s*,\s*{NAME})*"
_OPTION = re.compile(
    rf"\s*(?:(?P<no>NO)?(?P<flag>{'|'.join(_FLAGS)})\b"
    r"|CONNECTION\s+LIMIT\s+(?P<limit>-?\d+)"
    r"|(?:ENCRYPTED\s+|UNENCRYPTED\s+)?PASSWORD\s+(?P<password>'(?:[^']|'')*'|NULL)"
    r"|VALID\s+UNTIL\s+'(?P<until>(?:[^']|'')*)'"
    rf"|(?P<list>IN\s+ROLE|IN\s+GROUP|ROLE|ADMIN|USER)\s+(?P<names>{_NAMES})"
    r"|SYSID\s+\d+)\s*",
    re.I,
)
_SETTING = re.compile(
    r"(?:IN\s+DATABASE\s+\S+\s+)?(?:SET\s+(?P<var>[\w.]+)\s*(?:=|TO)\s*(?P<value>.+)"
    r"|SET\s+(?P<cur>[\w.]+)\s+FROM\s+CURRENT|RESET\s+(?P<reset>[\w.]+))",
    re.I | re.S,
)


# -- the roles of a catalog --------------------------------------------------------------------


def roles(state: CatalogState) -> dict[str, dict[str, Any]]:
    """The created roles by name."""
    return state.access.get("roles") or {}


def members(state: CatalogState) -> list[list[Any]]:
    """Memberships: ``[role, member, admin option, grantor]``."""
    return state.access.get("members") or []


def bootstrap(state: CatalogState) -> str:
    """The name the bootstrap superuser (OID 10, the owner of what no created role owns) goes
    by: the session's own user unless that is a created role."""
    user = (SESSION_NAMES.get() or SessionNames()).user
    created = roles(state)
    names = (user, "changeflow", "postgres")
    return next((n for n in names if n not in created), "changeflow_bootstrap")


def role_oid(state: CatalogState, role: str) -> int | None:
    """The OID of ``role`` (10 for the bootstrap superuser), None if there is no such role."""
    if role == bootstrap(state):
        return OWNER
    if role in PREDEFINED:
        return PREDEFINED[role]
    found = roles(state).get(role)
    return None if found is None else RELATION_BASE + found["number"]


def role_named(state: CatalogState, oid: int) -> str | None:
    """The name of the role of ``oid``."""
    if oid == OWNER:
        return bootstrap(state)
    if (predefined := _PREDEFINED_OIDS.get(oid)) is not None:
        return predefined
    return next((n for n, r in roles(state).items() if RELATION_BASE + r["number"] == oid), None)


def exists(state: CatalogState, role: str) -> bool:
    return role in roles(state) or role == bootstrap(state) or role in PREDEFINED


def is_superuser(state: CatalogState, role: str) -> bool:
    found = roles(state).get(role)
    return role not in PREDEFINED if found is None else bool(found.get("superuser"))


def memberships(state: CatalogState, role: str, inheriting: bool = True) -> set[str]:
    """``role`` and every role it is a member of, directly or not (``inheriting``: only
    through roles that inherit, as privileges pass)."""
    out, todo = {role}, [role]
    while todo:
        r = todo.pop()
        if inheriting and not roles(state).get(r, {}).get("inherit", True):
            continue
        for granted, member, *_ in (*members(state), *PREDEFINED_MEMBERS):
            if member == r and granted not in out:
                out.add(granted)
                todo.append(granted)
    return out


def resolve(state: CatalogState, text: str) -> str:
    """A role as a statement names it (CURRENT_USER, SESSION_USER, CURRENT_ROLE or a name);
    42704 if there is none."""
    word = name(text.strip())
    role = {"current_user": current_role(), "current_role": current_role()}.get(word, word)
    role = session_user() if role == "session_user" else role
    if not exists(state, role):
        raise PlanError(f'role "{role}" does not exist', sqlstate="42704")
    return role


def _role_names(text: str | None) -> list[str]:
    return [name(n) for n in re.findall(NAME, text or "")]


# -- CREATE, ALTER and DROP ROLE -----------------------------------------------------------------


def create_role(env: Any, stmt: Statement) -> Result:
    """``CREATE ROLE | USER | GROUP name [[WITH] option …]`` (a USER has LOGIN)."""
    g = stmt.args
    role = name(g["name"])
    _may_create_roles(env.catalog.load())
    _reserved(role)
    attributes, memberships_given = _options(g.get("rest") or "")
    attributes.setdefault("login", g["what"].upper() == "USER")

    def change(state: CatalogState) -> tuple[CatalogState, None]:
        if exists(state, role):
            raise PlanError(f'role "{role}" already exists', sqlstate="42710")
        defaults = {f: False for f in _FLAGS} | {"inherit": True, "connlimit": -1}
        made = defaults | attributes | {"number": state.next_id, "config": []}
        access = dict(state.access)
        access["roles"] = {**roles(state), role: made}
        state = replace(state, access=access, next_id=state.next_id + 1)
        grantor = current_role()
        for kind, names in memberships_given:
            for other in names:
                resolve(state, other)
                if kind in ("IN ROLE", "IN GROUP"):
                    state = _with_member(state, other, role, False, grantor)
                else:
                    state = _with_member(state, role, other, kind == "ADMIN", grantor)
        return state, None

    env.catalog.change(change)
    return Result(f"CREATE {'ROLE' if g['what'].upper() == 'GROUP' else g['what'].upper()}")


def alter_role(env: Any, stmt: Statement) -> Result:
    """``ALTER ROLE name [WITH] option …``, ``RENAME TO new``, ``SET param TO value``,
    ``RESET param``."""
    g = stmt.args
    state = env.catalog.load()
    role = resolve(state, g["name"])
    rest = re.sub(r"^WITH\s+", "", g["rest"].strip().rstrip(";"), flags=re.I)
    tag = f"ALTER {'ROLE' if g['what'].upper() == 'GROUP' else g['what'].upper()}"
    group = re.fullmatch(rf"(?P<verb>ADD|DROP)\s+USER\s+(?P<users>{_NAMES})", rest, re.I)
    if group is not None:  # ALTER GROUP g ADD | DROP USER u, …: membership
        users = _role_names(group["users"])
        if group["verb"].upper() == "ADD":
            return replace(grant_roles(env, [role], users, False), status=tag)
        return replace(revoke_roles(env, [role], users, False), status=tag)
    renamed = re.fullmatch(rf"RENAME\s+TO\s+(?P<new>{NAME})", rest, re.I)
    if renamed is not None:
        _rename(env, role, name(renamed["new"]))
        return Result(tag)
    setting = _SETTING.fullmatch(rest)
    if setting is not None:
        _may_alter(state, role)
        return _configure(env, role, setting, tag)
    attributes, given = _options(rest)
    if given:
        raise PlanError("ALTER ROLE does not take role lists: GRANT them", sqlstate="42601")
    _may_alter(state, role, attributes)

    def change(s: CatalogState) -> tuple[CatalogState, None]:
        if role not in roles(s):
            raise PlanError(
                f'role "{role}" is the bootstrap superuser here: its attributes do not change',
                sqlstate="0A000",
            )
        return _with_role(s, role, {**roles(s)[role], **attributes}), None

    env.catalog.change(change)
    return Result(tag)


def drop_role(env: Any, stmt: Statement) -> Result:
    """``DROP ROLE [IF EXISTS] name, …``: 2BP01 while it owns objects or holds privileges."""
    from changeflow.adapter.owned import dependents

    g = stmt.args
    state = env.catalog.load()
    notices, doomed = [], []
    for role in _role_names(g["names"]):
        if not exists(state, role):
            if g.get("ie"):
                notices.append(("00000", f'role "{role}" does not exist, skipping', ""))
                continue
            raise PlanError(f'role "{role}" does not exist', sqlstate="42704")
        if role in PREDEFINED:
            message = f"cannot drop role {role} because it is required by the database system"
            raise PlanError(message, sqlstate="2BP01")
        if role == current_role():
            raise PlanError("current user cannot be dropped", sqlstate="55006")
        if role == session_user() or role not in roles(state):
            raise PlanError("session user cannot be dropped", sqlstate="55006")
        _may_alter(state, role)
        found = dependents(state, role)
        if found:
            raise PlanError(
                f'role "{role}" cannot be dropped because some objects depend on it',
                sqlstate="2BP01",
                detail="\n".join(found),
            )
        doomed.append(role)

    def change(s: CatalogState) -> tuple[CatalogState, None]:
        access = dict(s.access)
        access["roles"] = {n: r for n, r in roles(s).items() if n not in doomed}
        access["members"] = [m for m in members(s) if m[0] not in doomed and m[1] not in doomed]
        return replace(s, access=access), None

    env.catalog.change(change)
    return Result(f"DROP {stmt.text.split()[1].upper()}", notices=notices)


def _options(text: str) -> tuple[dict[str, Any], list[tuple[str, list[str]]]]:
    """A role's options: its attributes, and the role lists (IN ROLE, ROLE, ADMIN, USER)."""
    attributes: dict[str, Any] = {}
    lists: list[tuple[str, list[str]]] = []
    pos, text = 0, text.strip().rstrip(";")
    while pos < len(text):
        m = _OPTION.match(text, pos)
        if m is None or m.end() == pos:
            raise PlanError(f"syntax error at or near {text[pos:].split()[0]!r}", sqlstate="42601")
        pos = m.end()
        if m["flag"]:
            attributes[m["flag"].lower()] = not m["no"]
        elif m["limit"]:
            attributes["connlimit"] = int(m["limit"])
        elif m["password"]:
            attributes["password"] = _secret(m["password"])
        elif m["until"] is not None:
            attributes["valid_until"] = m["until"].replace("''", "'")
            _expiry(attributes["valid_until"])  # (22007 for a time that is none)
        elif m["list"]:
            lists.append((" ".join(m["list"].upper().split()), _role_names(m["names"])))
    return attributes, lists


def _secret(text: str) -> str | None:
    """What a role keeps of ``PASSWORD 'text'``: its SCRAM secret (a secret or an md5 hash
    given as such is kept as it is, as pg_dumpall writes them), None for NULL."""
    if text.upper() == "NULL":
        return None
    given = text[1:-1].replace("''", "'")
    if ScramSecret.parse(given) is not None or re.fullmatch(r"md5[0-9a-f]{32}", given):
        return given
    return ScramSecret.of(given).text()


def role_secret(state: CatalogState, user: str) -> ScramSecret | None:
    """The SCRAM secret of the created role ``user``'s password, None without one or once
    its VALID UNTIL has passed."""
    found = roles(state).get(user) or {}
    until = found.get("valid_until")
    if until is not None and _expiry(until) <= datetime.now(UTC):
        return None
    return ScramSecret.parse(found.get("password") or "")


def _expiry(text: str) -> datetime:
    """VALID UNTIL's time ('infinity': never)."""
    from changeflow.compute.scalars import from_text
    from changeflow.compute.types import TIMESTAMPTZ

    if text.strip().lower() == "infinity":
        return datetime.max.replace(tzinfo=UTC)
    return from_text(text, TIMESTAMPTZ)


def role_settings(state: CatalogState, user: str) -> list[tuple[str, str]]:
    """The settings ``ALTER ROLE user SET …`` gave the role, as a session of it starts with
    them (stored values)."""
    from changeflow.adapter.settings import checked, parameters

    found = (roles(state).get(user) or {}).get("config") or []
    return [(k, checked(k, v) if k in parameters() else v) for k, v in found]


def file_roles(state: CatalogState, user: str) -> frozenset[str] | None:
    """What the created role ``user`` may do with the server's files (superuser, or the
    predefined roles pg_read_server_files and pg_write_server_files it is a member of), None
    if ``user`` is no created role."""
    if user not in roles(state):
        return None
    held = memberships(state, user)
    files = held & {"pg_read_server_files", "pg_write_server_files"}
    return frozenset(files | ({"superuser"} if is_superuser(state, user) else set()))


def _reserved(role: str) -> None:
    if role in ("public", "none") or role.startswith("pg_"):
        raise PlanError(f'role name "{role}" is reserved', sqlstate="42939")


def _may_create_roles(state: CatalogState) -> None:
    me = current_role()
    if not is_superuser(state, me) and not roles(state)[me].get("createrole"):
        raise PlanError("permission denied to create role", sqlstate="42501")


def _may_alter(state: CatalogState, role: str, attributes: dict | None = None) -> None:
    """42501 unless the current role may change ``role``: a superuser may; a role with
    CREATEROLE may change one that is no superuser; a role may change its own password."""
    me = current_role()
    if is_superuser(state, me):
        return
    if roles(state)[me].get("createrole") and not is_superuser(state, role):
        if attributes and attributes.get("superuser"):
            raise PlanError("must be superuser to alter superuser roles", sqlstate="42501")
        return
    if role == me and attributes is not None and set(attributes) <= {"password"}:
        return
    raise PlanError(f'permission denied to alter role "{role}"', sqlstate="42501")


def _with_role(state: CatalogState, role: str, attributes: dict[str, Any]) -> CatalogState:
    access = dict(state.access)
    access["roles"] = {**roles(state), role: attributes}
    return replace(state, access=access)


def _configure(env: Any, role: str, m: re.Match, tag: str) -> Result:
    """``ALTER ROLE … SET param TO value`` and ``RESET param`` (rolconfig)."""
    from changeflow.adapter.settings import checked, parameters, plain_value

    key = (m["var"] or m["cur"] or m["reset"] or "").lower()
    if key != "all" and key not in parameters() and "." not in key:
        raise PlanError(f'unrecognized configuration parameter "{key}"', sqlstate="42704")
    value = None
    if m["var"]:
        value = plain_value(m["value"].strip().rstrip(";"))
        if key in parameters():
            checked(key, value)  # refused as SET would refuse it; kept as written

    def change(s: CatalogState) -> tuple[CatalogState, None]:
        if role not in roles(s):
            raise PlanError(f'role "{role}" is the bootstrap superuser here', sqlstate="0A000")
        kept = [c for c in roles(s)[role].get("config") or [] if key not in ("all", c[0])]
        if value is not None:
            kept.append([key, value])
        return _with_role(s, role, {**roles(s)[role], "config": kept}), None

    env.catalog.change(change)
    return Result(tag)


def _rename(env: Any, role: str, new: str) -> None:
    from changeflow.adapter.owned import renamed_role

    state = env.catalog.load()
    if role == session_user():
        raise PlanError("session user cannot be renamed", sqlstate="0A000")
    if role == current_role():
        raise PlanError("current user cannot be renamed", sqlstate="0A000")
    _reserved(new)
    _may_alter(state, role)

    def change(s: CatalogState) -> tuple[CatalogState, None]:
        if exists(s, new):
            raise PlanError(f'role "{new}" already exists', sqlstate="42710")
        access = dict(s.access)
        access["roles"] = {(new if n == role else n): r for n, r in roles(s).items()}
        access["members"] = [[new if x == role else x for x in m] for m in members(s)]
        return renamed_role(replace(s, access=access), role, new), None

    env.catalog.change(change)


# -- membership ----------------------------------------------------------------------------------


def grant_roles(env: Any, granted: list[str], to: list[str], admin: bool) -> Result:
    """``GRANT role, … TO member, … [WITH ADMIN OPTION]``."""
    notices: list[tuple[str, str, str]] = []

    def change(state: CatalogState) -> tuple[CatalogState, None]:
        notices.clear()
        for role in granted:
            role = resolve(state, role)
            _may_grant(state, role)
            for member in to:
                member = resolve(state, member)
                if member in memberships(state, role, inheriting=False):  # a cycle
                    message = f'role "{role}" is a member of role "{member}"'
                    raise PlanError(message, sqlstate="0LP01")
                edge = next((m for m in members(state) if m[:2] == [role, member]), None)
                if edge is not None and (not admin or edge[2]):
                    message = f'role "{member}" is already a member of role "{role}"'
                    notices.append(("00000", message, ""))
                    continue
                state = _with_member(state, role, member, admin, current_role())
        return state, None

    env.catalog.change(change)
    return Result("GRANT ROLE", notices=list(notices))


def revoke_roles(env: Any, granted: list[str], members_of: list[str], admin: bool) -> Result:
    """``REVOKE [ADMIN OPTION FOR] role, … FROM member, …``."""
    notices: list[tuple[str, str, str]] = []

    def change(state: CatalogState) -> tuple[CatalogState, None]:
        notices.clear()
        kept = list(members(state))
        for role in granted:
            role = resolve(state, role)
            _may_grant(state, role)
            for member in members_of:
                member = resolve(state, member)
                found = [m for m in kept if m[0] == role and m[1] == member]
                if not found:
                    message = f'role "{member}" is not a member of role "{role}"'
                    notices.append(("01000", message, ""))
                    continue
                kept = [m for m in kept if m not in found]
                if admin:
                    kept += [[role, member, False, found[0][3]]]
        access = {**state.access, "members": kept}
        return replace(state, access=access), None

    env.catalog.change(change)
    return Result("REVOKE ROLE", notices=list(notices))


def _may_grant(state: CatalogState, role: str) -> None:
    me = current_role()
    if is_superuser(state, me) or roles(state).get(me, {}).get("createrole"):
        return
    if any(m[0] == role and m[1] == me and m[2] for m in members(state)):
        return
    raise PlanError(f'must have admin option on role "{role}"', sqlstate="42501")


def _with_member(
    state: CatalogState, role: str, member: str, admin: bool, grantor: str
) -> CatalogState:
    kept = [m for m in members(state) if not (m[0] == role and m[1] == member)]
    access = {**state.access, "members": [*kept, [role, member, admin, grantor]]}
    return replace(state, access=access)


# -- SET ROLE, SET SESSION AUTHORIZATION ---------------------------------------------------------


def settable(state: CatalogState, key: str, value: str | None) -> str | None:
    """The value ``SET ROLE`` (``key`` ``role``) or ``SET SESSION AUTHORIZATION`` keeps, once
    the current session may take it: a member of the role (or a superuser) may set it; only a
    superuser session user may change the session's authorization."""
    if value is None or value.strip().lower() in ("none", "default"):
        return None
    role = name(value.strip().strip("'"))
    if not exists(state, role):
        raise PlanError(f'role "{role}" does not exist', sqlstate="22023")
    if key == "session_authorization":
        connected = (SESSION_NAMES.get() or SessionNames()).user
        if not is_superuser(state, connected) and role != connected:
            message = "permission denied to set session authorization"
            raise PlanError(message, sqlstate="42501")
        return role
    me = session_user()
    if not is_superuser(state, me) and role not in memberships(state, me, inheriting=False):
        raise PlanError(f'permission denied to set role "{role}"', sqlstate="42501")
    return role


def set_role(session: Any, args: dict[str, Any]) -> Result:
    """``SET [LOCAL] ROLE name | NONE``, ``SET SESSION AUTHORIZATION name | DEFAULT`` (which
    also sets the role back), ``RESET ROLE``, ``RESET SESSION AUTHORIZATION``."""
    from changeflow.adapter.settings import set_parameter

    word = " ".join((args.get("var") or args.get("reset") or "").upper().split())
    key = "role" if word == "ROLE" else "session_authorization"
    value = None if args.get("reset") else args["value"].strip().rstrip(";").strip()
    role = settable(session.env.catalog.load(), key, value)
    local = bool(args.get("local"))
    if key == "session_authorization":
        set_parameter(session, "role", None, local)
    done = set_parameter(session, key, role, local)
    return replace(done, status="RESET") if args.get("reset") else done
