"""The query memory budget's watchdog: one per evaluating thread, kept between its queries; a
query past its budget ends with 53200 and the thread's next query runs as usual."""

from __future__ import annotations

import threading
import time

import pytest

from changeflow.adapter.budget import within_budget
from changeflow.errors import PlanError


def watchdogs() -> set[int]:
    return {t.ident or 0 for t in threading.enumerate() if t.name == "query-memory-budget"}


def grow() -> None:
    """Grows by a MiB a millisecond until the watchdog stops it."""
    kept = []
    while True:
        kept.append(bytearray(1 << 20))
        time.sleep(0.001)


def test_one_threads_queries_share_a_watchdog_that_ends_with_the_thread() -> None:
    seen: set[int] = set()
    outcomes: list[object] = []

    def queries() -> None:
        for _ in range(3):
            outcomes.append(within_budget(1 << 40, lambda: seen.update(watchdogs()) or 1))
        with pytest.raises(PlanError) as raised:
            within_budget(8 << 20, grow)
        outcomes.append(raised.value.sqlstate)
        outcomes.append(within_budget(1 << 40, lambda: seen.update(watchdogs()) or 2))

    before = watchdogs()
    thread = threading.Thread(target=queries)
    thread.start()
    thread.join()
    assert outcomes == [1, 1, 1, "53200", 2]
    mine = seen - before
    assert len(mine) == 1
    ended = [t for t in threading.enumerate() if t.ident in mine]
    for t in ended:
        t.join(timeout=60)  # it looks for its thread's end every second
    assert not any(t.is_alive() for t in ended)
