"""FOREIGN KEY constraints in the catalog: added with CREATE TABLE and ALTER TABLE ADD (the
table's rows checked first, 23503), dropped with DROP CONSTRAINT, with a dropped column of
the key, or with DROP TABLE … CASCADE of the referenced table (which without CASCADE is
2BP01, as TRUNCATE of it is 0A000); and listed as pg_constraint and information_schema show
them."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.constraint_options import add_checked, not_valid, without
from changeflow.adapter.foreign_keys import (
    SHOWN,
    ForeignKey,
    column_names,
    definition,
    foreign_keys_of,
    referencing,
    table_foreign_keys,
)
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from sqlglot import exp

    from changeflow.adapter.environment import Environment


def with_foreign_keys(env: Environment, item: Item, defs: list[exp.Expression], taken: set) -> Item:
    """``item`` (a new table) with the foreign keys of its CREATE TABLE's definitions."""
    fks = table_foreign_keys(env.catalog.load(), item.name, defs, item, taken)
    if not fks:
        return item
    return replace(item, options={**item.options, "foreign_keys": [f.to_json() for f in fks]})


def visible(state: CatalogState, item: Item) -> str:
    """A table's name as PostgreSQL's messages show it: bare if the search path finds it."""
    rel = split_name(item.name)[1]
    return rel if state.find(rel) == item else item.name


def _others(state: CatalogState, item: Item, names: list[str]) -> list[tuple[Item, ForeignKey]]:
    """The foreign keys of other tables than ``names``' that reference ``item``."""
    named = {i.id for n in names if (i := state.find(n)) is not None}
    return [(c, fk) for c, fk in referencing(state, item.id) if c.id not in named]


def unreferenced(state: CatalogState, item: Item, cascade: bool, names: list[str]) -> CatalogState:
    """The state in which the tables ``names`` can be dropped: 2BP01 if another table's
    foreign key references ``item``, unless ``cascade``, which drops those constraints."""
    if item.kind != "table":
        return state
    others = _others(state, item, names)
    if not others:
        return state
    rel = visible(state, item)
    return _dropped_with(state, others, cascade, f"table {rel}", f"table {rel}")


def key_unreferenced(state: CatalogState, item: Item, name: str, cascade: bool) -> CatalogState:
    """The state in which ``item``'s key constraint ``name`` can be dropped: 2BP01 if a
    foreign key references its columns, unless ``cascade``, which drops those foreign keys."""
    key = next((u for u in item.options.get("unique") or [] if u[0] == name), None)
    if key is None:
        return state
    nums = sorted(attnums(item)[i] for i in key[1])
    found = [(c, fk) for c, fk in referencing(state, item.id) if sorted(fk.refs) == nums]
    what = f"constraint {name} on table {visible(state, item)}"
    return _dropped_with(state, found, cascade, what, f"index {name}")


def _dropped_with(
    state: CatalogState, fks: list[tuple[Item, ForeignKey]], cascade: bool, what: str, on: str
) -> CatalogState:
    """The state without the foreign keys ``fks`` (each with its table) that depend ``on``
    something, if ``cascade``; else, if there are any, 2BP01: ``what`` cannot be dropped."""
    if fks and not cascade:
        lines = [
            f"constraint {fk.name} on table {visible(state, c)} depends on {on}" for c, fk in fks
        ]
        raise PlanError(
            f"cannot drop {what} because other objects depend on it",
            sqlstate="2BP01",
            detail="\n".join(lines),
            hint="Use DROP ... CASCADE to drop the dependent objects too.",
        )
    for c, fk in fks:
        state = without(state, c.id, "foreign_keys", fk.name)
    return state


def truncate_cascades(state: CatalogState, names: list[str]) -> list[str]:
    """The tables TRUNCATE … CASCADE empties besides ``names``: those whose foreign keys
    reference one of them, and so on."""
    out: list[str] = []
    todo = [i for n in names if (i := state.find(n)) is not None]
    seen = {i.id for i in todo}
    while todo:
        for c, _ in referencing(state, todo.pop(0).id):
            if c.id not in seen:
                seen.add(c.id)
                todo.append(c)
                out.append(c.name)
    return out


def truncate_order(state: CatalogState, names: list[str], cascade: bool = False) -> list[str]:
    """The tables of TRUNCATE in the order to empty them: those referencing others first
    (under CASCADE with every table referencing one of them). 0A000, as PostgreSQL's, if
    another table's foreign key references one of them."""
    if cascade:
        names = [*names, *truncate_cascades(state, names)]
    for n in names:
        item = state.find(n)
        if item is None or item.kind != "table":
            continue
        for c, _ in _others(state, item, names):
            child, rel = split_name(c.name)[1], split_name(item.name)[1]
            raise PlanError(
                "cannot truncate a table referenced in a foreign key constraint",
                sqlstate="0A000",
                detail=f'Table "{child}" references "{rel}".',
                hint=f'Truncate table "{child}" at the same time, or use TRUNCATE ... CASCADE.',
            )
    items = {n: state.find(n) for n in names}
    left, out = list(names), []
    while left:
        ids = {i.id for n in left if (i := items[n]) is not None}
        ready = [n for n in left if not _referenced_among(state, items[n], ids)] or left
        out += ready  # (a cycle: as given)
        left = [n for n in left if n not in ready]
    return out


def _referenced_among(state: CatalogState, item: Item | None, ids: set[str]) -> bool:
    """Does a table of ``ids`` other than ``item`` reference ``item``?"""
    return item is not None and any(
        c.id in ids and c.id != item.id for c, _ in referencing(state, item.id)
    )


def fks_without_column(item: Item, i: int) -> list[list]:
    """The item's foreign keys once its ``i``-th column is dropped: those of the column (or
    referencing it, in the table itself) go with it."""
    num = attnums(item)[i]
    return [
        f.to_json()
        for f in foreign_keys_of(item)
        if num not in f.columns and not (f.parent == item.id and num in f.refs)
    ]


def drop_referenced(
    state: CatalogState, item: Item, i: int, cascade: bool
) -> list[tuple[Item, Item | None]]:
    """Other tables without their foreign keys that reference ``item``'s ``i``-th column,
    for DROP COLUMN … CASCADE (each as (before, after)); 2BP01 without CASCADE if any."""
    num = attnums(item)[i]
    found = [(c, fk) for c, fk in referencing(state, item.id) if c.id != item.id]
    found = [(c, fk) for c, fk in found if num in fk.refs]
    if found and not cascade:
        column, rel = item.columns[i][0], visible(state, item)
        c, fk = found[0]
        raise PlanError(
            f"cannot drop column {column} of table {rel} because other objects depend on it",
            sqlstate="2BP01",
            detail=f"constraint {fk.name} on table {visible(state, c)} depends on "
            f"column {column} of table {rel}",
            hint="Use DROP ... CASCADE to drop the dependent objects too.",
        )
    out: list[tuple[Item, Item | None]] = []
    for c in {c.id: c for c, _ in found}.values():
        names = {fk.name for d, fk in found if d.id == c.id}
        fks = [f for f in c.options.get("foreign_keys") or [] if f[0] not in names]
        out.append((c, replace(c, options={**c.options, "foreign_keys": fks})))
    return out


def constraint_names(item: Item) -> set[str]:
    """The names of a table's constraints (keys, checks and foreign keys)."""
    names = {u[0] for u in item.options.get("unique") or []}
    names |= {c[0] for c in item.options.get("checks") or []}
    return names | {f.name for f in foreign_keys_of(item)}


def add_foreign_key(
    env: Environment, item: Item, defs: list[exp.Expression], taken: set, valid: bool = True
) -> None:
    """ALTER TABLE ADD [CONSTRAINT n] FOREIGN KEY …: the table's rows checked (23503 for a
    row whose key is not referenced), then the constraint kept, then the rows checked again
    (a write planned before the change may have added one meanwhile: it then goes again);
    not ``valid`` (``NOT VALID``): kept unchecked."""
    (fk,) = table_foreign_keys(env.catalog.load(), item.name, defs, item, taken)
    add_checked(env, item, "foreign_keys", fk, lambda table: fk_rows_checked(env, table, fk), valid)


def fk_rows_checked(env: Environment, item: Item, fk: ForeignKey) -> None:
    from changeflow.adapter.fk_enforce import key_of, shown_key, violation
    from changeflow.adapter.foreign_keys import positions
    from changeflow.adapter.txn_reads import table_rows

    parent = env.catalog.load().items[fk.parent]
    ts = env.read_ts(item.timeline, {item.id, parent.id})
    rows = table_rows(env, item, ts)
    theirs = table_rows(env, parent, ts) if parent.id != item.id else rows
    refs, cols = positions(parent, fk.refs), positions(item, fk.columns)
    present = {key_of(r, refs) for r, c in theirs.items() if c > 0}
    for row, count in rows.items():
        key = key_of(row, cols)
        if count > 0 and key is not None and key not in present:
            raise violation(
                f'insert or update on table "{split_name(item.name)[1]}" violates foreign key '
                f'constraint "{fk.name}"',
                f"Key {shown_key(item, fk.columns, key)} is not present in table "
                f'"{split_name(parent.name)[1]}".',
                item,
                fk,
            )


def drop_foreign_key(env: Environment, item: Item, name: str) -> bool:
    """DROP CONSTRAINT of a foreign key: False if ``item`` has none named ``name``."""
    if not any(f.name == name for f in foreign_keys_of(item)):
        return False
    env.catalog.change(lambda s: (without(s, item.id, "foreign_keys", name), None))
    return True


def fk_oid(relation: int, k: int) -> int:
    """The oid of a table's ``k``-th FOREIGN KEY constraint."""
    return relation * 1000 + 900 + k


def fk_constraints(
    state: CatalogState, item: Item, oid: int, namespace: int, relation_oid: Any
) -> list[tuple[Any, ...]]:
    """pg_constraint's rows of a table's CHECK constraints, then of its FOREIGN KEY
    constraints (contype ``f``)."""
    from changeflow.adapter.system_rows import check_constraints, constraint_oid

    rows = check_constraints(item, oid, namespace)
    for k, fk in enumerate(foreign_keys_of(item)):
        parent = state.items.get(fk.parent)
        if parent is None:
            continue
        parent_oid = relation_oid(parent)
        index = 0
        for n, u in enumerate(parent.options.get("unique") or []):
            if sorted(attnums(parent)[i] for i in u[1]) == sorted(fk.refs):
                index = constraint_oid(parent_oid, n) + 250
                break
        keys = "{" + ",".join(map(str, fk.columns)) + "}"
        refs = "{" + ",".join(map(str, fk.refs)) + "}"
        rows.append(
            (fk_oid(oid, k), fk.name, namespace, "f", fk.deferrable, fk.deferred)
            + (fk.name not in not_valid(item), oid, 0)
            + (index, 0)
            + (parent_oid, fk.on_update, fk.on_delete, fk.match, True, 0, True, keys, refs, None)
        )
    return rows


def fk_defs(items: list[Item], relation_oid: Any) -> dict[int, tuple[str, str]]:
    """pg_get_constraintdef of each FOREIGN KEY constraint by oid: (plain, pretty)."""
    by_id = {i.id: i for i in items}
    out = {}
    for i in items:
        for k, fk in enumerate(foreign_keys_of(i) if i.kind == "table" else []):
            text = definition(by_id, i, fk) + (" NOT VALID" if fk.name in not_valid(i) else "")
            out[fk_oid(relation_oid(i), k)] = (text, text)
    return out


def fk_info(state: CatalogState, database: str) -> dict[str, list[tuple[Any, ...]]]:
    """information_schema's check_constraints, table_constraints, referential_constraints,
    key_column_usage and constraint_column_usage rows of the tables' key, check, NOT NULL and
    foreign key constraints."""
    from changeflow.adapter.check_info import check_rows
    from changeflow.adapter.checks import checks_of

    out: dict[str, list[tuple[Any, ...]]] = {
        "check_constraints": [],
        "table_constraints": [],
        "referential_constraints": [],
        "key_column_usage": [],
        "constraint_column_usage": [],
    }
    tables = sorted((i for i in state.items.values() if i.kind == "table"), key=lambda i: i.name)
    for item in tables:
        schema, rel = split_name(item.name)
        head = (database, schema)
        for name, columns, primary in item.options.get("unique") or []:
            kind = "PRIMARY KEY" if primary else "UNIQUE"
            distinct = None if primary else "YES"
            row = (*head, name, *head, rel, kind, "NO", "NO", "YES", distinct)
            out["table_constraints"].append(row)
            for n, c in enumerate(columns):
                out["key_column_usage"].append(
                    (*head, name, *head, rel, item.columns[c][0], n + 1, None)
                )
                out["constraint_column_usage"].append((*head, rel, item.columns[c][0], *head, name))
        for check in checks_of(item):
            out["table_constraints"].append((*head, check.name, *head, rel, "CHECK", "NO", "NO"))
            out["table_constraints"][-1] += ("YES", None)
            for c in check.columns():
                out["constraint_column_usage"].append((*head, rel, c, *head, check.name))
        for fk in foreign_keys_of(item):
            parent = state.items.get(fk.parent)
            if parent is None:
                continue
            pschema, prel = split_name(parent.name)
            deferral = ("YES" if fk.deferrable else "NO", "YES" if fk.deferred else "NO")
            row = (*head, fk.name, *head, rel, "FOREIGN KEY", *deferral, "YES", None)
            out["table_constraints"].append(row)
            unique = next(
                (
                    u[0]
                    for u in parent.options.get("unique") or []
                    if sorted(attnums(parent)[i] for i in u[1]) == sorted(fk.refs)
                ),
                None,
            )
            match = "FULL" if fk.match == "f" else "NONE"
            out["referential_constraints"].append(
                (*head, fk.name, database, pschema, unique, match)
                + (SHOWN[fk.on_update], SHOWN[fk.on_delete])
            )
            theirs = column_names(parent, fk.refs)
            key_order = _unique_order(parent, unique)
            for n, (c, r) in enumerate(zip(column_names(item, fk.columns), theirs, strict=True)):
                at = key_order.index(r) + 1 if r in key_order else None
                out["key_column_usage"].append((*head, fk.name, *head, rel, c, n + 1, at))
                out["constraint_column_usage"].append((database, pschema, prel, r, *head, fk.name))
        checks, not_null = check_rows(state, item, database)
        out["check_constraints"] += checks
        out["table_constraints"] += not_null
    return out


def _unique_order(parent: Item, name: str | None) -> list[str]:
    for u in parent.options.get("unique") or []:
        if u[0] == name:
            return [parent.columns[i][0] for i in u[1]]
    return []


def fk_tables(state: CatalogState) -> set[str]:
    """The ids of the tables with a foreign key or referenced by one (relhastriggers)."""
    out: set[str] = set()
    for item in state.items.values():
        for fk in foreign_keys_of(item) if item.kind == "table" else []:
            out |= {item.id, fk.parent}
    return out
