"""Enum types: ``CREATE TYPE name AS ENUM ('label', …)``, ``DROP TYPE``, ``ALTER TYPE … ADD
VALUE``, as PostgreSQL's (ORMs make them: SQLAlchemy's ``Enum``, Prisma's enums); and
composite types (``CREATE TYPE name AS (field type, …)``), row types of
``json[b]_populate_record[set](NULL::name, …)`` and no more (a column or value of one is
refused, 0A000).

An enum is a catalog item of kind ``type`` whose options hold its labels in their order; its
OID is numbered as a relation's. A column of it holds the label as text; its values compare
and sort by the labels' order (:mod:`changeflow.adapter.sql.enum_order`). A type a column or
view uses cannot be dropped (2BP01), nor renamed or its labels renamed (0A000: the stored
values would have to be rewritten); a label may be added where no view keeps a plan of it."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.catalog_drops import DropRule, drop_items
from changeflow.adapter.domains import domains_of
from changeflow.adapter.result import Result
from changeflow.adapter.sql.statements import Statement, name, names
from changeflow.adapter.system_indexes import relation_oid
from changeflow.compute.types import SqlType, enum_type
from changeflow.errors import PlanError

_QUOTED = r"(?:[^']|'')*"
_LABEL = rf"'({_QUOTED})'"
_LABELS = re.compile(rf"\s*(?:{_LABEL}\s*(?:,\s*{_LABEL}\s*)*)?")
_ADD = re.compile(
    rf"ADD\s+VALUE\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?'(?P<label>{_QUOTED})'"
    rf"(?:\s+(?P<where>BEFORE|AFTER)\s+'(?P<other>{_QUOTED})')?",
    re.I,
)
_RENAME_VALUE = re.compile(rf"RENAME\s+VALUE\s+{_LABEL}\s+TO\s+{_LABEL}", re.I)
_OWNER = re.compile(r"OWNER\s+TO\s+(\S+)", re.I)


def enum_of(item: Item) -> SqlType:
    """The type of the enum ``item``."""
    return enum_type(item.name, tuple(item.options["labels"]), relation_oid(item))


def user_type(state: CatalogState, type_name: str) -> SqlType | None:
    """The enum a statement names ``type_name`` (by the search path), a domain's base type,
    None if none is; 0A000 for a composite type, which is a row type of json_populate_record
    here and no more."""
    item = state.find(type_name)
    if item is None or item.kind != "type":
        return None
    if (domain := domains_of(state).get(item.name)) is not None:
        return domain.sql_type
    if "fields" in item.options:
        raise PlanError(
            f"composite type {item.name} cannot be the type of a column or a value here: it "
            "is a row type of json[b]_populate_record[set](NULL::type, …)",
            sqlstate="0A000",
        )
    return enum_of(item)


def create_type(env: Any, stmt: Statement) -> Result:
    """``CREATE TYPE name AS ENUM (labels)``; the other kinds of type are refused."""
    g = stmt.args
    fields = re.fullmatch(r"AS\s*\((?P<fields>.*)\)\s*", g.get("rest") or "", re.I | re.S)
    if not g.get("enum") and fields is None:
        raise PlanError(
            f"CREATE TYPE {g['name']}{(' ' + g['rest'].strip()) if g['rest'] else ''} is not "
            "supported: the types made here are enums (CREATE TYPE name AS ENUM ('a', 'b')) "
            "and composite types (CREATE TYPE name AS (field type, …))",
            sqlstate="0A000",
        )
    state = env.catalog.load()
    type_name = state.creation_name(name(g["name"]))
    if state.by_name(type_name) is not None:
        raise PlanError(f'type "{split_name(type_name)[1]}" already exists', sqlstate="42710")
    if fields is not None:
        columns = _fields(fields["fields"])
        options: dict[str, Any] = {"fields": True}
    else:
        columns, options = (), {"labels": _labels(g["labels"])}

    def add(state: CatalogState) -> tuple[CatalogState, None]:
        item_id, state = state.allocate()
        item = Item(item_id, type_name, "type", stmt.text, columns, options=options)
        return state.with_item(item), None

    env.catalog.change(add)
    return Result("CREATE TYPE")


def drop_type(env: Any, stmt: Statement, keep: list[Item] | None = None) -> Result:
    """``DROP TYPE [IF EXISTS] name, … [CASCADE | RESTRICT]``: ``keep`` (a transaction's)
    takes the dropped types aside instead, for its COMMIT to release or its ROLLBACK to put
    back."""
    notices = drop_items(env, names(stmt.args["names"]), stmt.args, _TYPE_DROP, keep)
    return Result("DROP TYPE", notices=notices)


def alter_type(env: Any, stmt: Statement) -> Result:
    """``ALTER TYPE name ADD VALUE [IF NOT EXISTS] 'v' [BEFORE | AFTER 'w']``, ``RENAME
    VALUE 'a' TO 'b'`` and ``RENAME TO new`` (of a type nothing uses yet), ``OWNER TO``."""
    state = env.catalog.load()
    type_name, rest = name(stmt.args["name"]), stmt.args["rest"].strip()
    item = state.find(type_name)
    if item is None or item.kind != "type":
        raise PlanError(f'type "{type_name}" does not exist', sqlstate="42704")
    if "labels" not in item.options and _OWNER.fullmatch(rest) is None:
        message = f"ALTER TYPE of composite type {type_name} is not supported"
        raise PlanError(message, sqlstate="0A000")
    labels = list(item.options.get("labels") or ())
    notices = []
    if (m := _ADD.fullmatch(rest)) is not None:
        label = _label(m["label"])
        if label in labels:
            if not m["ine"]:
                raise PlanError(f'enum label "{label}" already exists', sqlstate="42710")
            notices.append(("42710", f'enum label "{label}" already exists, skipping', ""))
            return Result("ALTER TYPE", notices=notices)
        at = len(labels)
        if m["where"]:
            other = _label(m["other"])
            if other not in labels:
                raise PlanError(f'"{other}" is not an existing enum label', sqlstate="22023")
            at = labels.index(other) + (m["where"].upper() == "AFTER")
        _unplanned(state, item)
        labels.insert(at, label)
        _store(env, item, options={**item.options, "labels": labels})
    elif (m := _RENAME_VALUE.fullmatch(rest)) is not None:
        old, new = _label(m[1]), _label(m[2])
        if old not in labels:
            raise PlanError(f'"{old}" is not an existing enum label', sqlstate="22023")
        if new in labels:
            raise PlanError(f'enum label "{new}" already exists', sqlstate="42710")
        _unused(state, item, "have its labels renamed")
        labels[labels.index(old)] = new
        _store(env, item, options={**item.options, "labels": labels})
    elif (m := re.fullmatch(r"RENAME\s+TO\s+(\S+)", rest, re.I)) is not None:
        _unused(state, item, "be renamed")
        schema = split_name(item.name)[0]
        new_name = name(m[1] if schema == "public" else f"{schema}.{m[1]}")
        if state.by_name(new_name) is not None:
            raise PlanError(f'type "{split_name(new_name)[1]}" already exists', sqlstate="42710")
        _store(env, item, name=new_name)
    elif (owner := _OWNER.fullmatch(rest)) is not None:
        from changeflow.adapter.owners import give
        from changeflow.adapter.roles import resolve

        give(env, item, resolve(state, owner[1]))
    else:
        raise PlanError(
            f"ALTER TYPE {type_name} {rest} is not supported: ADD VALUE, RENAME VALUE, RENAME "
            "TO and OWNER TO are",
            sqlstate="0A000",
        )
    return Result("ALTER TYPE", notices=notices)


def _store(env: Any, item: Item, **changes: Any) -> None:
    env.catalog.change(lambda s: (s.with_item(replace(s.items[item.id], **changes)), None))


def _labels(text: str) -> list[str]:
    """An enum's labels: quoted strings, each at most 63 bytes, none twice."""
    if _LABELS.fullmatch(text) is None:
        raise PlanError(
            f"syntax error in the labels of CREATE TYPE … AS ENUM ({text.strip()}): they are "
            "quoted strings separated by commas",
            sqlstate="42601",
        )
    labels: list[str] = []
    for quoted in re.findall(_LABEL, text):
        label = _label(quoted)
        if label in labels:
            raise PlanError(f'enum label "{label}" is given twice', sqlstate="23505")
        labels.append(label)
    return labels


def _fields(text: str) -> tuple[tuple[str, str, bool], ...]:
    """A composite type's fields (``name type, …``) as an item's columns."""
    from changeflow.adapter.column_defs import table_columns
    from changeflow.adapter.sql.dialect import parse_sql

    defs = table_columns(parse_sql(f"CREATE TABLE x ({text})").this.expressions)
    return tuple((d.name, d.kind.name, True) for d in defs)


def _label(quoted: str) -> str:
    label = quoted.replace("''", "'")
    if len(label.encode()) > 63:
        raise PlanError(
            f'invalid enum label "{label}"',
            sqlstate="22023",
            detail="Labels must be 63 bytes or less.",
        )
    return label


def _users(state: CatalogState, item: Item, keeping: dict[str, Item] | None = None) -> list[str]:
    """What uses the type ``item``: the columns of tables and views of it (but those of the
    items in ``keeping``)."""
    return [
        f"column {column} of {other.kind} {other.name} depends on type {item.name}"
        for other in state.items.values()
        if other.kind != "type" and other.id not in (keeping or {})
        for column, kind, _ in other.columns
        if kind == item.name
    ]


_TYPE_DROP = DropRule(
    kind="type",
    noun="type",
    missing='type "{name}" does not exist',
    skipped='type "{name}" does not exist, skipping',
    missing_sqlstate="42704",
    hint="Drop or change the columns of this type first.",
    dependents_of=_users,
)


def used_types(state: CatalogState, doomed: dict[str, Item]) -> None:
    """0A000 if a type among the ``doomed`` items (a dropped schema's) is used by a column of
    an item that stays: PostgreSQL would drop that column, which is not done here."""
    for item in doomed.values():
        users = _users(state, item, keeping=doomed) if item.kind == "type" else []
        if users:
            raise PlanError(
                f"cannot drop type {item.name}: {users[0]} (CASCADE does not drop columns here)",
                sqlstate="0A000",
                hint="Drop or change the columns of this type first.",
            )


def _unused(state: CatalogState, item: Item, what: str) -> None:
    if _users(state, item):
        raise PlanError(
            f"type {item.name} cannot {what} while columns use it: their stored labels "
            "would have to be rewritten",
            sqlstate="0A000",
        )


def _unplanned(state: CatalogState, item: Item) -> None:
    """0A000 if a view keeps a plan that reads a column of the type ``item``: that plan
    orders its labels as they were."""
    tables = {o.id for o in state.items.values() if any(k == item.name for _, k, _ in o.columns)}
    for table in tables:
        for other in state.closure(table):
            if other.kind in ("view", "materialized view", "index"):
                raise PlanError(
                    f"a label cannot be added to type {item.name} while {other.kind} "
                    f"{other.name} reads a column of it: drop the view, add the label, and "
                    "create the view again",
                    sqlstate="0A000",
                )
