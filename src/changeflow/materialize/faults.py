"""Fault injection for materializations: a driver that crashes or stalls at a protocol event.

:class:`FaultyDriver` wraps any driver. The ``occurrence``-th time it reaches the event
``crash_at`` it crashes: in its own process it exits at once (``os._exit``, no cleanup, as if
killed), in the runtime's process it raises :class:`DriverCrash`. At ``stall_at`` (that time
and every time after) it sleeps ``stall_seconds`` and goes on: a slow driver.
``python -m changeflow.materialize.faults URL EVENT`` serves such a driver on stdin and stdout,
for the Subprocess transport.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from typing import Any

import pyarrow as pa

from changeflow.errors import InvalidInput
from changeflow.failpoints import EXIT_CODE
from changeflow.materialize.driver import Driver
from changeflow.materialize.protocol import DriverState, Open

#: The driver's protocol events, in the order of a transaction.
EVENTS = (
    "after_open",  # the inner driver opened; Opened is not sent yet
    "during_load",  # the inner driver evaluated a Flush's loads; Loaded is not sent yet
    "during_store",  # one batch of stores was handed to the inner driver, more may follow
    "before_start_commit",  # all stores arrived; the inner commit has not begun
    "after_start_commit",  # the inner commit is done; StartedCommit is not sent yet
    "during_acknowledge",  # the inner acknowledge is done; Acknowledged is not sent yet
)


class DriverCrash(RuntimeError):
    """The injected crash of an in-process driver."""


class FaultyDriver(Driver):
    """``inner`` with a crash at ``crash_at`` and stalls at ``stall_at`` (events of
    :data:`EVENTS`): the crash the ``occurrence``-th time its event is reached, a stall that
    time and every time after."""

    def __init__(
        self,
        inner: Driver,
        crash_at: str | None,
        stall_at: str | None = None,
        stall_seconds: float = 0.5,
        occurrence: int = 1,
        exit_process: bool = False,
    ) -> None:
        for event in (crash_at, stall_at):
            if event is not None and event not in EVENTS:
                raise InvalidInput(f"unknown driver event {event!r}; the events are {EVENTS}")
        self.inner = inner
        self.crash_at, self.stall_at, self.stall_seconds = crash_at, stall_at, stall_seconds
        self.occurrence, self.exit_process = occurrence, exit_process
        self.reached: Counter[str] = Counter()
        # the inner driver's traits
        self.at_least_once = inner.at_least_once
        self.delta_only = inner.delta_only
        self.delta_changes = inner.delta_changes
        self.authoritative = inner.authoritative

    def event(self, name: str) -> None:
        """Count ``name``; crash or stall here if it is the chosen occurrence."""
        self.reached[name] += 1
        if name == self.stall_at and self.reached[name] >= self.occurrence:
            self.stall(name)
        if name == self.crash_at and self.reached[name] == self.occurrence:
            if self.exit_process:
                os._exit(EXIT_CODE)
            raise DriverCrash(f"driver crashed {name.replace('_', ' ')} (injected)")

    def stall(self, name: str) -> None:
        """Pause at ``name``: sleep ``stall_seconds``."""
        time.sleep(self.stall_seconds)

    def open(self, request: Open) -> dict[str, Any] | None:
        checkpoint = self.inner.open(request)
        self.event("after_open")
        return checkpoint

    def acknowledge(self) -> DriverState | None:
        state = self.inner.acknowledge()
        self.event("during_acknowledge")
        return state

    def load_batch(self, binding: int, keys: pa.Table) -> pa.Table:
        loaded = self.inner.load_batch(binding, keys)
        self.event("during_load")
        return loaded

    def store_batch(self, binding: int, rows: pa.Table) -> None:
        self.inner.store_batch(binding, rows)
        self.event("during_store")

    def start_commit(self, runtime_checkpoint: dict[str, Any]) -> DriverState | None:
        self.event("before_start_commit")
        state = self.inner.start_commit(runtime_checkpoint)
        self.event("after_start_commit")
        return state

    def close(self) -> None:
        self.inner.close()


def main(argv: list[str] | None = None) -> int:
    """Serve the driver of a URL on stdin and stdout, with a fault."""
    from changeflow.materialize.drivers import open_driver
    from changeflow.materialize.transport import serve_stdio

    parser = argparse.ArgumentParser(prog="python -m changeflow.materialize.faults")
    parser.add_argument("url", help="the target, as for python -m changeflow.materialize.drivers")
    parser.add_argument("crash_at", nargs="?", choices=EVENTS, help="exit at this event")
    parser.add_argument("--stall-at", choices=EVENTS, help="sleep at this event")
    parser.add_argument("--stall-seconds", type=float, default=0.5)
    parser.add_argument("--occurrence", type=int, default=1, help="the n-th time (default 1)")
    args = parser.parse_args(argv)
    driver = FaultyDriver(
        open_driver(args.url),
        args.crash_at,
        args.stall_at,
        args.stall_seconds,
        args.occurrence,
        exit_process=True,
    )
    return serve_stdio(driver)


if __name__ == "__main__":
    sys.exit(main())
