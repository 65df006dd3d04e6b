"""The timestamp oracle: durable, linearizable read and write timestamps of one timeline.

The state of a timeline is a pair ``(read_ts, write_ts)`` with ``read_ts <= write_ts``, kept as
the value of the consensus key ``oracle/<timeline>`` and changed only by compare-and-set, so each
change is durable and totally ordered when it returns, across every process and machine that
shares the consensus. The operations, as in Materialize's oracle:

- ``write_ts``: ``write_ts := max(write_ts + 1, now)``, returned. Greater than every read_ts
  returned before (read_ts <= write_ts always), and never below the wall clock for
  EpochMilliseconds (``now`` is 0 for other timelines).
- ``apply_write(ts)``: ``read_ts := max(read_ts, ts)``, ``write_ts := max(write_ts, ts)``;
  afterwards every read_ts sees the write at ``ts``.
- ``advance_to(ts)`` (non-epoch timelines, whose data sets the pace): the same as apply_write.
- ``read_ts`` and ``peek_write_ts``: a read of the current head; nothing changes.

A timeline whose writes commit through a log of their own (the tables' write log) gives the
oracle that log's last commit as a ``floor``: read timestamps are at least it, so a commit is
visible once it is in the log, without a compare-and-set of the oracle (``apply_write``) of
its own; write timestamps stay above it.

A new key starts at the wall clock (EpochMilliseconds) or at 0. Every ``TRUNCATE_EVERY``-th
version deletes the older ones. A :class:`~changeflow.errors.ConsensusUnavailable` leaves the
outcome unknown; calling again is safe (a write timestamp may then be skipped, never reused).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from changeflow.adapter.timelines import Timeline
from changeflow.errors import InvalidInput, InvalidTime, StoreMismatch
from changeflow.storage.consensus import Consensus, VersionedData
from changeflow.time import MAX_TIME, check_int_time

KEY_PREFIX = "oracle/"
TRUNCATE_EVERY = 64  # versions of the key kept before older ones are deleted


@dataclass(frozen=True)
class OracleState:
    """The durable state of one timeline's oracle."""

    read_ts: int
    write_ts: int

    def to_bytes(self, timeline: Timeline) -> bytes:
        value = {"timeline": str(timeline), "read_ts": self.read_ts, "write_ts": self.write_ts}
        return json.dumps(value, sort_keys=True).encode()

    @staticmethod
    def from_bytes(data: bytes, timeline: Timeline, where: str) -> OracleState:
        try:
            value = json.loads(data)
            if value["timeline"] != str(timeline):
                raise ValueError(f"it belongs to timeline {value['timeline']!r}")
            state = OracleState(
                check_int_time(value["read_ts"], "read_ts"),
                check_int_time(value["write_ts"], "write_ts"),
            )
            if state.read_ts > state.write_ts:
                raise ValueError(f"read_ts {state.read_ts} > write_ts {state.write_ts}")
        except (ValueError, KeyError, TypeError, InvalidTime) as e:
            raise StoreMismatch(
                f"{where} does not hold a timestamp oracle state of timeline {timeline} ({e})",
                key=KEY_PREFIX + str(timeline),
            ) from None
        return state

    def advanced(self, ts: int) -> OracleState:
        return OracleState(max(self.read_ts, ts), max(self.write_ts, ts))


class TimestampOracle:
    """The read and write timestamps of ``timeline``, durable in ``consensus``.

    Every returned timestamp is a linearizable fact about the shared state: an operation takes
    effect at one moment between its call and its return, whichever process calls it. ``clock``
    gives seconds since the epoch (only EpochMilliseconds uses it; it may go backwards).
    """

    def __init__(
        self,
        consensus: Consensus,
        timeline: Timeline | str,
        clock: Callable[[], float] = time.time,
        floor: Callable[[], int] | None = None,
    ) -> None:
        self.consensus = consensus
        self.floor = floor or (lambda: -1)  # read timestamps are at least this (see above)
        self.timeline = Timeline.parse(timeline)
        self.clock = clock
        self.key = KEY_PREFIX + str(self.timeline)
        self.retries = 0  # compare-and-sets lost to another writer, for tests and tuning
        self._head: tuple[int, OracleState] = self._open()  # a version seen (maybe not the last)

    def __repr__(self) -> str:
        return f"TimestampOracle({self.timeline}, {self.consensus.location})"

    def now(self) -> int:
        """The lowest write timestamp the clock allows: the wall clock in ms for
        EpochMilliseconds, else 0."""
        return self._now()

    def _now(self) -> int:
        """The wall clock in ms for EpochMilliseconds, else 0 (no lower bound)."""
        if not self.timeline.is_epoch:
            return 0
        return min(max(int(self.clock() * 1000), 0), MAX_TIME)

    def _read(self) -> tuple[int, OracleState]:
        head = self.consensus.head(self.key)
        where = f"consensus {self.consensus.location} key {self.key!r}"
        if head is None:
            raise StoreMismatch(
                f"{where} has lost the timestamp oracle state of timeline {self.timeline}; "
                "restore the consensus from a backup",
                key=self.key,
            )
        state = OracleState.from_bytes(head.data, self.timeline, f"{where} version {head.seqno}")
        self._head = (head.seqno, state)
        return self._head

    def _open(self) -> tuple[int, OracleState]:
        """The head of the key, made first (at the initial state) if there is none yet."""
        if self.consensus.head(self.key) is None:
            now = self._now()
            first = VersionedData(1, OracleState(now, now).to_bytes(self.timeline))
            self.consensus.compare_and_set(self.key, None, first)  # lost: another made it
        return self._read()

    def _update(self, step: Callable[[OracleState], OracleState]) -> OracleState:
        """Apply ``step`` to the head by compare-and-set, retrying until it wins; the new state.

        The first attempt trusts the version last seen, so an uncontended change is one
        round trip. A step that changes nothing writes nothing: the state only grows, so what
        held for a version seen before holds for the head.
        """
        seqno, state = self._head
        backoff = 0.0005
        while True:
            new = step(state)
            if new == state:
                return state
            version = VersionedData(seqno + 1, new.to_bytes(self.timeline))
            if self.consensus.compare_and_set(self.key, seqno, version):
                self._head = (seqno + 1, new)
                if (seqno + 1) % TRUNCATE_EVERY == 0:
                    self.consensus.truncate(self.key, seqno + 1)
                return new
            self.retries += 1
            time.sleep(random.uniform(0, backoff))
            backoff = min(backoff * 2, 0.05)
            seqno, state = self._read()

    def write_ts(self) -> int:
        """A new write timestamp: above every read_ts returned before, at least the previous
        write_ts + 1 and (EpochMilliseconds) at least the wall clock in ms."""

        def step(state: OracleState) -> OracleState:
            if state.write_ts >= MAX_TIME:
                raise InvalidTime(
                    f"timeline {self.timeline}: no write timestamp after {state.write_ts}"
                )
            return OracleState(
                state.read_ts, max(state.write_ts + 1, self._now(), self.floor() + 1)
            )

        return self._update(step).write_ts

    def peek_write_ts(self) -> int:
        """The last write timestamp handed out (changes nothing)."""
        return self._read()[1].write_ts

    def read_ts(self) -> int:
        """A read timestamp: at least every ``ts`` whose ``apply_write(ts)`` has returned, and
        at least ``floor()``."""
        return max(self._read()[1].read_ts, self.floor())

    def apply_write(self, ts: int) -> None:
        """Make the write at ``ts`` visible: read_ts (and write_ts) become at least ``ts``."""
        ts = check_int_time(ts, f"timeline {self.timeline}: write timestamp")
        self._update(lambda state: state.advanced(ts))

    def advance_to(self, ts: int) -> None:
        """Move a non-epoch timeline to ``ts`` (its data has come up to there): read_ts and
        write_ts become at least ``ts``; never backwards."""
        if self.timeline.is_epoch:
            raise InvalidInput(
                f"advance_to is for timelines whose data sets the pace, not {self.timeline}; "
                "use apply_write for a write at a given time"
            )
        ts = check_int_time(ts, f"timeline {self.timeline}: timestamp")
        self._update(lambda state: state.advanced(ts))
