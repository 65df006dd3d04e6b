"""information_schema's ``check_constraints`` and the NOT NULL rows of its
``table_constraints``, as PostgreSQL 15 lists them: each CHECK constraint with its clause as
``pg_get_constraintdef`` shows it (without ``CHECK ``), and each NOT NULL column of a table as
a CHECK constraint named ``<schema oid>_<table oid>_<column number>_not_null`` whose clause
is ``column IS NOT NULL``."""

from __future__ import annotations

from typing import Any

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import CatalogState, Item, split_name


def check_rows(
    state: CatalogState, item: Item, database: str
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A table's ``check_constraints`` rows, and its NOT NULL ``table_constraints`` rows."""
    from changeflow.adapter.checks import checks_of
    from changeflow.adapter.deparse import checks_shown
    from changeflow.adapter.system_indexes import relation_oid
    from changeflow.adapter.system_tables import namespace_oid

    schema, rel = split_name(item.name)
    head = (database, schema)
    checks = [
        (*head, c.name, checks_shown(item, c.sql)[0].removeprefix("CHECK "))
        for c in checks_of(item)
    ]
    prefix = f"{namespace_oid(state, schema)}_{relation_oid(item)}"
    listed = [
        (f"{prefix}_{n}_not_null", column)
        for (column, _, nullable), n in zip(item.columns, attnums(item), strict=True)
        if not nullable
    ]
    checks += [(*head, name, f"{column} IS NOT NULL") for name, column in listed]
    constraints = [
        (*head, name, *head, rel, "CHECK", "NO", "NO", "YES", None) for name, _ in listed
    ]
    return checks, constraints
