"""What roles own and hold: ``REASSIGN OWNED BY`` and ``DROP OWNED BY``, what keeps a role
from being dropped (:func:`dependents`), a role's rename in every owner and access list, and
ROLLBACK of a transaction's roles, owners and privileges (:func:`access_restored`)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from changeflow.adapter.catalog import CatalogState, split_name
from changeflow.adapter.default_privileges import role_dependents, without_role
from changeflow.adapter.privilege_checks import checking, database_name
from changeflow.adapter.privileges import NOUNS, item_with, owns, with_acl
from changeflow.adapter.result import Result
from changeflow.adapter.roles import bootstrap, current_role, resolve
from changeflow.adapter.sql.names import NAME
from changeflow.adapter.sql.statements import Statement
from changeflow.errors import PlanError


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
    out += role_dependents(state, role)
    if any(role in (g, by) for g, _, by in (state.access.get("database") or {}).get("acl") or []):
        out.append(f"privileges for database {database_name()}")
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
    """``REASSIGN OWNED BY role, … TO role`` and ``DROP OWNED BY role, … [CASCADE]``: what the
    roles own goes to the other role, or is dropped and their privileges taken away."""
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
                k: item_with(i, owner=owner) if i.options.get("owner") in olds else i
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
    _drop_objects(env, state, olds, (g.get("mode") or "").upper() == "CASCADE")

    def strip(s: CatalogState) -> tuple[CatalogState, None]:
        for key, item in list(s.items.items()):
            entries = item.options.get("acl")
            if entries is not None:
                kept = [e for e in entries if e[0] not in olds and e[2] not in olds]
                s = replace(s, items={**s.items, key: item_with(item, acl=kept)})
        for schema, entry in (s.access.get("schemas") or {}).items():
            if entry.get("acl") is not None:
                kept = [e for e in entry["acl"] if e[0] not in olds and e[2] not in olds]
                s = with_acl(s, "schema", schema, kept)
        for role in olds:  # the default privileges they set and are named in
            s = replace(s, access={**s.access, "defaults": without_role(s, role)})
        return s, None

    env.catalog.change(strip)
    return Result("DROP OWNED")


_WORDS = {"materialized view": "MATERIALIZED VIEW", "function": "FUNCTION"}


def _drop_objects(env: Any, state: CatalogState, olds: list[str], cascade: bool) -> None:
    """DROP OWNED's drops of what the roles own, dependents first, each as its DROP drops it
    (2BP01 while another's object depends on one, unless ``cascade``); not in a transaction
    block here (25001), where its drops could not be put back with its other changes."""
    from changeflow.adapter.domains import Domain
    from changeflow.adapter.sequence_holds import SESSION
    from changeflow.adapter.session import DDL
    from changeflow.adapter.sql.statements import parse
    from changeflow.compute.functions.chars import quote_ident

    mine = {i.id for i in state.items.values() if i.options.get("owner") in olds}
    if not mine:
        return
    session = SESSION.get()
    if session is not None and session.in_transaction:
        message = "DROP OWNED BY a role that owns objects cannot run inside a transaction block"
        raise PlanError(message, sqlstate="25001")
    order = [d.id for i in sorted(mine) for d in state.closure(i) if d.id in mine]
    for item_id in dict.fromkeys(order):
        item = env.catalog.load().items.get(item_id)
        if item is None:
            continue  # (gone with one dropped before it)
        word = _WORDS.get(item.kind, item.kind.upper())
        word = "DOMAIN" if item.kind == "type" and Domain.of(item) else word
        named = ".".join(quote_ident(p) for p in item.name.split("."))
        stmt = parse(f"DROP {word} {named}{' CASCADE' if cascade else ''}")
        DDL[stmt.kind](env, stmt)


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
