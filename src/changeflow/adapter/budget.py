"""A query's memory budget: evaluation ends with SQLSTATE 53200 (out of memory) once the
process has grown by more than the budget since the query began, instead of growing until the
machine kills the process.

The operators evaluate in Python between their Arrow calls, so a watchdog thread (one per
evaluating thread, kept between its queries) samples the process's resident memory every
:data:`SAMPLE_SECONDS` and, past the budget, raises :class:`BudgetExceeded` in the evaluating
thread (``PyThreadState_SetAsyncExc``), which unwinds it like any exception. The measure is the
process's growth, so a query running beside another that grows may be the one stopped; the
budget is a guard against runaway queries, not an accounting of each query's own allocations.
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
IDLE_SECONDS = 1.0  # how often an unarmed watchdog looks whether its thread has ended
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


class _Watchdog(threading.Thread):
    """The watchdog of one evaluating thread, kept for its next evaluations (starting a thread
    per query cost more than a point query): armed while one runs, waiting between them, and
    ended once its thread has. It raises only into its own thread, one evaluation at a time."""

    def __init__(self, owner: threading.Thread) -> None:
        super().__init__(name="query-memory-budget", daemon=True)
        self.owner = owner
        self.thread_id = threading.get_ident()
        self.lock = threading.Lock()
        self.armed = threading.Event()
        self.budget = self.start_bytes = self.peak = 0
        self.active = self.fired = False

    def arm(self, budget: int) -> None:
        with self.lock:
            self.budget, self.start_bytes = budget, resident_bytes()
            self.peak, self.active, self.fired = self.start_bytes, True, False
        self.armed.set()

    def disarm(self) -> None:
        with self.lock:
            self.active = False
            self.armed.clear()
            if self.fired:  # not delivered yet: take it back
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), None)

    def run(self) -> None:
        while self.owner.is_alive():
            if not self.armed.wait(IDLE_SECONDS):
                continue
            time.sleep(SAMPLE_SECONDS)
            now = resident_bytes()
            with self.lock:
                if not self.active or self.fired:  # done with (or stopping) this evaluation
                    self.armed.clear()
                    continue
                self.peak = max(self.peak, now)
                if now - self.start_bytes > self.budget:
                    self.fired = True
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(self.thread_id), ctypes.py_object(BudgetExceeded)
                    )


_WATCHDOGS = threading.local()


def _watchdog() -> _Watchdog:
    """This thread's watchdog (started on its first evaluation under a budget)."""
    watchdog = getattr(_WATCHDOGS, "watchdog", None)
    if watchdog is None or not watchdog.is_alive():
        watchdog = _Watchdog(threading.current_thread())
        watchdog.start()
        _WATCHDOGS.watchdog = watchdog
    return watchdog


def within_budget(budget: int | None, run: Callable[[], T], what: str = "the query") -> T:
    """``run()``, ended with a 53200 PlanError if the process grows by more than ``budget``
    bytes meanwhile (None: no budget)."""
    if budget is None or not resident_bytes():
        return run()
    watchdog = _watchdog()
    watchdog.arm(budget)
    try:
        try:
            return run()
        finally:
            watchdog.disarm()
    except BudgetExceeded:
        grown = (watchdog.peak - watchdog.start_bytes) >> 20
        raise PlanError(
            f"out of memory: {what} made the server grow by {grown} MB, past its budget of "
            f"{budget >> 20} MB; join the tables on their keys (a FROM of several tables "
            "without equalities between them is a cross product), filter, or raise the "
            "budget (changeflow serve --query-memory)",
            sqlstate="53200",
        ) from None
