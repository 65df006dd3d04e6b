"""A query's memory budget: evaluation ends with SQLSTATE 53200 (out of memory) once the
process has grown by more than the budget since the query began, instead of growing until the
machine kills the process.

The operators evaluate in Python between their Arrow calls, so a watchdog thread (one per
process) samples the process's resident memory every :data:`SAMPLE_SECONDS` and, past the
budget, raises :class:`BudgetExceeded` in the evaluating thread (``PyThreadState_SetAsyncExc``),
which unwinds it like any exception. The measure is the process's growth, so a query running
beside another that grows may be the one stopped; the budget is a guard against runaway
queries, not an accounting of each query's own allocations.
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
    """One evaluation under a budget: its thread, and the memory it began with."""

    def __init__(self, budget: int, thread_id: int) -> None:
        self.budget, self.thread_id = budget, thread_id
        self.start_bytes = resident_bytes()
        self.peak = self.start_bytes
        self.active = True
        self.fired = False


class _Watchdog:
    """The process's one watchdog thread: samples resident memory every
    :data:`SAMPLE_SECONDS` while evaluations are watched (a thread per query cost more than a
    point query), and raises :class:`BudgetExceeded` into those past their budget."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.watched: set[_Watch] = set()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None

    def watch(self, budget: int) -> _Watch:
        watch = _Watch(budget, threading.get_ident())
        with self.lock:
            self.watched.add(watch)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(
                    target=self._run, name="query-memory-budget", daemon=True
                )
                self.thread.start()
        self.wake.set()
        return watch

    def stop(self, watch: _Watch) -> None:
        with self.lock:
            self.watched.discard(watch)
            watch.active = False
            if watch.fired:  # not delivered yet: take it back
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(watch.thread_id), None)

    def _run(self) -> None:
        while True:
            self.wake.wait()
            time.sleep(SAMPLE_SECONDS)
            now = resident_bytes()
            with self.lock:
                if not self.watched:
                    self.wake.clear()
                for watch in list(self.watched):
                    watch.peak = max(watch.peak, now)
                    if now - watch.start_bytes > watch.budget and not watch.fired:
                        watch.fired = True
                        self.watched.discard(watch)
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(watch.thread_id), ctypes.py_object(BudgetExceeded)
                        )


_WATCHDOG = _Watchdog()


def within_budget(budget: int | None, run: Callable[[], T], what: str = "the query") -> T:
    """``run()``, ended with a 53200 PlanError if the process grows by more than ``budget``
    bytes meanwhile (None: no budget)."""
    if budget is None or not resident_bytes():
        return run()
    watchdog = _WATCHDOG.watch(budget)
    try:
        try:
            return run()
        finally:
            _WATCHDOG.stop(watchdog)
    except BudgetExceeded:
        grown = (watchdog.peak - watchdog.start_bytes) >> 20
        raise PlanError(
            f"out of memory: {what} made the server grow by {grown} MB, past its budget of "
            f"{budget >> 20} MB; join the tables on their keys (a FROM of several tables "
            "without equalities between them is a cross product), filter, or raise the "
            "budget (changeflow serve --query-memory)",
            sqlstate="53200",
        ) from None
