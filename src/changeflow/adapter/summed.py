"""A shard's contents kept summed in this process, so a read of its latest rows does not
read every row's whole history.

A shard keeps each write's retractions and insertions at their own times until its since
passes them (an hour behind: reads AS OF a past time may still ask), so a row updated
thousands of times is thousands of updates in storage. :class:`Summed` keeps the shard's
updates up to a time ``at`` consolidated (one update per live row, at ``at``) and adds the
stored updates after ``at`` to them on each read; once those exceed :data:`FOLD_ROWS` (or a
:data:`FOLD_SHARE` of the summed rows, so a large shard is not summed again every few writes)
they are folded into the summed part. A read at or after ``at`` gets the contents exactly,
summed below ``at`` and as they are above it; a read before ``at`` (a transaction's earlier
timestamp) reads the stored updates as before. A since moved past ``at`` (times up to it
collapsed onto it) or a change of columns sums the shard again.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pyarrow as pa

from changeflow.storage.frames import consolidate, frame_schema
from changeflow.storage.txns import reader
from changeflow.time import to_bound

if TYPE_CHECKING:
    from changeflow.storage import Storage

FOLD_ROWS = 512  # stored updates after ``at`` past which they are summed in
FOLD_SHARE = 8  # ... or past this share of the summed rows, whichever is more


class Summed:
    """The updates of ``shard`` up to ``at``, consolidated, and the reads that use them."""

    def __init__(self, storage: Storage, shard: str) -> None:
        self.storage, self.shard = storage, shard
        self.lock = threading.Lock()
        self.at: int | None = None
        self.table: pa.Table | None = None  # the contents at ``at``, every time ``at``

    def until(self, ts: int) -> pa.Table:
        """The shard's updates up to ``ts`` (readable there), those up to ``at`` summed: the
        contents at ``ts`` once summed, as the stored updates are."""
        cap = reader(self.storage, self.shard)
        with self.lock:
            if self.at is not None and ts < self.at:
                return cap.updates_until(ts)
            if self.at is None or self.table is None:
                return self._fold(cap.updates_until(ts), ts)
            newer = cap.updates_until(ts, after=self.at)
            if not self._valid():  # compacted past ``at`` (before or during the read)
                return self._fold(cap.updates_until(ts), ts)
            if newer.num_rows > max(FOLD_ROWS, self.table.num_rows // FOLD_SHARE):
                return self._fold(pa.concat_tables([self.table, newer]), ts)
            if not newer.num_rows:
                return self.table
            return pa.concat_tables([self.table, newer])

    def _valid(self) -> bool:
        """Do the stored updates after ``at`` still add to the summed part exactly?"""
        state = self.storage.state(self.shard)
        since = to_bound(state.since)
        assert self.at is not None and self.table is not None
        same = self.table.schema == frame_schema(state.schema)  # no change of columns since
        return since is not None and since <= self.at and same

    def _fold(self, updates: pa.Table, ts: int) -> pa.Table:
        """Keep ``updates`` (the shard's up to ``ts``) summed at ``ts``; return them so."""
        self.table, self.at = consolidate(updates, ts).cast(updates.schema), ts
        return self.table
