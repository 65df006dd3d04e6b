"""changeflow's own catalog relations, shaped as Materialize's (``mz_catalog`` and, for the
frontiers, ``mz_internal``), where PostgreSQL has no relation for the thing: its tables,
sources, sinks, views and materialized views (each with the tier that maintains it as
``cluster_id``: ``process`` or ``cluster``), and each shard's read and write frontiers. They
are read as Materialize's are, qualified or not (``SELECT * FROM mz_sources``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.system_indexes import relation_oid
from changeflow.adapter.system_tables import namespace_oid

_OBJECT = "id TEXT, oid OID, schema_id TEXT, name TEXT"
MZ_TABLES: dict[str, str] = {
    "mz_catalog.mz_tables": f"{_OBJECT}, owner_id TEXT, create_sql TEXT",
    "mz_catalog.mz_sources": f"{_OBJECT}, type TEXT, envelope_type TEXT, value_format TEXT, "
    "owner_id TEXT, create_sql TEXT",
    "mz_catalog.mz_sinks": f"{_OBJECT}, type TEXT, envelope_type TEXT, format TEXT, "
    "owner_id TEXT, create_sql TEXT",
    "mz_catalog.mz_views": f"{_OBJECT}, definition TEXT, owner_id TEXT, create_sql TEXT",
    "mz_catalog.mz_materialized_views": f"{_OBJECT}, cluster_id TEXT, definition TEXT, "
    "owner_id TEXT, create_sql TEXT",
    "mz_internal.mz_frontiers": "object_id TEXT, replica_id TEXT, read_frontier INTEGER, "
    "write_frontier INTEGER",
}
MZ_SCHEMAS = ("mz_catalog", "mz_internal")
OWNER = "u1"  # the one role's id, as Materialize names its first user role
Frontiers = Callable[[str], "tuple[int | None, int | None]"]


def mz_rows(
    state: CatalogState, definition: Callable[[Item], str], frontiers: Frontiers | None
) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of :data:`MZ_TABLES` (``definition``: a view's query as pg_views shows it;
    ``frontiers``: a shard's since and upper, None for a shard that is gone)."""
    out: dict[str, list[tuple[Any, ...]]] = {name: [] for name in MZ_TABLES}
    for item in state.items.values():
        schema, name = split_name(item.name)
        head = (item.id, relation_oid(item), str(namespace_oid(state, schema)), name)
        if item.kind == "table":
            out["mz_catalog.mz_tables"].append((*head, OWNER, item.sql))
        elif item.kind == "source":
            value = item.options.get("format")
            out["mz_catalog.mz_sources"].append((*head, "cdc", "upsert", value, OWNER, item.sql))
        elif item.kind == "sink":
            target = str(item.options.get("target", ""))
            kind = target.split(":", 1)[0] if ":" in target else "files"
            envelope = "delta" if item.options.get("delta") else "upsert"
            out["mz_catalog.mz_sinks"].append((*head, kind, envelope, None, OWNER, item.sql))
        elif item.kind == "view":
            out["mz_catalog.mz_views"].append((*head, definition(item), OWNER, item.sql))
        elif item.kind == "materialized view":
            tier = item.options.get("tier", "process")
            row = (*head, tier, definition(item), OWNER, item.sql)
            out["mz_catalog.mz_materialized_views"].append(row)
        shard = item.shard or (item.id if item.kind == "materialized view" else None)
        if shard is not None and frontiers is not None:
            since, upper = frontiers(shard)
            out["mz_internal.mz_frontiers"].append((item.id, None, since, upper))
    return out


def qualified_mz(name: str) -> str | None:
    """The schema-qualified name of the mz relation ``name`` names unqualified, if any."""
    for schema in MZ_SCHEMAS:
        if f"{schema}.{name}" in MZ_TABLES:
            return f"{schema}.{name}"
    return None
