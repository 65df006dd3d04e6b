"""FOREIGN KEY constraints enforced on a write, against the tables as its transaction leaves
them (the rows at its read timestamp with its own writes, the write's own included).

A row a write adds to a referencing table needs a referenced row with its key (MATCH SIMPLE:
a key with a NULL needs none; MATCH FULL: all NULL or none); else 23503. A key a write takes
away from a referenced table (no row of the table has it after the write) must not be
referenced: NO ACTION and RESTRICT refuse (23503), CASCADE deletes the referencing rows (or
gives them the new key, ON UPDATE), SET NULL and SET DEFAULT set their key columns; these
changes are writes of the referencing table in the same transaction, enforced in turn.

Every read joins the transaction's reads (the keys' rows, or the whole table for many keys):
a concurrent commit that changes what was read makes this one fail (40001), so a child's
insert and the delete of its parent cannot both commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.constraints import Unique
from changeflow.adapter.fk_deferred import Pending, deferring
from changeflow.adapter.foreign_keys import (
    ForeignKey,
    column_names,
    foreign_keys_of,
    positions,
    referencing,
)
from changeflow.adapter.keyed import KEYS_READ, rows_with_key
from changeflow.adapter.resolver import CatalogResolver, schema_of
from changeflow.adapter.written import with_own_writes
from changeflow.compute import plan as P
from changeflow.compute.scalars import to_text
from changeflow.compute.values import python_values
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from changeflow.adapter.session import Session, Transaction

Row = tuple[Any, ...]


def enforce_foreign_keys(
    session: Session, txn: Transaction, state: CatalogState, item: Item, rows: list
) -> None:
    """The foreign keys of ``item``'s write ``rows`` ((row, diff) pairs, already among the
    transaction's writes) and of the keys it takes away (see the module docstring)."""
    if not rows or item.kind != "table":
        return
    added = [r for r, d in rows if d > 0]
    for fk in foreign_keys_of(item):
        if deferring(txn, fk):
            txn.deferred.append(Pending("child", item.id, fk.name, added, []))
        else:
            check_child(session, txn, state, item, fk, added)
    removed = [r for r, d in rows if d < 0]
    if not removed:
        return
    for child, fk in referencing(state, item.id):
        action = fk.on_update if added else fk.on_delete
        if action == "a" and deferring(txn, fk):
            txn.deferred.append(Pending("parent", child.id, fk.name, added, removed))
        else:
            check_parent(session, txn, state, item, child, fk, added, removed)


def key_of(row: Row, cols: tuple[int, ...]) -> Row | None:
    """The row's values at ``cols``; None if one is NULL (MATCH SIMPLE: nothing to check)."""
    key = tuple(row[i] for i in cols)
    return None if any(v is None for v in key) else key


def check_child(
    session: Session,
    txn: Transaction,
    state: CatalogState,
    item: Item,
    fk: ForeignKey,
    added: list[Row],
    present: bool = False,
) -> None:
    """23503 if a key of the ``added`` rows of the referencing table ``item`` is not in the
    referenced one (``present``: only the keys some row of ``item`` still has)."""
    cols = positions(item, fk.columns)
    keys: dict[Row, None] = {}  # in order, each once
    for row in added:
        key = key_of(row, cols)
        if key is None:
            if fk.match == "f" and any(row[i] is not None for i in cols):
                raise violation(
                    f'insert or update on table "{_rel(item)}" violates foreign key '
                    f'constraint "{fk.name}"',
                    "MATCH FULL does not allow mixing of null and nonnull key values.",
                    item,
                    fk,
                )
            continue
        keys[key] = None
    if not keys:
        return
    parent = state.items.get(fk.parent)
    if parent is None:  # dropped while the constraint was being made: nothing to reference
        return
    if present:
        there = _with_keys(session, txn, item, cols, list(keys))
        keys = {k: None for k in keys if k in there}
    found = _with_keys(session, txn, parent, positions(parent, fk.refs), list(keys))
    for key in keys:
        if key not in found:
            shown = shown_key(item, fk.columns, key)
            raise violation(
                f'insert or update on table "{_rel(item)}" violates foreign key constraint '
                f'"{fk.name}"',
                f'Key {shown} is not present in table "{_rel(parent)}".',
                item,
                fk,
            )


def check_parent(
    session: Session,
    txn: Transaction,
    state: CatalogState,
    item: Item,
    child: Item,
    fk: ForeignKey,
    added: list[Row],
    removed: list[Row],
) -> None:
    """The action of ``fk`` (of table ``child``) on the keys that the write of ``added`` and
    ``removed`` rows to its referenced table ``item`` takes away."""
    refs = positions(item, fk.refs)
    gone = list(dict.fromkeys(k for r in removed if (k := key_of(r, refs)) is not None))
    if not gone:
        return
    still = _with_keys(session, txn, item, refs, gone)
    gone = [k for k in gone if k not in still]
    if not gone:
        return
    cols = positions(child, fk.columns)
    referencing_rows = _with_keys(session, txn, child, cols, gone)
    if not referencing_rows:
        return
    updating = bool(added)
    action = fk.on_update if updating else fk.on_delete
    fill = _defaults(child, cols) if action == "d" else None
    if action in ("a", "r") or (fill is not None and fill in referencing_rows):
        # SET DEFAULT to the very key taken away leaves the rows referencing it
        key = fill if action == "d" else next(k for k in gone if k in referencing_rows)
        raise violation(
            f'update or delete on table "{_rel(item)}" violates foreign key constraint '
            f'"{fk.name}" on table "{_rel(child)}"',
            f'Key {shown_key(item, fk.refs, key)} is still referenced from table "{_rel(child)}".',
            child,
            fk,
        )
    new_keys = _new_keys(removed, added, refs) if action == "c" and updating else {}
    changes: list[tuple[Row, int]] = []
    for key in gone:
        for row, count in referencing_rows.get(key, {}).items():
            changes.append((row, -count))
            if action == "c" and not updating:
                continue
            values = new_keys.get(key) if action == "c" else fill
            new = list(row)
            for n, i in enumerate(cols):
                new[i] = None if values is None else values[n]
            changes.append((tuple(new), count))
    _write(session, txn, state, child, changes)


def _new_keys(removed: list[Row], added: list[Row], refs: tuple[int, ...]) -> dict[Row, Row]:
    """ON UPDATE CASCADE: each old key's new key, the rows of the UPDATE paired in order."""
    if len(removed) != len(added):
        raise PlanError(
            "ON UPDATE CASCADE of an UPDATE whose old and new rows cannot be paired is not "
            "supported",
            sqlstate="0A000",
        )
    out: dict[Row, Row] = {}
    for old, new in zip(removed, added, strict=True):
        k = key_of(old, refs)
        if k is not None:
            out[k] = tuple(new[i] for i in refs)
    return out


def _defaults(child: Item, cols: tuple[int, ...]) -> Row:
    """The DEFAULT values of the child's columns at ``cols`` (NULL where there is none)."""
    from changeflow.adapter.sql.dml import default_plan
    from changeflow.compute.evaluate import evaluate

    schema = schema_of(child)
    texts = child.options.get("defaults") or [None] * len(child.columns)
    out = []
    for i in cols:
        got = evaluate(default_plan(schema[i], texts[i]), {}, 0)
        out.append(next(iter(got))[0])
    return tuple(out)


def _write(
    session: Session, txn: Transaction, state: CatalogState, child: Item, changes: list
) -> None:
    """Write the changes a referential action makes to ``child``, checked as a write is."""
    from changeflow.adapter.checks import enforce_checks
    from changeflow.adapter.sql.dml import check_not_null

    changes = [(r, c) for r, c in changes if c]
    if not changes:
        return
    relation = CatalogResolver(state).relation(child.name)
    for row, diff in changes:
        if diff > 0:
            check_not_null(row, relation.plan.schema, relation.name)
    enforce_checks(relation, changes)
    if relation.unique:  # a key the action gave may be taken (23505)
        from changeflow.adapter.keyed import constrain

        changes = constrain(session, txn, relation, None, changes, ())
    assert child.shard is not None
    shape = session.env.storage.state(child.shard).schema
    frame = session.env.log.frame(child.shard, changes, child.name, shape)
    txn.writes.setdefault(child.shard, []).append(frame)
    enforce_foreign_keys(session, txn, state, child, changes)


def _with_keys(
    session: Session, txn: Transaction, item: Item, cols: tuple[int, ...], keys: list[Row]
) -> dict[Row, dict[Row, int]]:
    """The live rows of ``item`` (as the transaction leaves it) whose columns ``cols`` hold
    one of ``keys``, by key; each read joins the transaction's reads."""
    env = session.env
    assert item.shard is not None
    get = P.Get(item.shard, schema_of(item))
    if txn.read_ts is None:
        timeline = session._timeline(frozenset({item.timeline}), txn)
        txn.read_ts = env.read_ts(timeline, {item.shard})
    txn.reads.add(item.shard)
    u = Unique("", cols)
    plans = [get] if len(keys) > KEYS_READ else [rows_with_key(get, u, k) for k in keys]
    wanted = set(keys)
    out: dict[Row, dict[Row, int]] = {}
    for plan in plans:
        got = env.evaluate(plan, txn.read_ts, session.timeout)
        txn.read_rows.append((plan, got))  # a concurrent change of these rows: 40001
        got = with_own_writes(env, plan, txn.read_ts, got, txn.written, txn.writes)
        for row, count in got.items():
            key = key_of(row, cols)
            if count > 0 and key in wanted:
                out.setdefault(key, {})[row] = count  # type: ignore[index]
    return out


def shown_key(item: Item, nums: tuple[int, ...], key: Row) -> str:
    """``(a, b)=(1, x)`` of a key, as PostgreSQL's details show it."""
    schema = schema_of(item)
    at = positions(item, nums)
    values = ", ".join(to_text(v, schema[i].type) for v, i in zip(key, at, strict=True))
    return f"({', '.join(column_names(item, nums))})=({values})"


def _rel(item: Item) -> str:
    return split_name(item.name)[1]


def violation(message: str, detail: str, table: Item, fk: ForeignKey) -> EvalError:
    """A 23503 of ``fk`` naming the referencing ``table``, as PostgreSQL's names it."""
    schema, rel = split_name(table.name)
    return EvalError(
        message, sqlstate="23503", detail=detail, schema=schema, table=rel, constraint=fk.name
    )


def frame_rows(item: Item, frame: Any) -> list:
    """The rows of an update frame of added rows to enforce foreign keys on (an insert takes
    no key away, so only its keys matter): each distinct combination of the foreign keys'
    columns once, in the order of the input, the other columns NULL; none for a table
    without foreign keys."""
    fks = foreign_keys_of(item)
    if not fks:
        return []
    at = sorted({i for fk in fks for i in positions(item, fk.columns)})
    names = [f"k{i}" for i in at]
    keys = frame.select(at).rename_columns(names)
    try:
        distinct = keys.group_by(names, use_threads=False).aggregate([])
    except (NotImplementedError, ValueError):  # types Arrow cannot group: every row
        distinct = keys
    width = len(item.columns)
    out = []
    for values in zip(*(python_values(distinct.column(n)) for n in names), strict=True):
        row: list[Any] = [None] * width
        for i, v in zip(at, values, strict=True):
            row[i] = v
        out.append((tuple(row), 1))
    return out
