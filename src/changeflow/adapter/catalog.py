"""The catalog: names bound to items, durable in consensus and changed only by compare-and-set.

Every item (table, source, view, materialized view, index, sink) has a GlobalId (``u1``,
``u2``…) that is never used again, even after the item is dropped: the catalog's ``next_id``
only grows. An item keeps the SQL that created it, its columns, its timeline, the ids it
depends on, and the shard that holds its data (named by its id, so a rename moves nothing).

Several processes on one home share the catalog: :meth:`Catalog.change` reads the latest
version, applies a pure function to it and writes the result iff nobody wrote in between
(else it retries on the new version), so two processes creating one name at once cannot both
win. A change that raises leaves the catalog as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

from changeflow.errors import ChangeflowError, PlanError
from changeflow.storage.consensus import Consensus, Decoded, VersionedData

KEY = "adapter/catalog"
T = TypeVar("T")


@dataclass(frozen=True)
class Item:
    """One catalog item. ``columns`` are ``[name, type, nullable]``; ``options`` hold what the
    kind needs (a table's defaults, a source's path and format, a sink's target and key, an
    index's subject and key)."""

    id: str
    name: str
    kind: str
    sql: str
    columns: tuple[tuple[str, str, bool], ...] = ()
    timeline: str = "EpochMilliseconds"
    depends_on: tuple[str, ...] = ()
    shard: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Item:
        value = dict(value)
        value["columns"] = tuple(tuple(c) for c in value["columns"])
        value["depends_on"] = tuple(value["depends_on"])
        return cls(**value)


@dataclass(frozen=True)
class CatalogState:
    """A version of the catalog: the items by id, and the next id to hand out."""

    items: dict[str, Item] = field(default_factory=dict)
    next_id: int = 1

    def by_name(self, name: str) -> Item | None:
        return next((i for i in self.items.values() if i.name == name), None)

    def get(self, name: str, kinds: tuple[str, ...] | None = None) -> Item:
        """The item named ``name`` (of one of ``kinds``); 42P01 if there is none."""
        item = self.by_name(name)
        if item is None or (kinds is not None and item.kind not in kinds):
            what = kinds[0] if kinds and len(kinds) == 1 else "relation"
            raise PlanError(f'{what} "{name}" does not exist', sqlstate="42P01")
        return item

    def dependents(self, item_id: str) -> list[Item]:
        """The items that depend on ``item_id``, directly."""
        return [i for i in self.items.values() if item_id in i.depends_on]

    def closure(self, item_id: str) -> list[Item]:
        """``item_id`` and everything that depends on it, dependents first (a drop order)."""
        seen: dict[str, Item] = {}

        def visit(i: str) -> None:
            for d in self.dependents(i):
                if d.id not in seen:
                    visit(d.id)
            seen.setdefault(i, self.items[i])

        visit(item_id)
        return list(seen.values())

    def with_item(self, item: Item) -> CatalogState:
        """The state with ``item`` added; 42P07 if its name is taken."""
        taken = self.by_name(item.name)
        if taken is not None and taken.id != item.id:
            raise PlanError(f'{taken.kind} "{item.name}" already exists', sqlstate="42P07")
        return replace(self, items={**self.items, item.id: item})

    def without(self, ids: list[str]) -> CatalogState:
        return replace(self, items={k: v for k, v in self.items.items() if k not in ids})

    def allocate(self) -> tuple[str, CatalogState]:
        """A fresh GlobalId, and the state that will never hand it out again."""
        return f"u{self.next_id}", replace(self, next_id=self.next_id + 1)

    def to_bytes(self) -> bytes:
        items = [i.to_json() for i in self.items.values()]
        return json.dumps({"next_id": self.next_id, "items": items}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> CatalogState:
        value = json.loads(data)
        items = [Item.from_json(i) for i in value["items"]]
        return cls({i.id: i for i in items}, value["next_id"])


class Catalog:
    """The durable catalog of one home (see the module docstring)."""

    def __init__(self, consensus: Consensus) -> None:
        self.consensus = consensus
        self.decoded = Decoded(consensus, lambda head: CatalogState.from_bytes(head.data))

    def load(self) -> CatalogState:
        return self.decoded.head(KEY)[1] or CatalogState()

    def change(self, fn: Callable[[CatalogState], tuple[CatalogState, T]]) -> T:
        """Apply ``fn`` to the latest state and store what it returns, atomically; return
        ``fn``'s second value. ``fn`` must be pure: it runs again if another writer won."""
        for _ in range(1000):
            head = self.consensus.head(KEY)
            state = CatalogState() if head is None else CatalogState.from_bytes(head.data)
            new, result = fn(state)
            seqno = head.seqno if head else None
            if self.consensus.compare_and_set(
                KEY, seqno, VersionedData((seqno or 0) + 1, new.to_bytes())
            ):
                if seqno and seqno % 64 == 0:
                    self.consensus.truncate(KEY, seqno)
                return result
        raise ChangeflowError("the catalog changed 1000 times under one change; try again")
