"""Indexes as PostgreSQL's catalogs show them: the indexes created by CREATE [UNIQUE] INDEX
and the unique indexes that back a table's PRIMARY KEY and UNIQUE constraints in PostgreSQL,
each with its pg_class, pg_attribute, pg_index and pg_indexes rows and its definition."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.system_rows import constraint_oid
from changeflow.adapter.system_tables import OWNER, RELATION_BASE, TYPES
from changeflow.adapter.typmods import text_types, typmods

BTREE = 403
# a type's default btree operator class (pg_index.indclass), as PostgreSQL 15's
OPCLASS = {16: 10003, 17: 10006, 19: 10028, 20: 3124, 21: 1979, 23: 1978, 25: 3126, 26: 1981}
OPCLASS |= {700: 10012, 701: 3123, 1042: 10004, 1043: 3126, 1082: 3122, 1114: 3128, 1184: 3127}
OPCLASS |= {1186: 10022, 1700: 3125, 2950: 10065, 3802: 10088}
DEFAULT_COLLATION = 100


def relation_oid(item: Item) -> int:
    return RELATION_BASE + int(item.id.lstrip("u") or 0)


def sql_type(name: str) -> tuple[int, int, str]:
    """A column type's (OID, typlen, pg_type name); text's for a type PostgreSQL lacks."""
    return TYPES.get(name, (25, -1, "text"))


def storage(type_oid: int, length: int) -> str:
    """pg_attribute.attstorage as PostgreSQL's: plain for fixed-length types, main for
    numeric, extended for the other variable-length ones."""
    return "p" if length > 0 else ("m" if type_oid == 1700 else "x")


def class_row(
    oid: int,
    name: str,
    namespace: int,
    kind: str,
    natts: int,
    has_index: bool,
    checks: int = 0,
    triggers: bool = False,
) -> tuple[Any, ...]:
    """A pg_class row (``checks``: its table's CHECK constraints, relchecks; ``triggers``:
    relhastriggers, which a foreign key's tables have in PostgreSQL)."""
    am = {"i": BTREE, "r": 2, "m": 2}.get(kind, 0)
    return (
        (oid, name, namespace, 0, 0, OWNER, am, oid, 0, 0, -1.0, 0, 0, has_index, False, "p")
        + (kind, natts, checks, False, triggers, False, False, False, True, "d", False, 0, 0, 0)
        + (None, None, None)
    )


@dataclass(frozen=True)
class Index:
    """One index of a table or view: its relation's oid and name, its table and key columns
    (names, in key order), and whether it is unique or the table's primary key."""

    oid: int
    name: str
    table: Item
    keys: tuple[str, ...]
    unique: bool = False
    primary: bool = False
    comment: str | None = None  # a constraint's index's (an index item keeps its own)

    @property
    def qualified(self) -> str:
        """Its name as the catalog names items (the schema's prefix unless public)."""
        schema = split_name(self.table.name)[0]
        return self.name if schema == "public" else f"{schema}.{self.name}"

    def definition(self) -> str:
        """pg_get_indexdef's text, as pg_indexes shows it."""
        schema, relname = split_name(self.table.name)
        unique = "UNIQUE " if self.unique else ""
        return (
            f"CREATE {unique}INDEX {self.name} ON {schema}.{relname} USING btree "
            f"({', '.join(self.keys)})"
        )

    def rows(self, namespace: int) -> dict[str, list[tuple[Any, ...]]]:
        """Its rows of pg_class, pg_attribute, pg_index and pg_indexes."""
        names = [c[0] for c in self.table.columns]
        kinds = {c[0]: c[1] for c in self.table.columns}
        mods = typmods(self.table)
        texts = text_types(self.table)
        table_oid = relation_oid(self.table)
        attributes, types = [], []
        for n, key in enumerate(self.keys, 1):
            kind = kinds.get(key, "text")
            if kind == "text":
                kind = texts.get(key, kind)
            type_oid, length, _ = sql_type(kind)
            types.append(type_oid)
            attributes.append(
                (self.oid, key, type_oid, -1, length, n, 0, -1, mods.get(key, -1), length > 0)
                + ("i", storage(type_oid, length), "", False, False, False, "", "", False, True)
                + (0, 0, None, None, None, None)
            )
        numbers = attnums(self.table)
        nums = " ".join(str(numbers[names.index(k)]) if k in names else "0" for k in self.keys)
        n = len(self.keys)
        collations = " ".join(str(DEFAULT_COLLATION if t in (25, 1042, 1043) else 0) for t in types)
        index = (self.oid, table_oid, n, n, self.unique, False, self.primary, False, True)
        index += (False, True, False, True, True, False, nums, collations)
        index += (" ".join(str(OPCLASS.get(t, 0)) for t in types), " ".join("0" * n), None, None)
        schema, relname = split_name(self.table.name)
        return {
            "pg_class": [class_row(self.oid, self.name, namespace, "i", n, False)],
            "pg_attribute": attributes,
            "pg_index": [index],
            "pg_indexes": [(schema, relname, self.name, self.definition())],
        }


def indexes(state: CatalogState) -> list[Index]:
    """Every index: those of CREATE INDEX (on a table or view), then those backing the
    tables' key constraints (oid ``constraint_oid + 250``, named by their constraints)."""
    out = []
    for item in state.items.values():
        subject = state.items.get(item.depends_on[0]) if item.depends_on else None
        if item.kind == "index" and subject is not None:
            keys = item.options.get("key") or [c[0] for c in subject.columns]
            keys = [str(k).strip().strip('"') for k in keys]
            name = split_name(item.name)[1]
            unique = bool(item.options.get("unique"))
            out.append(Index(relation_oid(item), name, subject, tuple(keys), unique))
    for item in state.items.values():
        if item.kind != "table":
            continue
        comments = item.options.get("index_comments") or {}
        for k, (name, columns, primary) in enumerate(item.options.get("unique") or []):
            keys = tuple(item.columns[c][0] for c in columns)
            oid = constraint_oid(relation_oid(item), k) + 250
            index = Index(oid, name, item, keys, True, primary)
            out.append(replace(index, comment=comments.get(index.qualified)))
    return out
