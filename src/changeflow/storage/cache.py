"""Decoded blobs kept in memory: a blob is write-once (its key is never reused), so the update
frame read from it stays right for as long as it is kept. Reads of a shard's batches (every
query, every read-back of a sink) then decode only the blobs written since the last read.

Least recently used blobs go first once the kept frames pass ``limit`` bytes; a frame larger
than a tenth of the limit is not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa

LIMIT = 256 << 20  # bytes of decoded frames kept per process


class BlobCache:
    """A bounded map from (blob key, frame schema) to the frame decoded from it."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self.size = 0
        self.hits = self.misses = 0
        self._frames: OrderedDict[tuple[str, pa.Schema], pa.Table] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, schema: pa.Schema) -> pa.Table | None:
        with self._lock:
            table = self._frames.get((key, schema))
            if table is None:
                self.misses += 1
                return None
            self.hits += 1
            self._frames.move_to_end((key, schema))
            return table

    def put(self, key: str, schema: pa.Schema, table: pa.Table) -> None:
        size = table.nbytes
        if size > self.limit // 10:
            return
        with self._lock:
            if (key, schema) in self._frames:
                return
            self._frames[(key, schema)] = table
            self.size += size
            while self.size > self.limit:
                _, old = self._frames.popitem(last=False)
                self.size -= old.nbytes

    def forget(self, key: str) -> None:
        """Drop the frames of a deleted blob (its memory, not correctness: keys are unique)."""
        with self._lock:
            for k in [k for k in self._frames if k[0] == key]:
                self.size -= self._frames.pop(k).nbytes
