"""The query memory budget's watchdog: one thread for the process, a query past its budget
stopped with 53200 and the others left alone."""

from __future__ import annotations

import threading
import time

import pytest

from changeflow.adapter.budget import within_budget
from changeflow.errors import PlanError


def watchdogs() -> int:
    return sum(t.name == "query-memory-budget" for t in threading.enumerate())


def grow() -> None:
    """Grows by a MiB a millisecond until the watchdog stops it."""
    kept = []
    while True:
        kept.append(bytearray(1 << 20))
        time.sleep(0.001)


def test_concurrent_queries_share_one_watchdog_and_only_the_grower_is_stopped() -> None:
    inside, release = threading.Barrier(5), threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def query() -> None:
        def run() -> int:
            inside.wait()
            release.wait()
            return 1

        try:
            within_budget(1 << 40, run)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=query) for _ in range(4)]
    for t in threads:
        t.start()
    inside.wait()
    seen.append(watchdogs())
    with pytest.raises(PlanError) as raised:
        within_budget(8 << 20, grow)
    assert raised.value.sqlstate == "53200"
    release.set()
    for t in threads:
        t.join()
    assert errors == []
    assert seen == [1]
    assert within_budget(1 << 40, lambda: 7) == 7
    assert watchdogs() <= 1
