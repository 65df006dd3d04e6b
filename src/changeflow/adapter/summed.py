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

The summed parts of every shard a process reads are bounded in total by :class:`Copies`: at
most :data:`KEPT_BYTES` of Arrow buffers (``CHANGEFLOW_SUMMED_MB`` in MiB), the least
recently read shard's part dropped first (its next read sums it again); a part larger than
the whole bound is used by the read that made it and not kept.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
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
KEPT_BYTES = int(os.environ.get("CHANGEFLOW_SUMMED_MB", "512")) << 20  # all parts, in total


class Summed:
    """The updates of ``shard`` up to ``at``, consolidated, and the reads that use them."""

    def __init__(
        self, storage: Storage, shard: str, folded: Callable[[Summed], None] | None = None
    ) -> None:
        self.storage, self.shard = storage, shard
        self.lock = threading.Lock()  # held only to take or replace ``at`` and ``table``
        self.at: int | None = None
        self.table: pa.Table | None = None  # the contents at ``at``, every time ``at``
        self.folded = folded  # told of each new summed part kept (its owner's bound)

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
            kept = self.at is None or self.at <= ts
            if kept:
                self.table, self.at = table, ts
        if kept and self.folded is not None:
            self.folded(self)
        return table

    def drop(self) -> None:
        """Forget the summed part (the next read sums the shard again)."""
        with self.lock:
            self.table, self.at = None, None

    @property
    def nbytes(self) -> int:
        table = self.table
        return 0 if table is None else table.nbytes


class Copies:
    """Every shard's :class:`Summed` of one process, their summed parts at most ``limit``
    bytes in total (see the module docstring): least recently read dropped first."""

    def __init__(self, storage: Storage, limit: int = KEPT_BYTES) -> None:
        self.storage, self.limit = storage, limit
        self._lock = threading.Lock()
        self._copies: OrderedDict[str, Summed] = OrderedDict()  # least recently read first
        self._bytes: dict[str, int] = {}  # each kept part's size, as last folded
        self._total = 0  # their sum

    def get(self, shard: str) -> Summed:
        """``shard``'s :class:`Summed` (made if there is none), now the most recently read."""
        with self._lock:
            summed = self._copies.get(shard)
            if summed is None:
                summed = self._copies[shard] = Summed(self.storage, shard, self._folded)
            else:
                self._copies.move_to_end(shard)
            return summed

    def _folded(self, summed: Summed) -> None:
        """``summed`` keeps a new part: drop the least recently read ones past the bound
        (``summed`` itself too if it alone passes it)."""
        with self._lock:
            if self._copies.get(summed.shard) is not summed:
                summed.drop()  # forgotten meanwhile (dropped or evicted): not counted
                return
            self._total += summed.nbytes - self._bytes.get(summed.shard, 0)
            self._bytes[summed.shard] = summed.nbytes
            while self._total > self.limit:
                shard = next(s for s in self._copies if s in self._bytes)
                self._total -= self._bytes.pop(shard)
                self._copies.pop(shard).drop()

    def pop(self, shard: str) -> None:
        """Forget ``shard``'s copy (its table dropped)."""
        with self._lock:
            self._total -= self._bytes.pop(shard, 0)
            summed = self._copies.pop(shard, None)
        if summed is not None:
            summed.drop()

    def kept_bytes(self) -> int:
        """The summed parts' bytes, in total, as last folded."""
        return self._total

    def __contains__(self, shard: object) -> bool:
        return shard in self._copies

    def shards(self) -> set[str]:
        with self._lock:
            return set(self._copies)


def _valid(state: ShardState, at: int, table: pa.Table) -> bool:
    """Do ``state``'s stored updates after ``at`` add to ``table``, the contents summed at
    ``at``, exactly? Not if its since passed ``at`` (times up to it collapsed onto it) or
    its columns changed."""
    since = to_bound(state.since)
    return since is not None and since <= at and table.schema == frame_schema(state.schema)
