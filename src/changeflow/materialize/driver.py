"""The driver interface, and the runner that speaks the protocol on a driver's behalf.

A driver is a small class (open, acknowledge, load, store, start_commit); :func:`serve` owns the
protocol's sequence and checks, so no driver re-implements it. Transports carry the messages:
in-process (called directly) or out-of-process (on a subprocess's stdin and stdout).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Protocol

import pyarrow as pa

from changeflow.errors import ProtocolViolation
from changeflow.materialize.columns import (
    DELETED,
    EXISTS,
    KEY_META,
    documents,
    keys_table,
    stores_table,
)
from changeflow.materialize.protocol import (
    Acknowledge,
    Acknowledged,
    Binding,
    Doc,
    DriverState,
    Flush,
    Flushed,
    Key,
    Load,
    LoadBatch,
    Loaded,
    LoadedBatch,
    Message,
    Open,
    Opened,
    StartCommit,
    StartedCommit,
    Store,
    StoreBatch,
    name_of,
)


class Driver(ABC):
    """A target store. The runner calls these methods in protocol order.

    Loads and stores come as Arrow tables (:meth:`load_batch`, :meth:`store_batch`; their
    shapes are in :mod:`~changeflow.materialize.columns`). A driver that works a row at a time
    implements :meth:`load` and :meth:`store` instead, and the defaults convert at its edge.
    """

    #: Recovery-log drivers without transactions apply a retried transaction again: a ``sum``
    #: through them could count twice, so the runtime refuses it unless forced.
    at_least_once: bool = False
    #: Push-only drivers never receive Load: every binding runs in delta-updates mode.
    delta_only: bool = False
    #: In delta-updates mode the store keeps every change as a row of the data columns plus
    #: ``_time`` and ``_diff`` (a change table), rather than a document per key and transaction.
    delta_changes: bool = False
    #: The store keeps the runtime checkpoint with its data (and fences older instances): its
    #: checkpoint from Open wins over the recovery log's.
    authoritative: bool = False
    #: The store upserts and deletes by key by itself (Stores with ``_exists`` null): without
    #: reductions the runtime sends no Load at all.
    upserts: bool = False

    @abstractmethod
    def open(self, request: Open) -> dict[str, Any] | None:
        """Connect and prepare the targets; return the stored runtime checkpoint, if the store
        is authoritative (and fence off older instances), else None."""

    def acknowledge(self) -> DriverState | None:
        """The previous transaction committed to the recovery log: finish it (an idempotent
        apply of staged effects, for example)."""
        return None

    def load_batch(self, binding: int, keys: pa.Table) -> pa.Table:
        """The stored rows (every column) of the keys in ``keys``; keys that do not exist are
        left out. By default through :meth:`load`."""
        found = self.load(binding, list(zip(*keys.to_pydict().values(), strict=True)))
        return pa.Table.from_pylist([doc for _, doc in found])

    def store_batch(self, binding: int, rows: pa.Table) -> None:
        """Stage the rows (and deletes) of the current transaction. By default through
        :meth:`store`, a row at a time."""
        key = json.loads(rows.schema.metadata[KEY_META])
        for row in rows.to_pylist():
            exists, delete = bool(row.pop(EXISTS)), row.pop(DELETED)
            doc = None if delete else row
            self.store(Store(binding, tuple(row[k] for k in key), doc, exists, delete))

    def load(self, binding: int, keys: list[Key]) -> Iterable[tuple[Key, Doc]]:
        """The stored documents of ``keys``, for a driver that loads a key at a time."""
        raise NotImplementedError(f"{type(self).__name__} implements neither load nor load_batch")

    def store(self, request: Store) -> None:
        """Stage one document (or a delete), for a driver that stores a row at a time."""
        raise NotImplementedError(f"{type(self).__name__} implements neither store nor store_batch")

    @abstractmethod
    def start_commit(self, runtime_checkpoint: dict[str, Any]) -> DriverState | None:
        """Process every staged store and commit (or prepare) the transaction with the
        runtime checkpoint; return an update of the driver checkpoint."""

    def close(self) -> None:  # noqa: B027 - most drivers have nothing to release
        """Release connections."""


class Channel(Protocol):
    """The driver's end of a transport."""

    def receive(self) -> Message | None: ...  # None: the runtime closed the stream

    def send(self, message: Message) -> None: ...


class Runner:
    """The driver's side of the protocol: checks each request's order, calls the driver and
    returns the responses. Loads are deferred to Flush, as the protocol allows.

    Per-key Loads and Stores are gathered into tables for the driver (a repeated Store of a
    key keeps its first ``exists`` and its last document) and per-key Loads answered per key.
    """

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.phase = "open"
        self.bindings: tuple[Binding, ...] = ()
        self.load_keys: dict[int, list[Key]] = {}  # per-key Loads, by binding
        self.load_tables: dict[int, list[pa.Table]] = {}  # LoadBatch tables, by binding
        self.stores: dict[int, dict[Key, tuple[Key, Doc | None, bool, bool]]] = {}

    def handle(self, request: Message) -> list[Message]:
        driver, phase = self.driver, self.phase
        match phase, request:
            case "open", Open():
                self.bindings = request.bindings
                self.phase = "acknowledge"
                return [Opened(driver.open(request))]
            case "acknowledge", Acknowledge():
                self.phase = "load"
                return [Acknowledged(driver.acknowledge())]
            case "load", Load():
                self.load_keys.setdefault(self._index(request.binding), []).append(request.key)
                return []
            case "load", LoadBatch():
                self.load_tables.setdefault(self._index(request.binding), []).append(request.keys)
                return []
            case "load", Flush():
                loaded = self._loads()
                self.phase = "store"
                return [*loaded, Flushed()]
            case "store", Store():
                staged = self.stores.setdefault(self._index(request.binding), {})
                key = tuple(request.key)
                exists = staged[key][2] if key in staged else request.exists
                staged[key] = (key, request.doc, exists, request.delete)
                return []
            case "store", StoreBatch():
                self._stores()
                driver.store_batch(self._index(request.binding), request.rows)
                return []
            case "store", StartCommit():
                self._stores()
                self.phase = "acknowledge"
                return [StartedCommit(driver.start_commit(request.runtime_checkpoint))]
        raise ProtocolViolation(f"driver: {name_of(request)} arrived in the {phase} phase")

    def _index(self, binding: int) -> int:
        if not 0 <= binding < len(self.bindings):
            raise ProtocolViolation(
                f"driver: binding {binding} does not exist ({len(self.bindings)} opened)"
            )
        return binding

    def _loads(self) -> list[Message]:
        """Evaluate the queued loads: a LoadedBatch per binding loaded in batches, a Loaded per
        row for per-key Loads."""
        out: list[Message] = []
        for index, tables in self.load_tables.items():
            keys = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            out.append(LoadedBatch(index, self.driver.load_batch(index, keys)))
        for index, keys in self.load_keys.items():
            binding = self.bindings[index]
            rows = self.driver.load_batch(index, keys_table(binding, keys))
            if rows.num_rows:
                out += [Loaded(index, key, doc) for key, doc in documents(binding, rows)]
        self.load_keys.clear()
        self.load_tables.clear()
        return out

    def _stores(self) -> None:
        """Hand the gathered per-key Stores to the driver as tables."""
        for index, staged in self.stores.items():
            self.driver.store_batch(index, stores_table(self.bindings[index], staged.values()))
        self.stores.clear()


def serve(driver: Driver, channel: Channel) -> None:
    """Answer the runtime's requests until it closes the stream; refuse any out of order."""
    runner = Runner(driver)
    try:
        while (request := channel.receive()) is not None:
            for response in runner.handle(request):
                channel.send(response)
    finally:
        driver.close()
