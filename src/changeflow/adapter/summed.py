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
    from changeflow.storage.state import ShardState

FOLD_ROWS = 512  # stored updates after ``at`` past which they are summed in
FOLD_SHARE = 8  # ... or past this share of the summed rows, whichever is more


class Summed:
    """The updates of ``shard`` up to ``at``, consolidated, and the reads that use them."""

    def __init__(self, storage: Storage, shard: str) -> None:
        self.storage, self.shard = storage, shard
        self.lock = threading.Lock()  # held only to take or replace ``at`` and ``table``
        self.at: int | None = None
        self.table: pa.Table | None = None  # the contents at ``at``, every time ``at``

    def until(self, ts: int, state: ShardState | None = None) -> pa.Table:
        """The shard's updates up to ``ts`` (readable there), those up to ``at`` summed: the
        contents at ``ts`` once summed, as the stored updates are. ``state``: the shard's
        state, if the caller has read it (else it is read here, once); every read of the
        shard and the check of the summed part use that one state, and none holds the
        lock (concurrent reads of one table do not wait for each other)."""
        for attempt in range(3):
            try:
                return self._until(ts, state or self.storage.state(self.shard))
            except FileNotFoundError:  # its blobs merged and collected: read the new state
                if attempt == 2:
                    raise
                state = None
        raise AssertionError("unreachable")

    def _until(self, ts: int, state: ShardState) -> pa.Table:
        cap = reader(self.storage, self.shard, state)
        with self.lock:
            at, table = self.at, self.table
        if at is not None and ts < at:
            return cap.updates_until(ts, state=state)
        if at is None or table is None or not _valid(state, at, table):
            return self._fold(cap.updates_until(ts, state=state), ts)
        newer = cap.updates_until(ts, after=at, state=state)
        if newer.num_rows > max(FOLD_ROWS, table.num_rows // FOLD_SHARE):
            return self._fold(pa.concat_tables([table, newer]), ts)
        if not newer.num_rows:
            return table
        return pa.concat_tables([table, newer])

    def _fold(self, updates: pa.Table, ts: int) -> pa.Table:
        """Keep ``updates`` (the shard's up to ``ts``) summed at ``ts`` unless a later fold
        is kept already; return them so."""
        table = consolidate(updates, ts).cast(updates.schema)
        with self.lock:
            if self.at is None or self.at <= ts:
                self.table, self.at = table, ts
        return table


def _valid(state: ShardState, at: int, table: pa.Table) -> bool:
    """Do ``state``'s stored updates after ``at`` add to ``table``, the contents summed at
    ``at``, exactly? Not if its since passed ``at`` (times up to it collapsed onto it) or
    its columns changed."""
    since = to_bound(state.since)
    return since is not None and since <= at and table.schema == frame_schema(state.schema)
