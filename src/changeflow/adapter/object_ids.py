"""Casts to PostgreSQL's object identifier types, and the objects their values denote.

A query that reads no table and casts to one of them runs as a catalog query
(:mod:`changeflow.adapter.system_regs` types its reg* columns, with :func:`resolve`). In a
query over tables, ``x::oid`` is a bigint (the planner's type for oid), and a cast of a
constant to ``regclass``, ``regtype`` or ``regnamespace`` (``'pg_class'::regclass``,
``0::regtype``) is resolved against the catalog when the query is planned: to the object's
name where it is shown (``-`` for 0) and to its oid where it is cast on to oid or an integer
type, or compared.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter.catalog import CatalogState, split_name
from changeflow.adapter.sql.colnames import type_name
from changeflow.adapter.sql.statements import name as catalog_name
from changeflow.adapter.system_indexes import indexes, relation_oid
from changeflow.adapter.system_tables import (
    FORMAT,
    INFO_SCHEMA,
    KINDS,
    OWNER,
    PG_CATALOG,
    SYSTEM_OIDS,
    namespace_oid,
    type_oid,
)
from changeflow.errors import PlanError

T = exp.DataType.Type
REG_TYPES = ("regclass", "regtype", "regnamespace")
_NUMERIC = (T.UINT, T.INT, T.BIGINT, T.SMALLINT, T.DECIMAL)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.In)


def _class(state: CatalogState, value: int | str) -> tuple[int, str]:
    items = [i for i in state.items.values() if i.kind in KINDS]
    keys = {i.oid: i.qualified for i in indexes(state)}  # a constraint's index (t_pkey) too
    if isinstance(value, int):
        named = keys | {relation_oid(i): i.name for i in items}
        named |= {o: n for n, o in SYSTEM_OIDS.items()}
        return value, named.get(value, str(value) if value else "-")
    key = catalog_name(value)
    item = state.find(key)
    if item is not None and item.kind in KINDS:
        return relation_oid(item), item.name
    found = next((o for o, n in keys.items() if n == key), None)
    if found is not None:
        return found, key
    bare = split_name(key)[1]
    if bare in SYSTEM_OIDS:
        return SYSTEM_OIDS[bare], bare
    raise PlanError(f'relation "{value}" does not exist', sqlstate="42P01")


def _type(value: int | str) -> tuple[int, str]:
    if isinstance(value, int):
        return value, FORMAT.get(value, str(value) if value else "-")
    oid = type_oid(value)
    if oid is None:
        try:
            built = exp.DataType.build(value, dialect="postgres")
        except (ValueError, sqlglot.errors.SqlglotError):
            built = None
        if built is not None:
            internal = type_name(built)
            oid = type_oid(f"_{internal}" if built.this == T.ARRAY else internal)
    if oid is None:
        raise PlanError(f'type "{value}" does not exist', sqlstate="42704")
    return oid, FORMAT[oid]


def _namespace(state: CatalogState, value: int | str) -> tuple[int, str]:
    named = {PG_CATALOG: "pg_catalog", INFO_SCHEMA: "information_schema"}
    named |= {namespace_oid(state, n): n for n in ["public", *state.schemas]}
    if isinstance(value, int):
        return value, named.get(value, str(value) if value else "-")
    key = catalog_name(value)
    found = next((o for o, n in named.items() if n == key), None)
    if found is None:
        raise PlanError(f'schema "{value}" does not exist', sqlstate="3F000")
    return found, key


def resolve(state: CatalogState, user: str, kind: str, value: int | str) -> tuple[int, str]:
    """The ``(oid, name)`` of the object that ``value`` (an OID, or a name) of the reg* type
    ``kind`` denotes (``-`` names 0); a name that denotes nothing is an error, as in PostgreSQL."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if kind == "regclass":
        return _class(state, value)
    if kind == "regtype":
        return _type(value)
    if kind == "regnamespace":
        return _namespace(state, value)
    if isinstance(value, int):
        return value, user if kind == "regrole" and value == OWNER else str(value) if value else "-"
    if kind == "regrole":
        if catalog_name(value) != user:
            raise PlanError(f'role "{value}" does not exist', sqlstate="42704")
        return OWNER, user
    raise PlanError(f"a {kind} is supported given by its OID only", sqlstate="0A000")


def _constant(node: exp.Expression, kind: str) -> int | str:
    if isinstance(node, exp.Literal):
        return str(node.this) if node.is_string else int(str(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return -int(str(node.this.this))
    raise PlanError(f"a cast to {kind} is supported of a constant only", sqlstate="0A000")


def _wants_number(cast: exp.Cast) -> bool:
    parent = cast.parent
    if isinstance(parent, exp.Paren):
        parent = parent.parent
    if isinstance(parent, exp.Cast):
        return isinstance(parent.to, exp.DataType) and parent.to.this in _NUMERIC
    return isinstance(parent, _COMPARISONS)


def fold_object_ids(tree: exp.Expression, state: CatalogState | None) -> exp.Expression:
    """``tree`` with its casts of constants to reg* types resolved (changed in place)."""
    casts = [c for c in tree.find_all(exp.Cast) if isinstance(c.to, exp.ObjectIdentifier)]
    for cast in sorted(casts, key=lambda c: -c.depth):
        kind = str(cast.to.this).lower()
        if kind not in REG_TYPES:
            raise PlanError(f"the type {kind} is not supported", sqlstate="0A000")
        if isinstance(cast.this, exp.Null):
            continue
        value = _constant(cast.this, kind)
        if state is None:
            raise PlanError(f"a cast to {kind} needs the catalog", sqlstate="0A000")
        resolve: Any = {"regclass": lambda v: _class(state, v), "regtype": _type}.get(
            kind, lambda v: _namespace(state, v)
        )
        oid, shown = resolve(value)
        if _wants_number(cast):
            cast.replace(exp.Literal.number(oid))
        else:
            cast.set("this", exp.Literal.string(shown))
    return tree
