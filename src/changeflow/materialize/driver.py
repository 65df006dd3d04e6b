"""The driver interface, and the runner that speaks the protocol on a driver's behalf.

A driver is a small class (open, acknowledge, load, store, start_commit); :func:`serve` owns the
protocol's sequence and checks, so no driver re-implements it. Transports carry the messages:
in-process (a thread) or out-of-process (JSON lines on a subprocess's stdin and stdout).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Protocol

from changeflow.errors import ProtocolViolation
from changeflow.materialize.protocol import (
    Acknowledge,
    Acknowledged,
    Doc,
    DriverState,
    Flush,
    Flushed,
    Key,
    Load,
    Loaded,
    Message,
    Open,
    Opened,
    StartCommit,
    StartedCommit,
    Store,
    name_of,
)


class Driver(ABC):
    """A target store. The runner calls these methods in protocol order."""

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

    @abstractmethod
    def open(self, request: Open) -> dict[str, Any] | None:
        """Connect and prepare the targets; return the stored runtime checkpoint, if the store
        is authoritative (and fence off older instances), else None."""

    def acknowledge(self) -> DriverState | None:
        """The previous transaction committed to the recovery log: finish it (an idempotent
        apply of staged effects, for example)."""
        return None

    @abstractmethod
    def load(self, binding: int, keys: list[Key]) -> Iterable[tuple[Key, Doc]]:
        """The stored documents of ``keys``; keys that do not exist are left out."""

    @abstractmethod
    def store(self, request: Store) -> None:
        """Stage one document (or a delete) of the current transaction."""

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
    returns the responses. Loads are deferred to Flush, as the protocol allows."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.phase = "open"
        self.queued: dict[int, list[Key]] = {}

    def handle(self, request: Message) -> list[Message]:
        driver, phase = self.driver, self.phase
        # the per-key requests first, without the match below
        kind = type(request)
        if kind is Store and phase == "store":
            driver.store(request)
            return []
        if kind is Load and phase == "load":
            queued = self.queued.get(request.binding)
            if queued is None:
                self.queued[request.binding] = [request.key]
            else:
                queued.append(request.key)
            return []
        match phase, request:
            case "open", Open():
                self.phase = "acknowledge"
                return [Opened(driver.open(request))]
            case "acknowledge", Acknowledge():
                self.phase = "load"
                return [Acknowledged(driver.acknowledge())]
            case "load", Load():
                self.queued.setdefault(request.binding, []).append(request.key)
                return []
            case "load", Flush():
                loaded: list[Message] = [
                    Loaded(binding, tuple(key), doc)
                    for binding, keys in self.queued.items()
                    for key, doc in driver.load(binding, keys)
                ]
                self.queued.clear()
                self.phase = "store"
                return [*loaded, Flushed()]
            case "store", Store():
                driver.store(request)
                return []
            case "store", StartCommit():
                self.phase = "acknowledge"
                return [StartedCommit(driver.start_commit(request.runtime_checkpoint))]
        raise ProtocolViolation(f"driver: {name_of(request)} arrived in the {phase} phase")


def serve(driver: Driver, channel: Channel) -> None:
    """Answer the runtime's requests until it closes the stream; refuse any out of order."""
    runner = Runner(driver)
    try:
        while (request := channel.receive()) is not None:
            for response in runner.handle(request):
                channel.send(response)
    finally:
        driver.close()
