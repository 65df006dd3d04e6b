"""A clean stop on Ctrl-C: the transport wrapper that lets a transaction finish first.

:class:`Stoppable` wraps the driver's transport. A stop asked for while no transaction is
open raises ``KeyboardInterrupt`` at once; one asked for mid-transaction waits until that
transaction has committed to the recovery log. Either way the driver hears that its last
commit went through (``Acknowledge``) before it closes, so it applies what it staged. A second
stop request raises at once: the recovery log still makes the next run go on exactly once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from changeflow.errors import ChangeflowError
from changeflow.materialize.protocol import Acknowledge, Message, Opened
from changeflow.materialize.transport import Transport


class Stoppable(Transport):
    """``inner``, stopped cleanly by :meth:`interrupt` (see the module docstring)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.between = False  # the last transaction is committed, the next not yet begun
        self.requested = False

    def send(self, message: Message) -> None:
        self.between = False
        self.inner.send(message)

    def receive(self, timeout: float | None = None) -> Message:
        message = self.inner.receive(timeout)
        self.between = isinstance(message, Opened)
        return message

    def committed(self) -> None:
        """A transaction committed to the recovery log: stop here if asked to."""
        self.between = True
        if self.requested:
            raise KeyboardInterrupt

    def interrupt(self, signum: int = signal.SIGINT, frame: Any = None) -> None:
        """Ask for a stop (a SIGINT handler): at once between transactions or the second time."""
        was, self.requested = self.requested, True
        if self.between or was:
            raise KeyboardInterrupt

    def close(self) -> None:
        try:
            if self.requested and self.between:
                self.inner.send(Acknowledge())
                self.inner.receive(timeout=600)
        except ChangeflowError:
            pass  # the next run acknowledges it
        finally:
            self.inner.close()


@contextmanager
def sigint_stops(stoppable: Stoppable) -> Iterator[None]:
    """Route Ctrl-C to ``stoppable.interrupt`` inside; a no-op off the main thread, where
    Python cannot install signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, stoppable.interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
