"""``ALTER TABLE t ADD [CONSTRAINT c] CHECK (…) [NOT VALID]``, ``DROP CONSTRAINT c``,
``RENAME CONSTRAINT c TO d`` and ``VALIDATE CONSTRAINT c``.

A check is added only if the table's rows pass it (23514 otherwise, naming the constraint,
as PostgreSQL). Writes racing the change follow the rule of unique indexes
(:mod:`~changeflow.adapter.unique_index`): a write is checked against the catalog version it
was planned on, so the rows are checked, the constraint put in the catalog, and the rows
checked again; a failure then takes the constraint out again. A write planned before the
change that commits after that second read is checked by neither.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.checks import Check, checks_of, planned, table_checks, violation
from changeflow.adapter.constraint_options import add_checked, not_valid
from changeflow.adapter.fk_catalog import (
    add_foreign_key,
    constraint_names,
    drop_foreign_key,
    fk_rows_checked,
    foreign_keys_of,
    key_unreferenced,
)
from changeflow.adapter.result import Result
from changeflow.adapter.sql.dialect import parse_sql
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment

TAG = "ALTER TABLE"


def add_check(env: Environment, item: Item, text: str) -> Result:
    """ADD [CONSTRAINT name] CHECK (…), FOREIGN KEY, PRIMARY KEY or UNIQUE: 0A000 for
    EXCLUDE."""
    from changeflow.adapter.key_alter import KEYS, add_key  # it builds on ALTER TABLE's steps
    from changeflow.adapter.resolver import schema_of

    unchecked = re.search(r"\s+NOT\s+VALID\s*$", text, re.I)
    text = text[: unchecked.start()] if unchecked else text
    defs = parse_sql(f"CREATE TABLE x ({text})").this.expressions
    parts = [p for d in defs for p in (d.expressions if isinstance(d, exp.Constraint) else [d])]
    taken = constraint_names(item)
    if len(defs) == 1 and parts and isinstance(parts[0], exp.ForeignKey):
        add_foreign_key(env, item, defs, taken, valid=not unchecked)
        return Result(TAG)
    if len(defs) == 1 and parts and isinstance(parts[0], KEYS):
        if unchecked:
            raise PlanError(
                "PRIMARY KEY and UNIQUE constraints cannot be marked NOT VALID", sqlstate="0A000"
            )
        add_key(env, item, defs, taken)
        return Result(TAG)
    if len(defs) != 1 or not parts or not isinstance(parts[0], exp.CheckColumnConstraint):
        raise PlanError(
            "ALTER TABLE … ADD CONSTRAINT takes CHECK, FOREIGN KEY, PRIMARY KEY or UNIQUE "
            "(EXCLUDE is not supported)",
            sqlstate="0A000",
        )
    table = split_name(item.name)[1]
    (check,) = table_checks(table, defs, schema_of(item), taken)
    check_rows = lambda table: _check_rows(env, table, check)  # noqa: E731
    add_checked(env, item, "checks", check, check_rows, valid=not unchecked)
    return Result(TAG)


def validate_constraint(env: Environment, item: Item, g: dict[str, Any]) -> Result:
    """VALIDATE CONSTRAINT name: the table's rows checked against a CHECK or FOREIGN KEY
    constraint added NOT VALID (23514, 23503), which then counts as validated; one that was
    never NOT VALID is left as it is."""
    name, table = g["column"], split_name(item.name)[1]
    checks = {c.name: c for c in checks_of(item)}
    fks = {f.name: f for f in foreign_keys_of(item)}
    if name not in checks and name not in fks:
        if name in constraint_names(item):
            message = f'constraint "{name}" of relation "{table}" is not a foreign key or check'
            raise PlanError(message + " constraint", sqlstate="42809")
        raise PlanError(
            f'constraint "{name}" of relation "{table}" does not exist', sqlstate="42704"
        )
    if name in not_valid(item):
        if name in checks:
            _check_rows(env, item, checks[name])
        else:
            fk_rows_checked(env, item, fks[name])

        def change(state: CatalogState) -> tuple[CatalogState, None]:
            now = state.items[item.id]
            kept = sorted(not_valid(now) - {name})
            return state.with_item(replace(now, options={**now.options, "not_valid": kept})), None

        env.catalog.change(change)
    return Result(TAG)


def _check_rows(env: Environment, item: Item, check: Check) -> None:
    """23514 if a row of the table fails ``check``."""
    from changeflow.adapter.resolver import schema_of
    from changeflow.adapter.txn_reads import table_rows

    schema = schema_of(item)
    e = planned(check, schema, item.name)
    rows = table_rows(env, item)
    for row, count in rows.items():
        if count > 0 and e.eval(row) is False:
            failed = violation(check, row, schema, item.name)
            raise EvalError(
                f'check constraint "{check.name}" of relation "{split_name(item.name)[1]}" '
                "is violated by some row",
                sqlstate="23514",
                table=item.name,
                constraint=check.name,
            ) from failed


def drop_constraint(env: Environment, item: Item, g: dict[str, Any]) -> Result:
    """DROP CONSTRAINT [IF EXISTS] name: a CHECK, FOREIGN KEY, PRIMARY KEY or UNIQUE
    constraint."""
    name = g["column"]
    if drop_foreign_key(env, item, name):
        return Result(TAG)
    checks = [c.name for c in checks_of(item)]
    keys = [u[0] for u in item.options.get("unique") or []]
    if name not in checks and name not in keys:
        if g.get("cie"):
            return Result(TAG)
        raise PlanError(
            f'constraint "{name}" of relation "{split_name(item.name)[1]}" does not exist',
            sqlstate="42704",
        )

    cascade = (g.get("mode") or "").upper() == "CASCADE"

    def change(state: CatalogState) -> tuple[CatalogState, None]:
        state = key_unreferenced(state, state.items[item.id], name, cascade)
        now = state.items[item.id]
        options = dict(now.options)
        options["checks"] = [c for c in options.get("checks") or [] if c[0] != name]
        options["unique"] = [u for u in options.get("unique") or [] if u[0] != name]
        options["not_valid"] = sorted(not_valid(now) - {name})
        return state.with_item(replace(now, options=options)), None

    env.catalog.change(change)
    return Result(TAG)


NAMED = ("unique", "checks", "foreign_keys")  # a table's constraint lists, each entry named first


def rename_constraint(env: Environment, item: Item, g: dict[str, Any]) -> Result:
    """RENAME CONSTRAINT old TO new: 42704 if the table has no ``old``, 42710 if it has a
    ``new``, 42P07 if a relation or key of its schema is named ``new`` (a key's index is)."""
    old, new = g["column"], g["new"]
    table = split_name(item.name)[1]
    taken = constraint_names(item)
    if old not in taken:
        raise PlanError(f'constraint "{old}" for table "{table}" does not exist', sqlstate="42704")
    relations = env.catalog.load().relation_names(split_name(item.name)[0])
    if new in relations and any(u[0] == old for u in item.options.get("unique") or []):
        raise PlanError(f'relation "{new}" already exists', sqlstate="42P07")
    if new in taken:
        raise PlanError(
            f'constraint "{new}" for relation "{table}" already exists', sqlstate="42710"
        )

    def change(state: CatalogState) -> tuple[CatalogState, None]:
        now = state.items[item.id]
        options = dict(now.options)
        for key in NAMED:
            options[key] = [[new, *c[1:]] if c[0] == old else c for c in options.get(key) or []]
        options["not_valid"] = sorted(new if n == old else n for n in not_valid(now))
        return state.with_item(replace(now, options=options)), None

    env.catalog.change(change)
    return Result(TAG)


CONSTRAINT_ACTIONS = {
    "drop_constraint": drop_constraint,
    "rename_constraint": rename_constraint,
    "validate_constraint": validate_constraint,
}
