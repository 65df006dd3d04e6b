"""Temporary items in the system catalogs, as PostgreSQL shows them: their schemas
(``pg_temp_N``) in pg_namespace, ``relpersistence`` 't' in pg_class and ``LOCAL TEMPORARY``
in information_schema.tables."""

from __future__ import annotations

from typing import Any

from changeflow.adapter.catalog import TEMP_SCHEMA, CatalogState, split_name

PERSISTENCE = 15  # pg_class.relpersistence's place in a row
Rows = dict[str, list[tuple[Any, ...]]]


def schema_names(state: CatalogState) -> list[str]:
    """The schemas created, and the temporary schemas that hold items, by name."""
    temporary = {split_name(i.name)[0] for i in state.items.values() if "temp" in i.options}
    return sorted(set(state.schemas) | {s for s in temporary if TEMP_SCHEMA.fullmatch(s)})


def temporary(rows: Rows) -> Rows:
    """``rows`` with the relations of temporary schemas marked as temporary."""
    spaces = {r[0] for r in rows["pg_namespace"] if TEMP_SCHEMA.fullmatch(r[1])}
    names = {r[1] for r in rows["pg_namespace"] if r[0] in spaces}
    rows["pg_class"] = [
        (*r[:PERSISTENCE], "t", *r[PERSISTENCE + 1 :]) if r[2] in spaces else r
        for r in rows["pg_class"]
    ]
    key = "information_schema.tables"
    rows[key] = [
        (*r[:3], "LOCAL TEMPORARY", *r[4:]) if r[1] in names and r[3] == "BASE TABLE" else r
        for r in rows[key]
    ]
    return rows
