"""Indexes as PostgreSQL's catalogs show them: the indexes created by CREATE [UNIQUE] INDEX
and the unique indexes that back a table's PRIMARY KEY and UNIQUE constraints in PostgreSQL,
each with its pg_class, pg_attribute, pg_index and pg_indexes rows and its definition."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.deparse import checks_shown
from changeflow.adapter.sql.index_keys import KeyItem, key_item, tail_clauses
from changeflow.adapter.system_rows import constraint_oid
from changeflow.adapter.system_tables import OWNER, RELATION_BASE, TYPES
from changeflow.adapter.typmods import text_types, typmods
from changeflow.compute.functions.chars import quote_ident

BTREE, HASH = 403, 405
# a type's default btree operator class (pg_index.indclass), as PostgreSQL 15's
OPCLASS = {16: 10003, 17: 10006, 19: 10028, 20: 3124, 21: 1979, 23: 1978, 25: 3126, 26: 1981}
OPCLASS |= {700: 10012, 701: 3123, 1042: 10004, 1043: 3126, 1082: 3122, 1114: 3128, 1184: 3127}
OPCLASS |= {1186: 10022, 1700: 3125, 2950: 10065, 3802: 10088}
ENUM_OPS = 10069
DEFAULT_COLLATION = 100
COLLATIONS = {"c": 950, "posix": 951}  # pg_collation's fixed oids


def relation_oid(item: Item) -> int:
    return RELATION_BASE + int(item.id.lstrip("u") or 0)


def sql_type(
    name: str, enums: dict[str, tuple[int, int, str]] | None = None
) -> tuple[int, int, str]:
    """A column type's (OID, typlen, pg_type name), of an enum's from ``enums`` (by catalog
    name: :func:`changeflow.adapter.system_enums.column_types`); text's for another type."""
    return TYPES.get(name) or (enums or {}).get(name) or (25, -1, "text")


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
    (names, in key order), and whether it is unique or the table's primary key; as CREATE
    INDEX wrote it, its key items' collations, operator classes and orders, its access method,
    INCLUDE columns and WITH storage parameters."""

    oid: int
    name: str
    table: Item
    keys: tuple[str, ...]
    unique: bool = False
    primary: bool = False
    comment: str | None = None  # a constraint's index's (an index item keeps its own)
    items: tuple[KeyItem, ...] = ()
    method: str = "btree"
    include: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    where: str | None = None  # a partial index's predicate, as pg_get_expr shows it

    @property
    def qualified(self) -> str:
        """Its name as the catalog names items (the schema's prefix unless public)."""
        schema = split_name(self.table.name)[0]
        return self.name if schema == "public" else f"{schema}.{self.name}"

    def definition(self, pretty: bool = False) -> str:
        """pg_get_indexdef's text, as pg_indexes shows it (``pretty``: the table's name
        without its schema where the search path finds it)."""
        schema, relname = split_name(self.table.name)
        unique = "UNIQUE " if self.unique else ""
        table = quote_ident(relname)
        if not (pretty and schema == "public"):
            table = f"{quote_ident(schema)}.{table}"
        keys = ", ".join(self.key_text(n) for n in range(len(self.keys)))
        text = f"CREATE {unique}INDEX {quote_ident(self.name)} ON {table} USING {self.method} "
        text += f"({keys})"
        if self.include:
            text += f" INCLUDE ({', '.join(quote_ident(c) for c in self.include)})"
        if self.params:
            shown = (f"{k}={v if quote_ident(v) == v else _literal(v)}" for k, v in self.params)
            text += f" WITH ({', '.join(shown)})"
        return text + (f" WHERE {self.where}" if self.where else "")

    def key_text(self, n: int) -> str:
        """The ``n``-th key item as pg_get_indexdef prints it: its column, a collation
        other than the column's, an operator class other than its type's default, DESC and
        a NULLS order other than the direction's default."""
        text = quote_ident(self.keys[n])
        if n >= len(self.items):
            return text
        item = self.items[n]
        if item.collate and item.collate.strip('"').lower() != "default":
            text += f" COLLATE {quote_ident(item.collate.strip(chr(34)))}"
        kind = dict((c[0], c[1]) for c in self.table.columns).get(self.keys[n], "text")
        kind = text_types(self.table).get(self.keys[n], kind) if kind == "text" else kind
        if item.opclass and item.opclass not in _default_opclasses(sql_type(kind)[2]):
            text += f" {item.opclass}"
        if item.desc:
            text += " DESC"
        if item.nulls_first != item.desc:
            text += " NULLS FIRST" if item.nulls_first else " NULLS LAST"
        return text

    def collation(self, n: int, type_oid: int) -> int:
        """The ``n``-th key item's collation oid: its COLLATE's (C and POSIX), else the
        default for a text type, 0 for another."""
        if type_oid not in (25, 1042, 1043):
            return 0
        given = self.items[n].collate if n < len(self.items) else None
        named = (given or "").strip('"').lower()
        return COLLATIONS.get(named, DEFAULT_COLLATION)

    def column_text(self, column: int) -> str | None:
        """pg_get_indexdef of one column (1-based; key columns, then INCLUDE's; '' past
        them, as PostgreSQL's)."""
        names = [quote_ident(k) for k in self.keys] + [quote_ident(c) for c in self.include]
        return names[column - 1] if 0 < column <= len(names) else ""

    def rows(
        self, namespace: int, enums: dict[str, tuple[int, int, str]] | None = None
    ) -> dict[str, list[tuple[Any, ...]]]:
        """Its rows of pg_class, pg_attribute, pg_index and pg_indexes (``enums``: the enums'
        types, as :func:`sql_type` takes them)."""
        names = [c[0] for c in self.table.columns]
        kinds = {c[0]: c[1] for c in self.table.columns}
        mods = typmods(self.table)
        texts = text_types(self.table)
        table_oid = relation_oid(self.table)
        attributes, types = [], []
        for n, key in enumerate(self.keys + self.include, 1):
            kind = kinds.get(key, "text")
            if kind == "text":
                kind = texts.get(key, kind)
            type_oid, length, _ = sql_type(kind, enums)
            types.append(type_oid)
            mod = mods.get(key, -1)
            if self.method == "hash":  # a hash index holds its keys' hash codes
                type_oid, length, mod = 23, 4, -1
            attributes.append(
                (self.oid, key, type_oid, -1, length, n, 0, -1, mod, length > 0)
                + ("i", storage(type_oid, length), "", False, False, False, "", "", False, True)
                + (0, 0, None, None, None, None)
            )
        numbers = attnums(self.table)
        every = self.keys + self.include
        nums = " ".join(str(numbers[names.index(k)]) if k in names else "0" for k in every)
        n, width = len(self.keys), len(every)
        keyed = types[:n]
        collations = " ".join(str(self.collation(i, t)) for i, t in enumerate(keyed))
        index = (self.oid, table_oid, width, n, self.unique, False, self.primary, False, True)
        index += (False, True, False, True, True, False, nums, collations)
        options = [item.option for item in self.items] + [0] * (n - len(self.items))
        index += (" ".join(str(_opclass(t)) for t in keyed),)
        index += (" ".join(str(o) for o in options[:n]), None, self.where)
        schema, relname = split_name(self.table.name)
        row = class_row(self.oid, self.name, namespace, "i", width, False)
        params = "{" + ",".join(f"{k}={v}" for k, v in self.params) + "}" if self.params else None
        row = row[:6] + (HASH if self.method == "hash" else BTREE,) + row[7:-2] + (params, None)
        return {
            "pg_class": [row],
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
            index = Index(relation_oid(item), name, subject, tuple(keys), unique)
            where = item.options.get("where")
            shown = checks_shown(subject, where)[0][len("CHECK (") : -1] if where else None
            out.append(replace(index, **_written(item.sql, subject), where=shown))
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


def _written(sql: str, table: Item) -> dict[str, Any]:
    """What CREATE INDEX's text says beyond its key columns: its key items, access method,
    INCLUDE columns and storage parameters."""
    from changeflow.adapter.sql.statements import name, parse

    try:
        g = parse(sql).args
    except Exception:  # noqa: BLE001 (an index stored before; shown with its columns alone)
        return {}
    include, params = tail_clauses(g.get("tail"))
    columns = {c[0] for c in table.columns}
    return {
        "items": tuple(key_item(i) for i in g.get("items") or []),
        "method": (g.get("method") or "btree").lower(),
        "include": tuple(c for c in (name(i) for i in include) if c in columns),
        "params": tuple(params),
    }


def _opclass(type_oid: int) -> int:
    """The default btree operator class of a type (an enum's: enum_ops)."""
    return ENUM_OPS if type_oid >= RELATION_BASE else OPCLASS.get(type_oid, 0)


def _default_opclasses(typname: str) -> tuple[str, ...]:
    """The names of a type's default btree operator class."""
    if typname in ("text", "varchar"):
        return ("text_ops", "varchar_ops")
    return (f"{typname}_ops",)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
