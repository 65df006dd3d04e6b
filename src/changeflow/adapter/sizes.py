"""Relation sizes for catalog queries (psql's ``\\dt+``): ``pg_table_size``,
``pg_relation_size`` and ``pg_total_relation_size`` of a table, source or materialized view are
the bytes of its shard's live blobs (the batches its state refers to, a table's with the writes
acknowledged before; blobs not yet collected are not counted); a view, and an index (arranged
in memory), take 0 bytes; ``pg_database_size`` is the sum of them all. ``pg_size_pretty`` is
PostgreSQL's."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from changeflow.adapter.catalog import CatalogState, Item
from changeflow.adapter.sql.statements import name as catalog_name
from changeflow.adapter.system_indexes import indexes, relation_oid
from changeflow.adapter.system_tables import KINDS
from changeflow.errors import ChangeflowError
from changeflow.storage import Storage

STORED = ("table", "source", "materialized view")  # the kinds whose rows are in a shard
# pg_size_pretty's units: name, the size from which the next one is used, half-rounded, bits
_UNITS = [
    ("bytes", 10 * 1024, False, 0),
    ("kB", 20 * 1024 - 1, True, 10),
    ("MB", 20 * 1024 - 1, True, 20),
    ("GB", 20 * 1024 - 1, True, 30),
    ("TB", 20 * 1024 - 1, True, 40),
    ("PB", 20 * 1024 - 1, True, 50),
]


def shard_sizes(env: Any) -> Callable[[str], int]:
    """A shard's bytes in the open home ``env``, a table's once the writes acknowledged before
    are applied to it (they wait in the write log for a reader); its ``frontiers`` too."""

    def applied(shard: str) -> None:
        item = env.catalog.load().items.get(shard)
        if item is not None and item.kind == "table":
            env.log.ready({shard}, env.read_ts(item.timeline, [shard]))

    def size(shard: str) -> int:
        applied(shard)
        return shard_bytes(env.storage, shard)

    def frontiers(shard: str) -> tuple[int | None, int | None]:
        """The shard's since and upper (None: closed, or a shard that is gone)."""
        applied(shard)
        try:
            state = env.storage.state(shard)
        except ChangeflowError:
            return None, None
        return _first(state.since), _first(state.upper)

    size.frontiers = frontiers  # type: ignore[attr-defined]  (for mz_internal.mz_frontiers)
    return size


def _first(frontier: Any) -> int | None:
    elements = list(getattr(frontier, "elements", frontier))
    return int(elements[0]) if elements else None


def shard_bytes(storage: Storage, shard: str) -> int:
    """The bytes of the blobs the shard's state refers to (0 for a shard that is gone)."""
    try:
        state = storage.state(shard)
    except ChangeflowError:
        return 0
    keys = state.referenced()
    return sum(m.size for m in storage.blob.list(state.id) if m.key in keys)


def size_pretty(size: int | Decimal | None) -> str | None:
    """``pg_size_pretty``: bytes below 10 kB, then kB, MB, GB, TB, PB half-rounded."""
    if size is None:
        return None
    value = int(size)
    for i, (unit, limit, rounded, bits) in enumerate(_UNITS):
        last = i + 1 == len(_UNITS)
        if last or abs(value) < limit:
            if rounded:
                value = _truncated(value + (-1 if value < 0 else 1), 2)
            return f"{value} {unit}"
        _, _, next_rounded, next_bits = _UNITS[i + 1]
        value = _truncated(value, 1 << (next_bits - bits - next_rounded + rounded))
    raise AssertionError("unreachable")


def _truncated(value: int, divisor: int) -> int:
    """``value / divisor`` rounded toward zero, as C's integer division."""
    quotient = abs(value) // divisor
    return -quotient if value < 0 else quotient


def size_functions(
    state: CatalogState, sizes: Callable[[str], int] | None
) -> dict[str, Callable[..., Any]]:
    """The size functions of one catalog query (``sizes``: a shard's bytes; None: the sizes
    are unknown, NULL)."""
    items = {relation_oid(i): i for i in state.items.values() if i.kind in KINDS}
    index_oids = {i.oid for i in indexes(state)}

    def item_of(relation: Any) -> Item | int | None:
        if isinstance(relation, str) and not relation.isdigit():
            found = state.find(catalog_name(relation))
            return found if found is not None and found.kind in KINDS else None
        oid = int(relation)
        return items.get(oid, 0 if oid in index_oids else None)

    def size(relation: Any, fork: Any = "main") -> int | None:
        if relation is None or sizes is None:
            return None
        item = item_of(relation)
        if item is None or isinstance(item, int):
            return item
        if fork != "main" or item.kind not in STORED:
            return 0
        return sizes(item.shard or item.id)

    def indexes_size(relation: Any) -> int | None:
        return None if relation is None or item_of(relation) is None else 0

    def database_size(database: Any) -> int | None:
        if database is None or sizes is None:
            return None
        return sum(sizes(i.shard or i.id) for i in items.values() if i.kind in STORED)

    return {
        "pg_table_size": size,
        "pg_relation_size": size,
        "pg_total_relation_size": size,
        "pg_indexes_size": indexes_size,
        "pg_database_size": database_size,
        "pg_size_pretty": size_pretty,
    }
