"""Casts to PostgreSQL's object identifier types, and the objects their values denote.

A query that reads no table and casts to one of them runs as a catalog query
(:mod:`changeflow.adapter.system_regs` types its reg* columns, with :func:`resolve`). In a
query over tables, ``x::oid`` is computed as a bigint (the planner's type for oid), and a cast
of a constant to ``regclass``, ``regtype``, ``regnamespace`` or ``regproc``
(``'pg_class'::regclass``, ``0::regtype``) is resolved against the catalog when the query is
planned: to the object's name where it is shown (``-`` for 0) and to its oid where it is cast on
to oid or an integer type, or compared. A select list's cast to oid or a reg* type (of a column
too, ``o::regtype``, and ``pg_typeof(x)``) gives its column that type on the way out
(:func:`shown_ids`): a reg* value is then an :class:`ObjectName`, shown as the name and sent
in binary as the OID. A constant compared with ``pg_typeof(x)`` is read as a regtype
(``'int4'::regtype`` is ``integer``; a quoted constant beside ``=`` or ``<`` is an
oid there, as PostgreSQL reads ``regtype = unknown``, and in an IN list a type's name).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter.catalog import CatalogState, split_name
from changeflow.adapter.oid_flow import oid_columns
from changeflow.adapter.proc_oids import OVERLOADED, PG_OIDS, SIGNATURES, proc_oid
from changeflow.adapter.sql.colnames import type_name
from changeflow.adapter.sql.scope import table_name
from changeflow.adapter.sql.statements import name as catalog_name
from changeflow.adapter.system_enums import find_user_type, user_types
from changeflow.adapter.system_indexes import indexes, relation_oid
from changeflow.adapter.system_regs import REG_TYPES as REG_KINDS
from changeflow.adapter.system_regs import ObjectName
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
from changeflow.adapter.system_types import OID_TYPE
from changeflow.compute.types import Schema
from changeflow.errors import PlanError

MAX_OID = 2**32 - 1

T = exp.DataType.Type
REG_TYPES = ("regclass", "regtype", "regnamespace", "regproc", "regprocedure")
_NUMERIC = (T.UINT, T.INT, T.BIGINT, T.SMALLINT, T.DECIMAL)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.In)


def _class_names(state: CatalogState) -> dict[int, str]:
    """Each relation's OID to its name as a regclass shows it."""
    items = [i for i in state.items.values() if i.kind in KINDS]
    named = {i.oid: i.qualified for i in indexes(state)}  # a constraint's index (t_pkey) too
    named |= {relation_oid(i): i.name for i in items}
    return named | {o: n for n, o in SYSTEM_OIDS.items()}


def _class(state: CatalogState, value: int | str) -> tuple[int, str]:
    keys = {i.oid: i.qualified for i in indexes(state)}
    if isinstance(value, int):
        return value, _class_names(state).get(value, str(value) if value else "-")
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


def _type(value: int | str, state: CatalogState | None = None) -> tuple[int, str]:
    """A regtype: a type's OID and name, an enum's of ``state`` too."""
    found = find_user_type(state, value) if state is not None else None
    if found is not None:
        return found.oid, found.shown
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


def function_oids() -> dict[str, int]:
    """Each function of the function table that ``pg_proc`` lists, by name, to its OID there
    (PostgreSQL's own where it has the function, see :mod:`changeflow.adapter.proc_oids`)."""
    from changeflow.compute.functions import FUNCTIONS, NOT_IN_PG_PROC

    return {name: proc_oid(name) for name in sorted(FUNCTIONS) if name not in NOT_IN_PG_PROC}


def _proc(value: int | str, arguments: bool = False) -> tuple[int, str]:
    """A ``regproc`` (a function's name), or with ``arguments`` a ``regprocedure``
    (``name(type, …)``, its argument types named as PostgreSQL names them)."""
    oids = function_oids()
    if isinstance(value, int):
        named = {o: n for n, o in oids.items()}
        for sig, oid in SIGNATURES.items():  # PostgreSQL's, each overload's too
            if sig.split("(", 1)[0] in oids:
                named[oid] = sig if arguments else sig.split("(", 1)[0]
        return value, named.get(value, str(value) if value else "-")
    text, args = value.strip(), None
    if arguments:
        head, paren, rest = text.partition("(")
        if not paren or not rest.rstrip().endswith(")"):
            raise PlanError(f'invalid name syntax: "{value}"', sqlstate="42601")
        text, inner = head.strip(), rest.rstrip()[:-1].strip()
        args = [_type(a.strip())[1] for a in inner.split(",")] if inner else []
    key = catalog_name(text)
    schema, bare = split_name(key)
    if schema not in ("public", "pg_catalog") or bare not in oids:
        raise PlanError(f'function "{text}" does not exist', sqlstate="42883")
    if args is None and bare in OVERLOADED:
        raise PlanError(f'more than one function named "{text}"', sqlstate="42725")
    if args is None:
        return oids[bare], bare
    signature = f"{bare}({','.join(args)})"
    if bare in PG_OIDS:  # PostgreSQL's function of these argument types, if it has one
        if signature not in SIGNATURES:
            raise PlanError(f'function "{value.strip()}" does not exist', sqlstate="42883")
        return SIGNATURES[signature], signature
    return oids[bare], signature


def _namespace_names(state: CatalogState) -> dict[int, str]:
    named = {PG_CATALOG: "pg_catalog", INFO_SCHEMA: "information_schema"}
    return named | {namespace_oid(state, n): n for n in ["public", *state.schemas]}


def _namespace(state: CatalogState, value: int | str) -> tuple[int, str]:
    named = _namespace_names(state)
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
        return _type(value, state)
    if kind == "regnamespace":
        return _namespace(state, value)
    if kind in ("regproc", "regprocedure"):
        return _proc(value, kind == "regprocedure")
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


def _is_typeof(node: exp.Expression) -> bool:
    """A call of ``pg_typeof``."""
    return isinstance(node, exp.Anonymous) and node.name.lower() == "pg_typeof"


def _shown_kind(node: exp.Expression) -> str | None:
    """The object identifier type (``oid``, ``regclass``…) ``node`` casts to (``regtype``
    for ``pg_typeof``, planned as its text), else None."""
    if _is_typeof(node):
        return "regtype"
    if not isinstance(node, exp.Cast):
        return None
    if isinstance(node.to, exp.ObjectIdentifier):
        return str(node.to.this).lower()
    return "oid" if node.to.this == T.UINT else None


def shown_ids(tree: exp.Expression) -> tuple[tuple[int, str], ...]:
    """The select list's casts to oid or a reg* type, as (position, type), up to its first
    ``*`` (whose width is not known yet)."""
    if not isinstance(tree, exp.Select):
        return ()
    out = []
    for i, e in enumerate(tree.expressions):
        if isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            break
        kind = _shown_kind(e.unalias())
        if kind is not None:
            out.append((i, kind))
    return tuple(out)


def held_as_oids(tree: exp.Expression) -> dict[int, str]:
    """A view's select list's casts of constants to reg* types (``'t'::regclass``), each
    changed (in place) into a cast of it on to oid, so the view holds the object's OID (a
    bigint) and names it when read, as PostgreSQL's view does (it follows a rename); their
    positions and types."""
    out: dict[int, str] = {}
    for i, kind in shown_ids(tree):
        item = tree.expressions[i]
        cast = item.unalias()
        if kind not in REG_TYPES or not isinstance(cast, exp.Cast) or not _is_constant(cast.this):
            continue
        held = exp.Cast(this=cast.copy(), to=exp.DataType(this=T.UINT))
        if cast is item:  # the column keeps the name PostgreSQL gives it (``regclass``)
            tree.expressions[i].replace(exp.alias_(held, kind))
        else:
            cast.replace(held)
        out[i] = kind
    return out


def regclass_names(tree: exp.Expression) -> frozenset[str]:
    """The relations a query's casts of constants to regclass name (a view depends on
    them, as PostgreSQL's does: they cannot be dropped under it)."""
    casts = [c for c in tree.find_all(exp.Cast) if isinstance(c.to, exp.ObjectIdentifier)]
    return frozenset(
        catalog_name(str(c.this.this))
        for c in casts
        if str(c.to.this).lower() == "regclass" and isinstance(c.this, exp.Literal)
        and c.this.is_string and not str(c.this.this).strip().isdigit()
    )  # fmt: skip


def read_ids(tree: exp.Expression, state: CatalogState | None) -> tuple[tuple[int, str], ...]:
    """The output positions of a query's oid columns, as they flow from a view's oid columns
    and casts to oid (``oid_flow``; it refuses what PostgreSQL has no operator of an oid
    for); where sqlglot cannot type the query, of its select list's columns read as they are
    from a view's oid columns (a ``*`` of it at its width), where the query reads one relation
    of the catalog (no join, no CTE of its name); and of the columns read as they are from a
    view's reg* columns (held as OIDs), with their types."""
    flowing = oid_columns(tree, state)
    direct = _read_as_they_are(tree, state)
    if flowing is not None:
        return tuple(sorted({(i, "oid") for i in flowing} | {d for d in direct if d[1] != "oid"}))
    return direct


def _single_item(tree: exp.Expression, state: CatalogState | None) -> Any:
    """The one relation of the catalog a query reads (no join, no CTE of its name), or None."""
    if not isinstance(tree, exp.Select) or state is None or tree.args.get("joins"):
        return None
    source = tree.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table):
        return None
    name = table_name(source.this)
    ctes = tree.args.get("with")
    if ctes is not None and any(c.alias_or_name == name for c in ctes.expressions):
        return None
    return state.find(name)


def _read_as_they_are(
    tree: exp.Expression, state: CatalogState | None
) -> tuple[tuple[int, str], ...]:
    item = _single_item(tree, state)
    held = ("oid", *REG_TYPES)
    if item is None or not any(t in held for _, t, _ in item.columns):
        return ()
    kinds = {n: t for n, t, _ in item.columns}
    out, at = [], 0
    for e in tree.expressions:
        if isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            out += [(at + j, t) for j, (_, t, _) in enumerate(item.columns) if t in held]
            at += len(item.columns)
            continue
        inner = e.unalias()
        if isinstance(inner, exp.Column) and kinds.get(inner.name) in held:
            out.append((at, kinds[inner.name]))
        at += 1
    return tuple(out)


def reg_columns_read(tree: exp.Expression, state: CatalogState | None) -> None:
    """A query of a view's reg* columns (held as OIDs): ``pg_typeof`` of one is its type's
    name and a cast of one to text the current name of the object it holds (changed in place);
    a cast of one to anything but text, an oid or a number is refused (0A000)."""
    item = _single_item(tree, state)
    regs = {n: t for n, t, _ in item.columns if t in REG_TYPES} if item is not None else {}
    if not regs:
        return
    for column in list(tree.find_all(exp.Column)):
        kind = regs.get(column.name)
        parent = column.parent
        if kind is None or parent is None:
            continue
        if _is_typeof(parent):
            named = isinstance(parent.parent, exp.Select)  # the column keeps its name
            text = exp.Literal.string(kind)
            parent.replace(exp.alias_(text, "pg_typeof") if named else text)
        elif isinstance(parent, exp.Cast) and _is_text(parent.to):
            named = isinstance(parent.parent, exp.Select)  # the column keeps its name
            text = _named(column, kind, state, parent.to)  # type: ignore[arg-type]
            parent.replace(exp.alias_(text, column.name) if named else text)
        elif isinstance(parent, exp.Cast) and _reg_kind(parent.to) == kind:
            raise PlanError(
                f'a cast of the {kind} column "{column.name}" of a view to {kind} is not'
                " supported; select the column itself",
                sqlstate="0A000",
            )
        elif isinstance(parent, exp.Cast) and not (
            isinstance(parent.to, exp.DataType) and parent.to.this in _NUMERIC
        ):
            target = _reg_kind(parent.to) or parent.to.sql("postgres").lower()
            raise PlanError(f"cannot cast type {kind} to {target}", sqlstate="42846")


def _reg_kind(to: exp.Expression) -> str | None:
    return str(to.this).lower() if isinstance(to, exp.ObjectIdentifier) else None


def _is_text(to: exp.Expression) -> bool:
    return isinstance(to, exp.DataType) and to.this in (T.TEXT, T.VARCHAR, T.CHAR, T.NAME)


def _named(column: exp.Column, kind: str, state: CatalogState, to: exp.DataType) -> exp.Case:
    """``column::text`` of a view's reg* column (an OID): the current name of the object it
    holds, as PostgreSQL's cast gives it (so a renamed table's new name); an OID that names
    nothing as its number."""
    if kind == "regclass":
        names = _class_names(state)
    elif kind == "regtype":
        names = dict(FORMAT) | {e.oid: e.shown for e in user_types(state).values()}
    elif kind == "regnamespace":
        names = _namespace_names(state)
    else:
        names = {o: n for n, o in function_oids().items()}
    case = exp.Case(
        this=column.copy(), default=exp.Cast(this=column.copy(), to=exp.DataType.build("text"))
    )
    for oid, name in sorted(names.items()):
        case = case.when(exp.Literal.number(oid), exp.Literal.string(name))
    case = case.when(exp.Literal.number(0), exp.Literal.string("-"))
    return exp.Cast(this=case, to=to.copy())


def fold_object_ids(
    tree: exp.Expression, state: CatalogState | None, shown: tuple[tuple[int, str], ...] = ()
) -> exp.Expression:
    """``tree`` with its casts of constants to reg* types resolved (changed in place); a
    ``shown`` cast of a column is left to be resolved on the way out (it is planned as text)."""
    kept = [tree.expressions[i].unalias() for i, _ in shown] if shown else []
    _name_types(tree, state)
    casts = [c for c in tree.find_all(exp.Cast) if isinstance(c.to, exp.ObjectIdentifier)]
    for cast in sorted(casts, key=lambda c: -c.depth):
        kind = str(cast.to.this).lower()
        if kind not in REG_TYPES:
            raise PlanError(f"the type {kind} is not supported", sqlstate="0A000")
        if (
            isinstance(cast.this, exp.Null)
            or any(cast is k for k in kept)
            and not _is_constant(cast.this)
        ):
            continue
        value = _constant(cast.this, kind)
        if state is None:
            raise PlanError(f"a cast to {kind} needs the catalog", sqlstate="0A000")
        resolve: Any = {
            "regclass": lambda v: _class(state, v),
            "regtype": lambda v: _type(v, state),
            "regproc": _proc,
            "regprocedure": lambda v: _proc(v, True),
        }.get(kind, lambda v: _namespace(state, v))
        oid, shown_as = resolve(value)
        if _wants_number(cast):
            cast.replace(exp.Literal.number(oid))
        else:
            cast.set("this", exp.Literal.string(shown_as))
    return tree


def _name_types(tree: exp.Expression, state: CatalogState | None = None) -> None:
    """The constants compared with ``pg_typeof(x)`` (which is planned as text) as the names
    of the types they denote, 42704 for none: a quoted name, a type's OID, a regtype cast of
    either."""
    for compare in tree.find_all(*_COMPARISONS):
        sides = [compare.this, *compare.expressions] if isinstance(compare, exp.In) else []
        sides = sides or [compare.this, compare.expression]
        if not any(_is_typeof(side.unnest()) for side in sides):
            continue
        for side in sides:
            cast = _shown_kind(side) == "regtype"
            value = side.this if cast else side
            if isinstance(value, exp.Literal):
                name = value.this if value.is_string else int(value.this)
                if value.is_string and not cast and not isinstance(compare, exp.In):
                    name = _oid_text(name)  # regtype = unknown is oid = oid in PostgreSQL
                side.replace(exp.Literal.string(_type(name, state)[1]))


def _oid_text(text: str) -> int:
    """A quoted constant read as an oid (22P02 for other text)."""
    try:
        return int(text.strip())
    except ValueError:
        raise PlanError(f'invalid input syntax for type oid: "{text}"', sqlstate="22P02") from None


def _is_constant(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) or (
        isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)
    )


def shown_columns(columns: Schema, shown: tuple[tuple[int, str], ...]) -> Schema:
    """A query's visible columns with the types of its casts to oid and reg* types."""
    if not shown:
        return columns
    out = list(columns)
    for i, kind in shown:
        if i < len(out):
            out[i] = replace(out[i], type=OID_TYPE if kind == "oid" else REG_KINDS[kind])
    return tuple(out)


def shown_rows(
    rows: list[tuple[Any, ...]],
    shown: tuple[tuple[int, str], ...],
    state: CatalogState,
    user: str,
) -> list[tuple[Any, ...]]:
    """A query's rows with each reg* value as its object's :class:`ObjectName` (found once
    per distinct value; a name that denotes nothing is PostgreSQL's error), each oid checked
    to be one (22003)."""
    found: dict[tuple[str, Any], Any] = {}

    def named(kind: str, value: Any) -> Any:
        if value is None:
            return None
        if kind == "oid":
            if not 0 <= value <= MAX_OID:
                raise PlanError("OID out of range", sqlstate="22003")
            return value
        if (kind, value) not in found:
            oid, name = (0, "-") if value == "-" else resolve(state, user, kind, value)
            found[kind, value] = ObjectName(name, oid)
        return found[kind, value]

    if not shown:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for i, kind in shown:
            if i < len(values):
                values[i] = named(kind, values[i])
        out.append(tuple(values))
    return out
