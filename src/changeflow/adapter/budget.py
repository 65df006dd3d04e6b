"""A query's memory budget: evaluation ends with SQLSTATE 53200 (out of memory) once the
process has grown by more than the budget since the query began, instead of growing until the
machine kills the process.

The operators evaluate in Python between their Arrow calls, so a watchdog thread samples the
process's resident memory every :data:`SAMPLE_SECONDS` and, past the budget, raises
:class:`BudgetExceeded` in the evaluating thread (``PyThreadState_SetAsyncExc``), which unwinds
it like any exception. The measure is the process's growth, so a query running beside another
that grows may be the one stopped; the budget is a guard against runaway queries, not an
accounting of each query's own allocations.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from typing import TypeVar

from changeflow.errors import PlanError

T = TypeVar("T")
SAMPLE_SECONDS = 0.02
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
    def __init__(self, budget: int, thread_id: int) -> None:
        super().__init__(name="query-memory-budget", daemon=True)
        self.budget, self.thread_id = budget, thread_id
        self.start_bytes = resident_bytes()
        self.peak = self.start_bytes
        self.lock = threading.Lock()
        self.active = True
        self.fired = False
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_SECONDS):
            now = resident_bytes()
            self.peak = max(self.peak, now)
            if now - self.start_bytes <= self.budget:
                continue
            with self.lock:
                if self.active:
                    self.fired = True
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(self.thread_id), ctypes.py_object(BudgetExceeded)
                    )
            return

    def stop(self) -> None:
        with self.lock:
            self.active = False
            if self.fired:  # not delivered yet: take it back
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), None)
        self.done.set()


def within_budget(budget: int | None, run: Callable[[], T], what: str = "the query") -> T:
    """``run()``, ended with a 53200 PlanError if the process grows by more than ``budget``
    bytes meanwhile (None: no budget)."""
    if budget is None or not resident_bytes():
        return run()
    watchdog = _Watchdog(budget, threading.get_ident())
    watchdog.start()
    try:
        try:
            return run()
        finally:
            watchdog.stop()
    except BudgetExceeded:
        grown = (watchdog.peak - watchdog.start_bytes) >> 20
        raise PlanError(
            f"out of memory: {what} made the server grow by {grown} MB, past its budget of "
            f"{budget >> 20} MB; join the tables on their keys (a FROM of several tables "
            "without equalities between them is a cross product), filter, or raise the "
            "budget (changeflow serve --query-memory)",
            sqlstate="53200",
        ) from None
