"""``ALTER TABLE t ALTER [COLUMN] c SET NOT NULL | DROP NOT NULL | SET DEFAULT e | DROP DEFAULT``.

As in PostgreSQL: SET NOT NULL checks the rows (23502 naming the column if one is NULL), DROP
NOT NULL is refused for a primary key's column (42P16), and a DEFAULT is checked against the
column's type when it is set. Writes racing SET NOT NULL follow the rule of the other added
constraints (:mod:`~changeflow.adapter.constraint_options`): the rows are checked, the catalog
changed, and the rows checked again; a NULL found then puts the column back as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from changeflow.adapter.alter import (
    TAG,
    _change,
    _edit_sql,
    _per_column,
    change_rebuilding,
    readers_of,
)
from changeflow.adapter.alter import layout as stored_layout
from changeflow.adapter.catalog import CatalogState, Item
from changeflow.adapter.deparse import stored_sql
from changeflow.adapter.result import Result
from changeflow.adapter.sequences import identities
from changeflow.adapter.sql.dialect import parse_sql
from changeflow.adapter.sql.dml import default_plan
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment


def alter_column(env: Environment, state: CatalogState, item: Item, g: dict[str, Any]) -> Result:
    """One ALTER COLUMN action on column ``g["column"]`` of table ``item``."""
    names = [c[0] for c in item.columns]
    name = g["column"]
    if name not in names:
        raise PlanError(
            f'column "{name}" of relation "{item.name}" does not exist', sqlstate="42703"
        )
    words = g["change"].upper().split()
    if words[-1] == "NULL":
        if words[0] == "SET":
            set_not_null(env, item, [name])
        else:
            _drop_not_null(env, state, item, names.index(name))
    else:
        if name in identities(state, item):
            raise PlanError(
                f'column "{name}" of relation "{item.name}" is an identity column',
                sqlstate="42601",
                hint="Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead.",
            )
        _set_default(env, item, names.index(name), g.get("default"))
    return Result(TAG)


def set_not_null(
    env: Environment,
    item: Item,
    columns: Iterable[str],
    also: Callable[[Item], Item] = lambda item: item,
    check: Callable[[Item], None] = lambda item: None,
) -> None:
    """Make ``columns`` of ``item`` NOT NULL (and the item ``also(item)``), once no row has
    a NULL there and ``check`` passes; both are checked again after the catalog changed."""
    wanted = set(columns)

    def confirm(table: Item) -> None:
        null_rows(env, table, wanted)
        check(table)

    confirm(item)
    changed = also(_nullable(item, wanted, False))
    if changed == item:
        return
    _change(env, item, changed, stored_layout(env, item), stored_layout(env, item), None, None)
    try:
        confirm(changed)
    except (EvalError, PlanError):
        _put_back(env, changed, item)
        raise


def null_rows(env: Environment, item: Item, columns: set[str]) -> None:
    """23502 if a row of table ``item`` is NULL in one of ``columns``."""
    from changeflow.adapter.txn_reads import table_rows

    names = [c[0] for c in item.columns]
    at = [names.index(c) for c in names if c in columns]
    rows = table_rows(env, item)
    for row, count in rows.items():
        for i in at:
            if count > 0 and row[i] is None:
                raise EvalError(
                    f'column "{names[i]}" of relation "{item.name}" contains null values',
                    sqlstate="23502",
                    table=item.name,
                    column=names[i],
                )


def _put_back(env: Environment, changed: Item, before: Item) -> None:
    """The catalog's ``changed`` item back to ``before`` (unless it changed again since)."""

    def swap(state: CatalogState) -> tuple[CatalogState, None]:
        if state.items.get(changed.id) != changed:
            return state, None
        return state.with_item(before), None

    env.catalog.change(swap)


def _nullable(item: Item, columns: set[str], nullable: bool) -> Item:
    """``item`` with ``columns`` nullable or NOT NULL, in its columns and CREATE TABLE text."""
    if all(bool(c[2]) == nullable for c in item.columns if c[0] in columns):
        return item

    def edit(defs: list[exp.Expression]) -> list[exp.Expression]:
        for d in defs:
            if isinstance(d, exp.ColumnDef) and d.name in columns:
                kept = [
                    c
                    for c in d.args.get("constraints") or []
                    if not isinstance(c.args.get("kind"), exp.NotNullColumnConstraint)
                ]
                if not nullable and not any(
                    isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint) for c in kept
                ):
                    kept.append(exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
                d.set("constraints", kept)
        return defs

    cols = tuple((n, t, nullable if n in columns else null) for n, t, null in item.columns)
    return replace(item, columns=cols, sql=_edit_sql(item.sql, edit))


def _drop_not_null(env: Environment, state: CatalogState, item: Item, i: int) -> None:

    name = item.columns[i][0]
    if any(u[2] and i in u[1] for u in item.options.get("unique") or []):
        raise PlanError(f'column "{name}" is in a primary key', sqlstate="42P16")
    changed = _nullable(item, {name}, True)
    if changed == item:
        return
    indexes, readers = readers_of(state, item)
    if readers:  # their output was planned NOT NULL where the column is read
        raise PlanError(
            f'cannot drop NOT NULL of column "{name}": {readers[0].kind} "{readers[0].name}" '
            f'reads table "{item.name}"; drop it first and create it again after',
            sqlstate="0A000",
        )
    old = stored_layout(env, item)
    new = old.set(i, old.field(i).with_nullable(True))
    change_rebuilding(env, item, changed, indexes, old, new, None, None)


def _set_default(env: Environment, item: Item, i: int, text: str | None) -> None:
    """The column's DEFAULT to the SQL ``text`` (None: no default), checked against its type."""
    from changeflow.adapter.resolver import schema_of

    if text is not None:
        node = parse_sql(f"SELECT {text}").selects[0]
        text = stored_sql(node)
        default_plan(schema_of(item)[i], text)  # a value the column cannot take: its error
    name = item.columns[i][0]
    defaults = _per_column(item.options, "defaults", item)
    defaults[i] = text

    def edit(defs: list[exp.Expression]) -> list[exp.Expression]:
        for d in defs:
            if isinstance(d, exp.ColumnDef) and d.name == name:
                kept = [
                    c
                    for c in d.args.get("constraints") or []
                    if not isinstance(c.args.get("kind"), exp.DefaultColumnConstraint)
                ]
                if text is not None:
                    kept.append(exp.ColumnConstraint(kind=exp.DefaultColumnConstraint(this=node)))
                d.set("constraints", kept)
        return defs

    options = {**item.options, "defaults": defaults}
    changed = replace(item, options=options, sql=_edit_sql(item.sql, edit))
    old = stored_layout(env, item)
    _change(env, item, changed, old, old, None, None)
