"""Enum types (``CREATE TYPE … AS ENUM``) in the system catalogs, as PostgreSQL 15 shows them:
their ``pg_type`` and ``pg_enum`` rows, their OIDs in ``pg_attribute`` (a column of one is
4 bytes wide, passed by value, as PostgreSQL stores an enum's label by its OID) and their names
in ``format_type``, ``regtype``, ``to_regtype`` and ``pg_type_is_visible`` (the name alone
where the search path finds the type, else qualified by its schema); domains' OIDs and names
too (their rows: :mod:`~changeflow.adapter.system_domains`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from changeflow.adapter.catalog import CatalogState, split_name
from changeflow.adapter.domains import Domain
from changeflow.adapter.sql.statements import name as catalog_name
from changeflow.adapter.system_indexes import relation_oid
from changeflow.adapter.system_tables import FORMAT, OWNER, namespace_oid, type_oid
from changeflow.adapter.system_types import array_json
from changeflow.compute.functions.chars import quote_ident

ENUM_LENGTH = 4  # typlen: PostgreSQL stores an enum value as the OID of its label


@dataclass(frozen=True)
class UserType:
    """One enum or domain of the catalog: its OID, catalog name (``s.mood``), schema, name
    there, an enum's labels in their order (None: a domain), whether the search path finds it
    by its name alone, and its typlen."""

    oid: int
    catalog_name: str
    schema: str
    typname: str
    labels: tuple[str, ...] | None
    visible: bool
    length: int = ENUM_LENGTH

    @property
    def shown(self) -> str:
        """Its name as ``format_type`` and ``regtype`` show it."""
        bare = quote_ident(self.typname)
        return bare if self.visible else f"{quote_ident(self.schema)}.{bare}"


def user_types(state: CatalogState) -> dict[str, UserType]:
    """The catalog's enums and domains by catalog name (as a column of one names its type);
    one is visible where the search path finds it and no built-in type has its name."""
    from changeflow.adapter.system_domains import base_of

    out = {}
    for item in state.items.values():
        domain = Domain.of(item)
        if item.kind == "type" and ("labels" in item.options or domain is not None):
            schema, typname = split_name(item.name)
            labels = None if domain is not None else tuple(item.options["labels"])
            visible = state.find(typname) is item and type_oid(typname) is None
            length = ENUM_LENGTH if domain is None else base_of(domain)[1]
            out[item.name] = UserType(
                relation_oid(item), item.name, schema, typname, labels, visible, length
            )
    return out


def column_types(state: CatalogState) -> dict[str, tuple[int, int, str]]:
    """Each enum's and domain's (OID, typlen, pg_type name) by catalog name, as
    :func:`changeflow.adapter.system_indexes.sql_type` gives a column type's."""
    return {n: (e.oid, e.length, e.typname) for n, e in user_types(state).items()}


def enum_oid(type_oid: int, position: int) -> int:
    """The pg_enum OID of an enum's label at ``position`` (0-based): the type's items are
    numbered apart from every relation's (a relation's ``oid * 1000 + k`` are its own)."""
    return type_oid * 1000 + 1 + position


def enum_rows(state: CatalogState) -> dict[str, list[tuple[Any, ...]]]:
    """The pg_type row of each enum (typtype ``e``, category ``E``, no array type) and the
    pg_enum rows of its labels (``enumsortorder`` 1, 2, … in their order)."""
    types, labels = [], []
    for e in user_types(state).values():
        if e.labels is None:
            continue
        namespace = namespace_oid(state, e.schema)
        types.append(
            (e.oid, e.typname, namespace, OWNER, ENUM_LENGTH, True, "e", "E", False, True, ",")
            + (0, 0, 0, "enum_in", "enum_out", "enum_recv", "enum_send", None, None, None)
            + ("i", "p", False, 0, -1, 0, 0, None, None, None)
        )
        for k, label in enumerate(e.labels):
            labels.append((enum_oid(e.oid, k), e.oid, float(k + 1), label))
    return {"pg_type": types, "pg_enum": labels}


def find_user_type(state: CatalogState, value: int | str) -> UserType | None:
    """The enum or domain ``value`` (an OID, a name the search path resolves, or a catalog
    name) denotes, else None."""
    types = user_types(state)
    if isinstance(value, int):
        return next((e for e in types.values() if e.oid == value), None)
    if "." not in value and type_oid(value) is not None:
        return None  # pg_catalog's type of the name comes first, as on PostgreSQL's path
    try:
        item = state.find(catalog_name(value.strip()))
    except IndexError:  # no name at all
        item = None
    if item is None:  # a type's catalog name as it is (pg_typeof's of "my type")
        item = state.by_name(value)
    return types.get(item.name) if item is not None else None


def type_functions(state: CatalogState) -> dict[str, Callable[..., Any]]:
    """The catalog functions that name types, the enums with the others, and
    ``array_to_string`` of an array a subquery collected."""
    by_oid = {e.oid: e for e in user_types(state).values()}

    def formatted(oid: int | None, typmod: int | None = None) -> str | None:
        return by_oid[oid].shown if oid in by_oid else format_type(oid, typmod)

    def regtype(value: Any) -> Any:
        if isinstance(value, int):
            shown = by_oid[value].shown if value in by_oid else FORMAT.get(value, str(value))
            return shown if value else "-"
        found = find_user_type(state, str(value))
        return found.oid if found is not None else type_oid(value)

    def to_regtype(value: Any) -> int | None:
        found = find_user_type(state, str(value)) if value is not None else None
        return found.oid if found is not None else type_oid(value)

    return {
        "format_type": formatted,
        "regtype": regtype,
        "to_regtype": to_regtype,
        "pg_type_is_visible": lambda oid: int(by_oid[oid].visible) if oid in by_oid else 1,
        "array_to_string": array_to_string,
    }


def format_type(oid: int | None, typmod: int | None = None) -> str | None:
    """``format_type`` of a built-in type (text's name for an OID of none)."""
    if oid is None:
        return None
    name = FORMAT.get(oid, "text")
    if typmod is not None and typmod >= 4:
        if oid == 1700:
            return f"numeric({(typmod - 4) >> 16},{(typmod - 4) & 0xFFFF})"
        if oid == 1043:
            return f"character varying({typmod - 4})"
        if oid == 1042:
            return f"character({typmod - 4})"
    return "bpchar" if oid == 1042 else name


def array_to_string(value: Any, sep: Any = ",", null: Any = None) -> Any:
    """``array_to_string`` of an array held as JSON or as its text (its non-NULL elements
    joined by ``sep``, NULL ones as ``null`` if given), of anything else its value."""
    text = value if isinstance(value, str) else None
    if text is None or not text.startswith(("[", "{")) or sep is None:
        return value
    try:
        items = json.loads(array_json(text))  # (an aclitem[] is held as its text)
    except ValueError:
        return value
    shown = [str(v) if v is not None else null for v in items]
    return str(sep).join(v for v in shown if v is not None)
