"""``CREATE UNIQUE INDEX``: a unique index of a table is a UNIQUE constraint kept with the
index (its ``unique`` option), enforced on every later write and arbitrating ``ON CONFLICT``
as the table's own constraints are (:mod:`~changeflow.adapter.constraints`), and dropped with
the index or the table. It is built only if the table's rows have no duplicate key (23505).

The rule for writes racing the build: a write is checked against the unique indexes of the
catalog version it was planned on. The build checks the rows, puts the index in the catalog,
then checks the rows again (:func:`confirm`), so a write planned before the index that commits
before that second read is caught there. A write planned before the index that commits after
the second read (a statement in flight across both, or an explicit transaction that wrote the
table before the CREATE UNIQUE INDEX and commits after it) is checked against neither, and can
leave a duplicate key the index does not report. Where that matters, create the index while
no writes to the table are in flight, or declare the constraint with the table."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.constraints import Unique, check_build
from changeflow.adapter.partial_index import compiled
from changeflow.adapter.sql.scope import qualify
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment


def unique_name(on: Item, key: list[str], state: CatalogState | None = None) -> str:
    """PostgreSQL's name of an unnamed index: the table's, its key columns', ``idx``, and a
    number after it while ``state`` has that name in the table's schema."""
    schema, table = split_name(on.name)
    base = "_".join([table, *key, "idx"])
    names = (f"{base}{n or ''}" for n in itertools.count())
    return next(n for n in names if state is None or state.by_name(qualify(schema, n)) is None)


def unique_index(
    env: Environment, on: Item, name: str, key: list[str], where: str | None = None
) -> bool:
    """Check that ``on``'s present rows (those ``where`` holds for, of a partial index) allow
    a unique index ``name`` on ``key`` (23505 if not); True, the index's ``unique`` option."""
    from changeflow.adapter.resolver import CatalogResolver, schema_of

    if on.kind != "table":
        raise PlanError(
            f'cannot create a unique index on {on.kind} "{on.name}"',
            sqlstate="42809" if on.kind == "view" else "0A000",
            detail="A unique index is enforced on the writes of a table.",
        )
    names = [c[0] for c in on.columns]
    predicate = compiled(where, schema_of(on), on.name) if where else None
    u = Unique(split_name(name)[1], tuple(names.index(k) for k in key), where=predicate)
    state = env.catalog.load()
    ts = env.read_ts(on.timeline, {on.id})
    rows = env.evaluate(CatalogResolver(state).plan(on), ts)
    check_build(u, rows.items(), on.name, names)
    return True


def index_constraints(state: CatalogState, item: Item) -> tuple[Unique, ...]:
    """The constraints of the unique indexes of the table ``item``, in the order made: named
    by the index, its key columns found by name (they follow renames and dropped columns)."""
    from changeflow.adapter.resolver import schema_of

    names = [c[0] for c in item.columns]
    indexes = sorted(state.dependents(item.id), key=lambda i: int(i.id.lstrip("u") or 0))
    return tuple(
        Unique(
            split_name(i.name)[1],
            tuple(names.index(k) for k in i.options["key"]),
            index=True,
            where=compiled(i.options["where"], schema_of(item), item.name)
            if i.options.get("where")
            else None,
        )
        for i in indexes
        if i.kind == "index" and i.options.get("unique")
    )


def confirm(env: Environment, item: Item) -> None:
    """Check the unique index ``item`` again now that it is in the catalog, where every
    write from now on checks it: a write planned before it was there may have added a
    duplicate since the first check. If one did, the index is dropped again (23505)."""
    from changeflow.adapter.ddl import release

    on = env.catalog.load().items[item.options["on"]]
    try:
        unique_index(env, on, item.name, list(item.options["key"]))
    except PlanError:
        release(env, env.catalog.change(lambda s: (s.without([item.id]), [item])))
        raise
