"""``ALTER TABLE t ADD [CONSTRAINT name] PRIMARY KEY (…) | UNIQUE (…)``.

As in PostgreSQL: the key is built only if the table's rows allow it (23505 "could not create
unique index", 23502 for a NULL in a primary key's column), a primary key's columns become
NOT NULL, a second primary key is refused (42P16), and an unnamed key is named by the rules of
CREATE TABLE, with a number appended while that name is taken. The key is then enforced on
writes as one declared with the table. Writes racing the change follow the rule of the other
added constraints (:mod:`~changeflow.adapter.alter_column`): checked before and after.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.adapter.alter_column import set_not_null
from changeflow.adapter.catalog import Item, split_name
from changeflow.adapter.constraints import Unique, check_build, table_constraints
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment

KEYS = (exp.PrimaryKey, exp.UniqueColumnConstraint)  # the table constraints added here


def add_key(env: Environment, item: Item, defs: list[exp.Expression], taken: set[str]) -> None:
    """Add the PRIMARY KEY and UNIQUE constraints of ``defs`` (a table constraint, or an added
    column's definition) to table ``item``, whose constraints are named ``taken``."""
    names = [c[0] for c in item.columns]
    table = split_name(item.name)[1]
    for key in table_constraints(table, defs, names):
        item = env.catalog.load().items[item.id]
        existing = [Unique.from_json(u) for u in item.options.get("unique") or []]
        if key.primary and any(u.primary for u in existing):
            raise PlanError(
                f'multiple primary keys for table "{table}" are not allowed', sqlstate="42P16"
            )
        taken = taken | {u.name for u in existing}
        key = replace(key, name=_free_name(env, item, key.name, taken, named=_named(defs)))
        _add(env, item, key)


def _add(env: Environment, item: Item, key: Unique) -> None:
    from changeflow.adapter.txn_reads import table_rows

    def check(table: Item) -> None:
        rows = table_rows(env, table)
        check_build(key, rows.items(), table.name, [c[0] for c in table.columns])

    def keyed(table: Item) -> Item:
        listed = [*(table.options.get("unique") or []), key.to_json()]  # others keep oids
        return replace(table, options={**table.options, "unique": listed})

    columns = [item.columns[i][0] for i in key.columns] if key.primary else []
    set_not_null(env, item, columns, also=keyed, check=check)


def _named(defs: list[exp.Expression]) -> bool:
    return any(isinstance(d, exp.Constraint) for d in defs)


def _free_name(env: Environment, item: Item, name: str, taken: set[str], named: bool) -> str:
    """``name`` if no constraint of the table nor relation or key of its schema has it (for
    a given name: 42P07 if a relation or key has it, else 42710); else PostgreSQL's
    choice for an unnamed key: ``name`` with the first number that makes it free."""
    schema, table = split_name(item.name)
    relations = env.catalog.load().relation_names(schema)
    if named and name in relations:
        raise PlanError(f'relation "{name}" already exists', sqlstate="42P07")
    if named and name in taken:
        raise PlanError(
            f'constraint "{name}" for relation "{table}" already exists', sqlstate="42710"
        )
    n, free = 0, name
    while free in taken or free in relations:
        n += 1
        free = f"{name}{n}"
    return free
