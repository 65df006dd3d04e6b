"""A query's memory budget: evaluation ends with SQLSTATE 53200 (out of memory) once the
process has grown by more than the budget since the query began, instead of growing until the
machine kills the process.

The operators evaluate in Python between their Arrow calls, so one monitor thread samples the
process's resident memory every :data:`SAMPLE_SECONDS` while queries run and, past a query's
budget, raises :class:`BudgetExceeded` in its evaluating thread
(``PyThreadState_SetAsyncExc``), which unwinds it like any exception. The measure is the
process's growth, so a query running beside another that grows may be the one stopped; the
budget is a guard against runaway queries, not an accounting of each query's own allocations.
A query's growth counts from the monitor's first sample after it began (at most
:data:`SAMPLE_SECONDS` later), so a query shorter than that reads no memory figure and wakes
no thread while queries keep coming.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from changeflow.errors import PlanError

T = TypeVar("T")
SAMPLE_SECONDS = 0.02
IDLE_SECONDS = 1.0  # the monitor sleeps once no query has run for this long
DEFAULT_BUDGET = 4 << 30  # bytes a query may make the process grow by
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class BudgetExceeded(Exception):  # noqa: N818 - raised into a thread, turned into a PlanError
    """Raised into the evaluating thread by the watchdog."""


def resident_bytes() -> int:
    """The process's resident memory (0 where /proc is missing: no guard)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


class _Watch:
    """One query's budget, watched by the monitor; its start is the monitor's first sample
    after it began (a query shorter than a sample costs no read of the process's memory)."""

    def __init__(self, budget: int, thread_id: int) -> None:
        self.budget, self.thread_id = budget, thread_id
        self.start_bytes: int | None = None
        self.peak = 0
        self.fired = False


class _Monitor:
    """The one thread that samples the process's memory for every query under a budget; it
    sleeps once no query has run for :data:`IDLE_SECONDS` (a query wakes it then only)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.watched: dict[int, _Watch] = {}
        self.thread: threading.Thread | None = None
        self.idle = True  # waiting for a query (not sampling)

    def watch(self, budget: int) -> _Watch:
        watch = _Watch(budget, threading.get_ident())
        with self.lock:
            self.watched[id(watch)] = watch
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._run, name="query-memory-budget", daemon=True
                )
                self.thread.start()
            if self.idle:
                self.idle = False
                self.wake.notify()
        return watch

    def unwatch(self, watch: _Watch) -> None:
        with self.lock:
            del self.watched[id(watch)]
            if watch.fired:  # not delivered yet: take it back
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(watch.thread_id), None)

    def _run(self) -> None:
        quiet = 0.0  # seconds sampled with no query watched
        while True:
            with self.lock:
                if quiet >= IDLE_SECONDS:
                    self.idle = True
                while self.idle:
                    self.wake.wait()
                    quiet = 0.0
            time.sleep(SAMPLE_SECONDS)
            with self.lock:
                if not self.watched:
                    quiet += SAMPLE_SECONDS
                    continue
                quiet = 0.0
            now = resident_bytes()
            with self.lock:
                for watch in self.watched.values():
                    if watch.start_bytes is None:
                        watch.start_bytes = watch.peak = now
                    watch.peak = max(watch.peak, now)
                    if now - watch.start_bytes > watch.budget and not watch.fired:
                        watch.fired = True
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(watch.thread_id), ctypes.py_object(BudgetExceeded)
                        )


_MONITOR = _Monitor()
_MEASURED = resident_bytes() > 0  # /proc is there


def within_budget(budget: int | None, run: Callable[[], T], what: str = "the query") -> T:
    """``run()``, ended with a 53200 PlanError if the process grows by more than ``budget``
    bytes meanwhile (None: no budget)."""
    if budget is None or not _MEASURED:
        return run()
    watch = _MONITOR.watch(budget)
    try:
        try:
            return run()
        finally:
            _MONITOR.unwatch(watch)
    except BudgetExceeded:
        grown = (watch.peak - (watch.start_bytes or 0)) >> 20
        raise PlanError(
            f"out of memory: {what} made the server grow by {grown} MB, past its budget of "
            f"{budget >> 20} MB; join the tables on their keys (a FROM of several tables "
            "without equalities between them is a cross product), filter, or raise the "
            "budget (changeflow serve --query-memory)",
            sqlstate="53200",
        ) from None
