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
import os
import re
import socket
from collections.abc import Callable
from contextvars import ContextVar
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


PUBLIC = "public"
SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "mz_catalog")


SEARCH_PATH: ContextVar[tuple[str, ...]] = ContextVar("search_path", default=(PUBLIC,))
# the settings of the session planning a statement (current_setting, set_config)
_PINNED: ContextVar[tuple[Catalog, CatalogState] | None] = ContextVar("pinned", default=None)
SESSION_SETTINGS: ContextVar[dict[str, str] | None] = ContextVar("settings", default=None)


@dataclass
class TempSchema:
    """A session's temporary schema: ``pg_temp_N`` ("" until it makes one), the process and
    session that own it, and its tables' ON COMMIT actions (by id: ``delete`` or ``drop``)."""

    name: str = ""
    owner: dict[str, Any] = field(default_factory=dict)
    on_commit: dict[str, str] = field(default_factory=dict)
    filled: set[str] = field(default_factory=set)  # by CREATE TABLE … AS, not by a write


TEMP: ContextVar[TempSchema | None] = ContextVar("temp", default=None)  # None: no session
TEMP_SCHEMA = re.compile(r"pg_temp(?:_\d+)?")


def temp_name(name: str) -> str | None:
    """``name`` as this session's catalog name if it is in a temporary schema (``pg_temp.t``
    in its own ``pg_temp_N``), "" if in another session's, None if in no temporary schema.
    Outside a session (the host's work) a ``pg_temp_N`` name is taken as it is."""
    schema, dot, rest = name.partition(".")
    mine = TEMP.get()
    if not dot or not TEMP_SCHEMA.fullmatch(schema) or (mine is None and schema != "pg_temp"):
        return None
    if mine is None or not mine.name or schema not in ("pg_temp", mine.name):
        return ""
    return f"{mine.name}.{rest}"


def search_path(setting: str) -> tuple[str, ...]:
    """The schemas of a ``search_path`` setting (``"$user", public`` or ``'s', public``).
    An empty one is taken as ``public``: pg_dump's scripts set it and name every object with
    its schema, and a name in public is stored without it, so ``public.t`` is read as ``t``
    (where PostgreSQL would find no unqualified name at all)."""
    out = []
    for part in setting.split(","):
        part = part.strip().strip("'").strip()
        if part.startswith('"') and part.endswith('"') and len(part) > 1:
            out.append(part[1:-1].replace('""', '"'))
        elif part:
            out.append(part.lower())
    return tuple(out) or (PUBLIC,)


def qualified(name: str) -> str:
    """A catalog name that :meth:`CatalogState.find` reads back as that item whatever the
    search path (``public.t`` for public's ``t``)."""
    return name if "." in name else f"{PUBLIC}.{name}"


def split_name(name: str) -> tuple[str, str]:
    """An item's name as its schema and its name there: ``s.t`` is ``t`` in schema ``s``;
    a name without a schema is in ``public``."""
    schema, dot, rest = name.partition(".")
    return (schema, rest) if dot else (PUBLIC, name)


def already_exists(kind: str, name: str) -> PlanError:
    """42P07 for a name an item of ``kind`` has: PostgreSQL's ``relation "t" already exists``
    (the name without its schema) for a table, view, index or sequence."""
    what = kind if kind in ("source", "sink") else "relation"
    return PlanError(f'{what} "{split_name(name)[1]}" already exists', sqlstate="42P07")


@dataclass(frozen=True)
class CatalogState:
    """A version of the catalog: the items by id (an item of a schema other than public is
    named ``schema.name``), the schemas created (name -> number, never reused), and the next
    id to hand out."""

    items: dict[str, Item] = field(default_factory=dict)
    next_id: int = 1
    schemas: dict[str, int] = field(default_factory=dict)
    hidden: dict[str, Item] = field(default_factory=dict)  # dropped by transactions still open
    access: dict[str, Any] = field(default_factory=dict)  # roles, memberships, schema grants

    def by_name(self, name: str) -> Item | None:
        """The item whose catalog name is ``name`` exactly (another session's temporary
        items are not found)."""
        if (temp := temp_name(name)) is not None:
            name = temp
        elif name.startswith(f"{PUBLIC}."):  # public's items are named without it
            name = name[len(PUBLIC) + 1 :]
        return next((i for i in self.items.values() if i.name == name), None)

    def find(self, name: str) -> Item | None:
        """The item a statement means by ``name``: a qualified name (``s.t``, ``public.t``) is
        looked up as it is, an unqualified one in each schema of the search path in turn."""
        schema, dot, rest = name.partition(".")
        if dot:
            return self.by_name(rest if schema == PUBLIC else name)
        mine, path = TEMP.get(), SEARCH_PATH.get()
        if mine is None or not mine.name:
            path = tuple(p for p in path if p != "pg_temp")
        elif "pg_temp" not in path:  # first unless the path places it, as PostgreSQL does
            path = ("pg_temp", *path)
        for schema in path:
            found = self.by_name(name if schema == PUBLIC else f"{schema}.{name}")
            if found is not None:
                return found
        return None

    def creation_name(self, name: str) -> str:
        """The catalog name of an item created as ``name``: in the first schema of the search
        path that exists, unless ``name`` names its schema; 3F000 if none does."""
        if "." in name:
            temp = temp_name(name)
            if temp == "":
                raise PlanError(
                    "cannot create relations in temporary schemas of other sessions",
                    sqlstate="0A000",
                )
            if temp is None and name.startswith(f"{PUBLIC}."):
                return name[len(PUBLIC) + 1 :]  # public's items are named without it
            return name if temp is None else temp
        for schema in SEARCH_PATH.get():
            if schema == PUBLIC or schema in self.schemas:
                return name if schema == PUBLIC else f"{schema}.{name}"
        raise PlanError("no schema has been selected to create in", sqlstate="3F000")

    def get(self, name: str, kinds: tuple[str, ...] | None = None) -> Item:
        """The item a statement names ``name`` (of one of ``kinds``); 42P01 if there is none."""
        item = self.find(name)
        if item is None or (kinds is not None and item.kind not in kinds):
            what = kinds[0] if kinds and len(kinds) == 1 else "relation"
            raise PlanError(f'{what} "{name}" does not exist', sqlstate="42P01")
        return item

    def elsewhere(self, name: str) -> bool:
        """Does ``name`` name another session's temporary item?"""
        return temp_name(name) == "" and any(i.name == name for i in self.items.values())

    def visible(self) -> list[Item]:
        """The items, but other sessions' temporary ones."""
        return [i for i in self.items.values() if "temp" not in i.options or temp_name(i.name)]

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
        """The state with ``item`` added; 42P07 if its name is taken, 3F000 if its schema
        does not exist."""
        schema = split_name(item.name)[0]
        if TEMP_SCHEMA.fullmatch(schema):
            mine, old = TEMP.get(), self.items.get(item.id)
            owner = item.options.get("temp") or (old.options.get("temp") if old else None)
            if owner is None and (mine is None or mine.name != schema):
                raise PlanError(f'schema "{schema}" does not exist', sqlstate="3F000")
            if "temp" not in item.options:
                item = replace(item, options={**item.options, "temp": owner or mine.owner})
        elif schema != PUBLIC and schema not in self.schemas:
            raise PlanError(f'schema "{schema}" does not exist', sqlstate="3F000")
        else:
            _permanent(self, item)
        if self.access and item.id not in self.items and item.id not in self.hidden:
            from changeflow.adapter.privilege_checks import created

            item = created(self, item)  # a created role's new item is its own
        taken = self.by_name(item.name)
        if taken is not None and taken.id != item.id:
            raise already_exists(taken.kind, item.name)
        return replace(self, items={**self.items, item.id: item})

    def without(self, ids: list[str]) -> CatalogState:
        return replace(self, items={k: v for k, v in self.items.items() if k not in ids})

    def hiding(self, ids: list[str]) -> CatalogState:
        """The state with items ``ids`` set aside (no name finds them) for this process's open
        transaction that dropped them: its COMMIT forgets them, its ROLLBACK (or a restart
        after this process is gone) puts them back."""
        aside = {i: replace(self.items[i], options={**self.items[i].options}) for i in ids}
        for item in aside.values():
            item.options["hidden_by"] = this_process()
        return replace(self.without(ids), hidden={**self.hidden, **aside})

    def unhiding(self, ids: list[str], back: bool) -> CatalogState:
        """The state with the hidden items ``ids`` put back (``back``) or forgotten."""
        state = self  # (put back while still hidden: no new item, owned and checked anew)
        for i in ids if back else []:
            options = {k: v for k, v in self.hidden[i].options.items() if k != "hidden_by"}
            state = state.with_item(replace(self.hidden[i], options=options))
        return replace(state, hidden={k: v for k, v in self.hidden.items() if k not in ids})

    def allocate(self) -> tuple[str, CatalogState]:
        """A fresh GlobalId, and the state that will never hand it out again."""
        return f"u{self.next_id}", replace(self, next_id=self.next_id + 1)

    def in_schema(self, schema: str) -> list[Item]:
        return [i for i in self.items.values() if split_name(i.name)[0] == schema]

    def relation_names(self, schema: str) -> set[str]:
        """The names PostgreSQL's pg_class holds in ``schema``: its items' and the indexes
        of its tables' keys (named as the PRIMARY KEY and UNIQUE constraints are)."""
        present = self.in_schema(schema)
        names = {split_name(i.name)[1] for i in present}
        tables = [i for i in present if i.kind == "table"]  # an index's ``unique`` is a flag
        return names | {u[0] for i in tables for u in i.options.get("unique") or []}

    def with_schema(self, schema: str) -> CatalogState:
        """The state with ``schema`` created; 42P06 if it exists."""
        if schema in self.schemas or schema in (PUBLIC, *SYSTEM_SCHEMAS):
            raise PlanError(f'schema "{schema}" already exists', sqlstate="42P06")
        schemas = {**self.schemas, schema: self.next_id}
        return replace(self, schemas=schemas, next_id=self.next_id + 1)

    def to_bytes(self) -> bytes:
        items = [i.to_json() for i in self.items.values()]
        value = {"next_id": self.next_id, "items": items, "schemas": self.schemas}
        if self.hidden:
            value["hidden"] = [i.to_json() for i in self.hidden.values()]
        if self.access:
            value["access"] = self.access
        return json.dumps(value).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> CatalogState:
        value = json.loads(data)
        items = [Item.from_json(i) for i in value["items"]]
        hidden = [Item.from_json(i) for i in value.get("hidden", [])]
        return cls(
            {i.id: i for i in items},
            value["next_id"],
            value.get("schemas", {}),
            {i.id: i for i in hidden},
            value.get("access", {}),
        )


def started(pid: int) -> str | None:
    """The start time of process ``pid`` (/proc), None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def this_process() -> dict[str, Any]:
    """This process, as an owner of items: its host, pid and start time."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "start": started(pid)}


def gone(owner: dict[str, Any]) -> bool:
    """Is the process ``owner`` names, of this host, gone (another host's: not known)?"""
    if owner.get("host") != socket.gethostname():
        return False
    return started(owner.get("pid", 0)) != owner.get("start")


def _permanent(state: CatalogState, item: Item) -> None:
    """Refuse a permanent ``item`` that depends on a temporary one (dropped with its session)."""
    parents = [f[2] for f in item.options.get("foreign_keys") or []]  # their referenced tables
    for d in (*item.depends_on, *parents):
        temporary = state.items.get(d)
        if temporary is None or "temp" not in temporary.options or d == item.id:
            continue
        if item.kind == "table":
            raise PlanError(
                "constraints on permanent tables may reference only permanent tables",
                sqlstate="42P16",
            )
        raise PlanError(
            f'{item.kind} "{item.name}" cannot depend on temporary {temporary.kind} '
            f'"{split_name(temporary.name)[1]}"',
            sqlstate="0A000",
        )


class Catalog:
    """The durable catalog of one home (see the module docstring)."""

    def __init__(self, consensus: Consensus) -> None:
        self.consensus = consensus
        self.decoded = Decoded(consensus, lambda head: CatalogState.from_bytes(head.data))

    def load(self) -> CatalogState:
        """The latest state (the pinned one while :meth:`pinned` runs in this context)."""
        pinned = _PINNED.get()
        if pinned is not None and pinned[0] is self:
            return pinned[1]
        return self.decoded.head(KEY)[1] or CatalogState()

    def pinned(self, fn: Callable[[], T]) -> T:
        """``fn()`` with :meth:`load` giving one state throughout, read once: a statement
        plans and reads against one catalog version and reads its head once."""
        token = _PINNED.set((self, self.load()))
        try:
            return fn()
        finally:
            _PINNED.reset(token)

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


def pinned_state() -> CatalogState | None:
    """The catalog version the running statement is pinned to (None outside one)."""
    pinned = _PINNED.get()
    return None if pinned is None else pinned[1]
