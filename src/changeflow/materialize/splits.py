"""A materialization split by key range: one runtime, driver and connection per range.

Each range is a task split of its own (see :mod:`~changeflow.materialize.keyrange`): it reads
the shard, keeps the updates of its keys, and commits them with its own checkpoint and fence
(in the target, for a SQL target: a row per range of ``changeflow_checkpoints``; in the
recovery log under the range's qualified name), so each is exactly once by itself, and as
the ranges share no key, so is the whole. The ranges run side by side in threads (the
database drivers and Arrow release the GIL while they work), each at its own pace: a crash
may leave them at different frontiers, and each resumes from its own.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from changeflow.errors import InvalidInput
from changeflow.materialize.keyrange import LAST, KeyRange, check_layout, key_ranges
from changeflow.materialize.recovery import RecoveryLog
from changeflow.materialize.runtime import (
    Materialization,
    Progress,
    Runtime,
    driver_class,
    open_transport,
)
from changeflow.materialize.targets import claim
from changeflow.storage import Storage


def materialize_split(
    storage: Storage,
    spec: Materialization,
    recovery_log: Path,
    splits: int | Sequence[KeyRange],
    out_of_process: bool = False,
    follow: bool = False,
    idle_timeout: float | None = None,
) -> list[Progress]:
    """Run ``spec`` as ``splits`` key ranges side by side (a count of equal ranges, or the
    ranges themselves: some of a layout, to run those alone), each until it has caught up
    with the shard (see :func:`~changeflow.materialize.runtime.materialize`); the progress
    of each range. A range that fails lets the others finish, then its error is raised."""
    ranges = key_ranges(splits) if isinstance(splits, int) else sorted(splits, key=_begin)
    for r in ranges:
        if not 0 <= r.begin <= r.end <= LAST:
            raise InvalidInput(f"key range {r.begin}..{r.end} is not within 0..{LAST}")
    for a, b in zip(ranges, ranges[1:], strict=False):
        if b.begin <= a.end:
            raise InvalidInput(f"key ranges {a.begin}..{a.end} and {b.begin}..{b.end} overlap")
    log = RecoveryLog(recovery_log)
    try:
        kind = driver_class(spec.target)
        claim(log, spec.name, spec.shard, spec.target, kind.authoritative)
        check_layout(log, spec.name, ranges)
    finally:
        log.close()
    results: list[Progress | BaseException | None] = [None] * len(ranges)

    def run(at: int) -> None:
        try:
            results[at] = _run_range(
                storage, spec, recovery_log, ranges[at], out_of_process, follow, idle_timeout
            )
        except BaseException as e:  # raised below, in the caller's thread
            results[at] = e

    threads = [
        threading.Thread(target=run, args=(at,), name=f"materialize-{r.qualify(spec.name)}")
        for at, r in enumerate(ranges)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if isinstance(r, Progress)]


def _begin(r: KeyRange) -> int:
    return r.begin


def _run_range(
    storage: Storage,
    spec: Materialization,
    recovery_log: Path,
    keys: KeyRange,
    out_of_process: bool,
    follow: bool,
    idle_timeout: float | None,
) -> Progress:
    """One range's session, with its own recovery-log connection and driver."""
    transport = open_transport(spec.target, out_of_process)
    log = RecoveryLog(recovery_log)
    try:
        return Runtime(storage, spec, transport, log, keys=keys).run(follow, idle_timeout)
    finally:
        transport.close()
        log.close()
