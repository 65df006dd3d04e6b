"""Decoded blobs are kept: a second read of a shard decodes nothing, a read after an append
decodes only the new blob, and the answers are those of a process without the cache."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.cache import BlobCache
from changeflow.storage.consensus import SqliteConsensus

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])


def open_storage(root: Path) -> Storage:
    return Storage(SqliteConsensus(root / "consensus.sqlite"), Blob(str(root / "blob")), 60.0)


def contents(table: pa.Table) -> dict[tuple, int]:
    return {(r["key"], r["value"]): r["_diff"] for r in table.to_pylist()}


def test_reads_decode_each_blob_once(tmp_path: Path) -> None:
    storage = open_storage(tmp_path)
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], 1)
    cache = storage.machine.cache
    first = contents(storage.snapshot_table(read, 0))
    misses = cache.misses
    assert contents(storage.snapshot_table(read, 0)) == first == {("a", 1): 1}
    assert cache.misses == misses and cache.hits > 0
    storage.append(write, [(("a", 1), 1, -1), (("b", 2), 1, 1)], 2)
    assert contents(storage.snapshot_table(read, 1)) == {("b", 2): 1}
    assert cache.misses == misses + 1
    cold = open_storage(tmp_path)  # another process: nothing cached
    cold_read, _ = cold.acquire_capabilities("t")
    assert contents(cold.snapshot_table(cold_read, 1)) == {("b", 2): 1}


def test_the_cache_keeps_within_its_limit() -> None:
    table = pa.table({"x": list(range(100))})
    cache = BlobCache(limit=table.nbytes * 10 + 1)
    for i in range(30):
        cache.put(f"k{i}", table.schema, table)
    assert cache.size <= cache.limit
    assert cache.get("k0", table.schema) is None  # the oldest went first
    assert cache.get("k29", table.schema) is not None
    cache.forget("k29")
    assert cache.get("k29", table.schema) is None
    big = pa.table({"x": list(range(10_000))})
    cache.put("big", big.schema, big)  # over a tenth of the limit: not kept
    assert cache.get("big", big.schema) is None
