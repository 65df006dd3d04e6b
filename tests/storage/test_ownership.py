"""Never delete what you cannot prove is yours: unique shard ids, blob roots that know their
consensus, garbage collection of the shard's own blobs only, and no silent fresh start."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from changeflow.errors import StoreMismatch
from changeflow.storage import Storage
from changeflow.storage.blob import MARKER, Blob
from changeflow.storage.consensus import SqliteConsensus, VersionedData
from changeflow.storage.state import CATALOG_KEY, encode_schema, is_unique_id
from changeflow.time import Antichain

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])


def open_store(consensus: Path, blob_root: Path) -> Storage:
    return Storage(SqliteConsensus(consensus), Blob(str(blob_root)))


def contents(storage: Storage, cap, as_of: int) -> dict:
    return {
        (r["key"], r["value"]): r["_diff"] for r in storage.snapshot_table(cap, as_of).to_pylist()
    }


def fill(storage: Storage) -> tuple:
    """Shard ``t``: two appends, since moved to 1 (a compaction retires both blobs)."""
    read, write = storage.create("t", SCHEMA)
    storage.append(write, [(("a", 1), 0, 1)], 1)
    storage.append(write, [(("b", 2), 1, 1)], 2)
    storage.downgrade(read, 1)
    return read, write


def test_shard_ids_are_globally_unique(tmp_path: Path) -> None:
    ids = set()
    for store in ("one", "two"):
        storage = open_store(tmp_path / f"{store}.sqlite", tmp_path / f"{store}-blob")
        storage.create("t", SCHEMA)
        ids.add(storage.state("t").id)
    assert len(ids) == 2 and all(is_unique_id(i) for i in ids)


def test_a_second_consensus_cannot_use_the_blob_root_and_delete_the_first_ones_data(
    tmp_path: Path,
) -> None:
    blob_root = tmp_path / "blob"
    first = open_store(tmp_path / "first.sqlite", blob_root)
    read, _ = fill(first)
    assert json.loads((blob_root / MARKER).read_text())["id"]
    with pytest.raises(StoreMismatch) as e:  # e.g. CHANGEFLOW_CONSENSUS changed, home kept
        second = open_store(tmp_path / "second.sqlite", blob_root)
        _, write = second.create("t", SCHEMA)
        second.append(write, [(("x", 0), 0, 1)], 1)
        second.compact("t")
        second.collect_garbage("t", grace_seconds=0)
    message = str(e.value)
    assert "first.sqlite" in message and "second.sqlite" in message
    assert "--blob-root" in message
    assert contents(first, read, 1) == {("a", 1): 1, ("b", 2): 1}


def test_the_marker_is_written_before_any_blob_and_kept(tmp_path: Path) -> None:
    storage = open_store(tmp_path / "c.sqlite", tmp_path / "blob")
    marker = (tmp_path / "blob" / MARKER).read_text()
    assert storage.blob.list() == []  # the marker is not a blob
    fill(storage)
    again = open_store(tmp_path / "c.sqlite", tmp_path / "blob")
    assert (tmp_path / "blob" / MARKER).read_text() == marker
    assert again.shards() == ["t"]


def test_an_unmarked_blob_root_with_another_stores_data_is_refused(tmp_path: Path) -> None:
    blob_root = tmp_path / "blob"
    fill(open_store(tmp_path / "first.sqlite", blob_root))
    (blob_root / MARKER).unlink()  # a blob root from before markers
    with pytest.raises(StoreMismatch, match="holds data .* of no shard of consensus"):
        open_store(tmp_path / "second.sqlite", blob_root)
    assert not (blob_root / MARKER).exists()  # refused before writing anything
    assert not (tmp_path / "second.sqlite").exists() or _keys(tmp_path / "second.sqlite") == []
    open_store(tmp_path / "first.sqlite", blob_root)  # its own store claims it again
    assert (blob_root / MARKER).exists()


def legacy_store(tmp_path: Path) -> Storage:
    """A store from before unique ids: its catalog binds ``t`` to ``s1``."""
    consensus = SqliteConsensus(tmp_path / "c.sqlite")
    entry = {"id": "s1", "schema": encode_schema(SCHEMA), "timeline": "epoch_ms"}
    catalog = json.dumps({"next_id": 2, "entries": {"t": entry}}).encode()
    assert consensus.compare_and_set(CATALOG_KEY, None, VersionedData(1, catalog))
    return Storage(consensus, Blob(str(tmp_path / "blob")))


def test_garbage_collection_of_an_old_id_deletes_only_blobs_its_history_wrote(
    tmp_path: Path,
) -> None:
    storage = legacy_store(tmp_path)
    read, write = storage.acquire_capabilities("t")
    storage.append(write, [(("a", 1), 0, 1)], 1)
    storage.append(write, [(("b", 2), 1, 1)], 2)
    storage.downgrade(read, 1)
    # Another store (sharing the blob root before markers existed) wrote under ``s1/`` too.
    foreign = tmp_path / "blob" / "s1" / "foreign.parquet"
    pq.write_table(pa.table({"x": [1]}), foreign)
    os.utime(foreign, (0, 0))
    retired = {m.key for m in storage.blob.list("s1")} - {"s1/foreign.parquet"}
    storage.compact("t")
    assert storage.collect_garbage("t", grace_seconds=0) == 2
    left = {m.key for m in storage.blob.list("s1")}
    assert "s1/foreign.parquet" in left and not retired & left
    assert contents(storage, read, 1) == {("a", 1): 1, ("b", 2): 1}
    assert storage.state("t").id == "s1"


def test_an_empty_consensus_file_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    fill(open_store(tmp_path / "c.sqlite", tmp_path / "blob"))
    (tmp_path / "c.sqlite").write_bytes(b"")
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"c.sqlite{suffix}").unlink(missing_ok=True)
    with pytest.raises(StoreMismatch, match="empty"):
        open_store(tmp_path / "c.sqlite", tmp_path / "blob")
    assert (tmp_path / "c.sqlite").stat().st_size == 0


@pytest.mark.parametrize("kind", ["text", "other sqlite"])
def test_a_foreign_consensus_file_is_an_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "c.sqlite"
    if kind == "text":
        path.write_text("not a database at all, but long enough to be read as one\n" * 20)
    else:
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE consensus (id INTEGER, payload TEXT)")
    before = path.read_bytes()
    with pytest.raises(StoreMismatch, match="not a changeflow consensus"):
        open_store(path, tmp_path / "blob")
    assert path.read_bytes() == before


def _keys(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [k for (k,) in db.execute("SELECT DISTINCT key FROM consensus")]


def test_frontiers_are_untouched_by_the_checks(tmp_path: Path) -> None:
    read, write = fill(open_store(tmp_path / "c.sqlite", tmp_path / "blob"))
    again = open_store(tmp_path / "c.sqlite", tmp_path / "blob")
    assert again.state("t").since == Antichain([1]) and again.state("t").upper == Antichain([2])


def test_a_reader_finds_no_store_and_creates_none(consensus_location: str, tmp_path: Path) -> None:
    from changeflow.errors import InvalidInput
    from changeflow.storage.consensus import open_consensus

    with pytest.raises(InvalidInput, match="no changeflow data at"):
        open_consensus(consensus_location, create=False)
    assert not (tmp_path / "consensus.sqlite").exists()
    open_consensus(consensus_location).close()  # a writer creates it; then a reader finds it
    open_consensus(consensus_location, create=False).close()
