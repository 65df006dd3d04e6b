"""Group commit: the write-only transactions of concurrent sessions in one process commit
together, at one timestamp, in one entry of the write log.

A session hands its checked frames to :meth:`GroupCommit.commit` and waits. The first waiting
session becomes the leader: it takes every transaction queued so far, merges their frames by
table, takes one write timestamp from the oracle and commits them in one compare-and-set; the
others wake with the result. Read-then-write transactions (UPDATE, DELETE) are checked for
conflicts against their own read timestamp, so each commits in an entry of its own.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pyarrow as pa

from changeflow.adapter.oracle import TimestampOracle
from changeflow.adapter.txns import StaleTimestamp, TxnLog, Unchanged
from changeflow.errors import ChangeflowError

TRIES = 100


@dataclass
class _Pending:
    frames: dict[str, pa.Table]
    ts: int | None = None
    error: BaseException | None = None


class GroupCommit:
    """See the module docstring."""

    def __init__(self, log: TxnLog, oracle: TimestampOracle) -> None:
        self.log, self.oracle = log, oracle
        self.cond = threading.Condition()
        self.queue: list[_Pending] = []
        self.leading = False
        self.entries = 0  # log entries written (a measure of grouping)

    def commit(
        self,
        frames: dict[str, pa.Table],
        read_ts: int | None = None,
        reads: frozenset[str] = frozenset(),
        unchanged: Unchanged | None = None,
    ) -> int:
        """Commit ``frames`` and return their timestamp once durable; a read-then-write
        transaction gives its ``read_ts``, the shards it read and its check that what it read
        is unchanged (:meth:`TxnLog.commit`)."""
        if read_ts is not None:
            return self._write(frames, read_ts, reads, unchanged)
        mine = _Pending(frames)
        with self.cond:
            self.queue.append(mine)
            while self.leading and mine.ts is None and mine.error is None:
                self.cond.wait()
            if mine.ts is None and mine.error is None:
                self.leading = True
                batch, self.queue = self.queue, []
        if mine.ts is None and mine.error is None:
            self._lead(batch)
        if mine.error is not None:
            raise mine.error
        assert mine.ts is not None
        return mine.ts

    def _lead(self, batch: list[_Pending]) -> None:
        merged: dict[str, list[pa.Table]] = {}
        for p in batch:
            for shard, frame in p.frames.items():
                merged.setdefault(shard, []).append(frame)
        try:
            ts = self._write({s: pa.concat_tables(f) for s, f in merged.items()})
            for p in batch:
                p.ts = ts
        except BaseException as e:
            for p in batch:
                p.error = e
        finally:
            with self.cond:
                self.leading = False
                self.cond.notify_all()

    def _write(
        self,
        frames: dict[str, pa.Table],
        read_ts: int | None = None,
        reads: frozenset[str] = frozenset(),
        unchanged: Unchanged | None = None,
    ) -> int:
        for _ in range(TRIES):
            ts = self.oracle.write_ts()
            try:
                self.log.commit(frames, ts, read_ts, reads, unchanged)
            except StaleTimestamp:
                continue
            self.oracle.apply_write(ts)
            self.entries += 1
            self.log.apply()  # to the shards now, so the log stays short
            return ts
        raise ChangeflowError(f"no write timestamp held after {TRIES} tries; try again")
