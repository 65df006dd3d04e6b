"""The self-correcting view sink: it writes exactly ``desired - persisted`` to an output shard.

The sink keeps a Correction buffer holding the desired updates minus everything the output
holds, which it reads back through a subscription. It appends the batch
``[persisted upper, desired frontier)`` by compare-and-append, and only once the read-back has
caught up with the output's upper (so a batch it wins is exactly what the output holds there:
it leaves the buffer without being read back). So restarts, replays and redundant replicas
never duplicate or lose an update: whatever another writer appended is read back and corrected
(as in Materialize's materialized-view sink).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from changeflow.compute.correction import Correction
from changeflow.errors import FrontierViolation, Timeout, UpperMismatch
from changeflow.storage import Storage
from changeflow.storage.frames import to_frame
from changeflow.time import Antichain, Bound, show_bound, to_bound, to_frontier
from changeflow.updates import TIME

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

UNKNOWN = -1  # the read-back's progress before the first snapshot arrives


@dataclass
class SinkStats:
    """What one sink did: appends it won, appends another writer won first, rows it wrote."""

    appends_won: int = 0
    appends_lost: int = 0
    updates_written: int = 0


class SelfCorrectingSink:
    """Writes a desired stream of ``(updates, frontier)`` steps to the shard ``output``.

    The sink reads as of the output's since (its ``as_of``); the desired stream starts with
    the desired collection's contents at the as_of (earlier times are advanced to it).
    """

    def __init__(
        self, storage: Storage, output: str, poll: float = 0.01, as_of: int | None = None
    ) -> None:
        self.storage, self.output, self.poll = storage, output, poll
        self.stats = SinkStats()
        self.read_cap, self.write_cap = storage.acquire_capabilities(output)
        if as_of is not None:  # read from a later time than the output's since
            since = to_bound(self.read_cap.frontier)
            if since is None or as_of < since:
                self.close()
                raise FrontierViolation(
                    f"{output}: cannot read back from {as_of}: since is {show_bound(since)}"
                )
            self.read_cap.downgrade(Antichain([as_of]))
        self.as_of = to_bound(self.read_cap.frontier)
        assert self.as_of is not None  # a live read capability is never at []
        state = storage.state(output)
        self.correction = Correction(state.schema)
        self.correction.advance_since(self.as_of)
        self.desired: Bound = 0  # desired updates at times before this have all arrived
        # Read back: persisted updates before this have been negated into the correction.
        # An empty shard (while we hold since) never gets an update before the as_of.
        self.persisted: Bound = self.as_of if state.rows == 0 else UNKNOWN
        self.subscription = storage.subscribe_at(self.read_cap, timeout=None, poll=poll)

    def step(self, updates: Any = None, frontier: int | Antichain | None = None) -> None:
        """Take in one desired step (either part may be None), read back, and write if due."""
        if updates is not None:
            frame = to_frame(updates, self.correction.schema, self.output)
            low = pc.min(frame.column(TIME)).as_py() if frame.num_rows else None
            if low is not None and _before(low, self.desired):
                raise FrontierViolation(
                    f"{self.output}: a desired update at time {low} arrived after the "
                    f"desired frontier {show_bound(self.desired)} passed it"
                )
            self.correction.insert(frame)
        if frontier is not None:
            new = to_bound(frontier)
            if _before(new, self.desired):
                raise FrontierViolation(
                    f"{self.output}: the desired frontier cannot move back from "
                    f"{show_bound(self.desired)} to {show_bound(new)}"
                )
            self.desired = new
        self._read_back(0.0)
        self._write()

    def write_frame(self, frame: DataFrame, upper: int) -> int | None:
        """Write a step's desired updates below ``upper`` straight from a Spark frame (the
        executors write the batch; persist it first) and return how many there were.

        Only a sink caught up with nothing pending does so: then ``frame`` is exactly desired
        minus persisted, and the read-back may skip the batch it wrote. Otherwise, or if
        another replica appended first, it returns None having written nothing, and the
        caller hands the rows to :meth:`step`."""
        lower = self.persisted
        if lower == UNKNOWN or lower is None or _before(lower, self.desired):
            return None
        if len(self.correction):
            return None
        if to_bound(self.write_cap.frontier) != lower or not lower < upper:
            return None
        try:
            rows = self.storage.append(self.write_cap, frame, Antichain([upper])) or 0
        except UpperMismatch as e:  # another replica won: its batch comes back in the read-back
            self.stats.appends_lost += 1
            self.storage.downgrade(self.write_cap, e.current)
            return None
        self.adopt(upper)
        self.stats.appends_won += 1
        self.stats.updates_written += rows
        return rows

    def adopt(self, upper: int) -> None:
        """Take the output's updates before ``upper`` as desired, as they are (they were
        computed from the same inputs: a resumed dataflow's, or the batch just written)."""
        self.desired = self.persisted = upper
        self.subscription.skip_to(upper)
        self.correction.advance_since(upper)
        if _before(to_bound(self.read_cap.frontier), upper - 1):
            self.storage.downgrade(self.read_cap, Antichain([upper - 1]))

    def caught_up(self) -> bool:
        """Has the read-back reached the desired frontier (so the output's upper has too)?"""
        return self.persisted != UNKNOWN and not _before(self.persisted, self.desired)

    def run(
        self, desired: Iterable[tuple[Any, int | Antichain]], idle_timeout: float = 30.0
    ) -> SinkStats:
        """Consume the desired stream, then write and read back until caught up.

        Raises :class:`~changeflow.errors.Timeout` if the output does not move for
        ``idle_timeout`` seconds.
        """
        for updates, frontier in desired:
            self.step(updates, frontier)
        deadline = time.monotonic() + idle_timeout
        while not self.caught_up():
            if self._read_back(self.poll):
                deadline = time.monotonic() + idle_timeout
            elif time.monotonic() > deadline:
                raise Timeout(
                    f"{self.output}: the output's upper stayed at {show_bound(self.persisted)} "
                    f"for {idle_timeout} s; the desired frontier is {show_bound(self.desired)}",
                    output=self.output,
                    persisted=self.persisted,
                    desired=self.desired,
                    seconds=idle_timeout,
                )
            self._write()
        return self.stats

    def close(self) -> None:
        """Release the capabilities (with no other reader, since stays where this sink held it)."""
        self.storage.drop(self.read_cap)
        self.storage.drop(self.write_cap)

    # -- the two halves ------------------------------------------------------------------------

    def _read_back(self, timeout: float) -> bool:
        """Negate whatever the output received into the correction; True if anything came."""
        received = False
        while (step := self.subscription.next(timeout)) is not None:
            updates, upper = step
            self.correction.insert_negated(updates)
            self.persisted = to_bound(upper)
            self.correction.advance_since(self.persisted)
            received, timeout = True, 0.0
        # Hold since strictly before what was delivered, and no further back: compaction.
        hold = None if self.persisted is None else self.persisted - 1
        if received and hold is not None and _before(to_bound(self.read_cap.frontier), hold):
            self.storage.downgrade(self.read_cap, Antichain([hold]))
        return received

    def _write(self) -> None:
        """Append ``[persisted, desired)`` if the read-back is at the output's upper."""
        lower, upper = self.persisted, self.desired
        if lower == UNKNOWN or lower is None or not _before(lower, upper):
            return
        if _before(to_bound(self.write_cap.frontier), lower):  # another writer got there first
            self.storage.downgrade(self.write_cap, Antichain([lower]))
        if to_bound(self.write_cap.frontier) != lower:  # our last append is not read back yet
            return
        updates = self.correction.updates_before(upper)
        try:
            self.storage.append(self.write_cap, updates, to_frontier(upper))
        except UpperMismatch as e:  # another replica won: its batch comes back in the read-back
            self.stats.appends_lost += 1
            self.storage.downgrade(self.write_cap, e.current)
            return
        self.stats.appends_won += 1
        self.stats.updates_written += updates.num_rows
        # The append won at the read-back's upper, so the output's [lower, upper) is exactly
        # what it wrote: no need to read it back (a closed output, with no upper, is read back).
        if upper is not None:
            self.correction.written()
            self.adopt(upper)


def _before(a: Bound, b: Bound) -> bool:
    """``a < b``, where None is beyond every time."""
    return a is not None and (b is None or a < b)
