"""Shards with their blobs on S3: the storage core cases against moto's S3 server.

moto's server runs on 127.0.0.1 at a free port; pyarrow's S3 filesystem reaches it through the
blob root URI (endpoint override, plain HTTP, path-style addressing) with dummy credentials from
the environment. Each test gets a fresh bucket and a SQLite consensus in its tmp_path. Object
stores have no rename and no folders to fsync: these tests show the blob layer needs neither.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from changeflow.collection import PTVC
from changeflow.errors import InvalidInput
from changeflow.failpoints import ENV, EXIT_CODE
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """``host:port`` of moto's S3 server, started for this module and stopped after it."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def blob_root(s3_endpoint: str) -> str:
    """``s3://<fresh bucket>/root?...``: a blob root in a new, empty bucket."""
    bucket = f"b{uuid.uuid4().hex[:12]}"
    params = f"endpoint_override={s3_endpoint}&scheme=http&region=us-east-1"
    pafs.FileSystem.from_uri(f"s3://{bucket}?{params}&allow_bucket_creation=true")[0].create_dir(
        bucket
    )
    return f"s3://{bucket}/root?{params}"


def open_storage(tmp_path: Path, blob_root: str) -> Storage:
    return Storage(open_consensus(f"sqlite:{tmp_path / 'consensus.sqlite'}"), Blob(blob_root))


def contents(table: pa.Table) -> dict:
    return {(r["key"], r["value"]): r["_diff"] for r in table.to_pylist()}


def check(storage: Storage, ref: PTVC, name: str = "t") -> None:
    """Every readable time of the shard reads as the reference does."""
    read, write = storage.acquire_capabilities(name)
    state = storage.state(name)
    assert state.upper == ref.upper
    low, high = state.since.elements[0], state.upper.elements[0]
    for t in range(max(low, ref.since.elements[0]), high):
        assert contents(storage.snapshot_table(read, t)) == ref.read(t), t
    storage.drop(read)
    storage.drop(write)


def fill(storage: Storage) -> PTVC:
    """Shard ``t`` with five appends (triples and Arrow), its since moved to 4."""
    read, write = storage.create("t", SCHEMA)
    ref = PTVC.empty(0, "t")
    for lower in range(0, 10, 2):
        batch = [(("a", lower // 2), lower, 1), (("b", lower), lower + 1, 1)]
        if lower % 4:
            storage.append(write, batch, lower + 2)
        else:
            table = pa.table(
                {
                    "key": [d[0] for d, _, _ in batch],
                    "value": [d[1] for d, _, _ in batch],
                    "_time": [t for _, t, _ in batch],
                    "_diff": [d for _, _, d in batch],
                }
            )
            storage.append(write, table, lower + 2)
        ref.append(batch, Antichain([lower + 2]))
    storage.downgrade(read, 4)
    ref.compact(Antichain([4]))
    return ref


def keys(storage: Storage) -> set[str]:
    return {m.key for m in storage.blob.list()}


# -- append, snapshot, compaction, garbage --------------------------------------------------


def test_append_compact_and_collect_on_s3(tmp_path: Path, blob_root: str) -> None:
    storage = open_storage(tmp_path, blob_root)
    ref = fill(storage)
    check(storage, ref)
    assert keys(storage) == storage.state("t").referenced() and len(keys(storage)) == 5

    before, after = storage.compact("t")
    assert (before, after) == (10, storage.state("t").rows)
    check(storage, ref)
    assert len(storage.state("t").batches) == 1
    assert storage.collect_garbage("t", grace_seconds=0) == 5
    assert keys(storage) == storage.state("t").referenced()
    check(storage, ref)

    storage.drop_shard("t")
    assert keys(storage) == set()


def test_a_refused_append_leaves_no_object(tmp_path: Path, blob_root: str) -> None:
    storage = open_storage(tmp_path, blob_root)
    fill(storage)
    _, write = storage.acquire_capabilities("t")
    state, objects = storage.state("t"), keys(storage)
    with pytest.raises(InvalidInput, match="column value, row 1: 1.9"):
        storage.append(write, [(("a", 1), 10, 1), (("a", 1.9), 10, 1)], 11)
    assert storage.state("t") == state and keys(storage) == objects


def test_a_bad_object_store_root_is_one_clear_error(
    tmp_path: Path, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match=r"blob root s3://b/root\?secret_key=\.\.\."):
        Blob("s3://b/root?secret_key=hunter2")  # not a parameter pyarrow knows
    assert not any(tmp_path.iterdir()), "a bad URI must not become a local folder"
    missing = f"s3://no-such-bucket/root?endpoint_override={s3_endpoint}&scheme=http"
    with pytest.raises(InvalidInput, match="bucket 'no-such-bucket' does not exist"):
        Blob(missing)


# -- crashes at every failpoint, then recovery ----------------------------------------------

# the child scripts and the failpoints of the local fault suite, run against S3 here (loaded
# by its path: the materialize tests have a test_faults module of their own)
_spec = importlib.util.spec_from_file_location(
    "storage_faults", Path(__file__).with_name("test_faults.py")
)
_faults = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_faults)
CHILD, POINTS, PRELUDE = _faults.CHILD, _faults.POINTS, _faults.PRELUDE


@pytest.mark.parametrize("operation, point, lands", POINTS)
def test_a_crash_on_s3_leaves_the_shard_readable_and_correct(
    tmp_path: Path, blob_root: str, operation: str, point: str, lands: bool
) -> None:
    consensus = f"sqlite:{tmp_path / 'consensus.sqlite'}"
    storage = Storage(open_consensus(consensus), Blob(blob_root))
    ref = fill(storage)
    if operation == "gc":  # leave retired blobs for the collector to delete
        storage.compact("t")
    objects = keys(storage)

    child = subprocess.run(
        [sys.executable, "-c", CHILD[operation], consensus, blob_root],
        env={**_env(), ENV: point},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == EXIT_CODE, child.stderr
    if point == "blob.partway":  # an object store publishes a whole object or none
        assert keys(storage) == objects
    if lands:
        ref.append([(("crash", 1), 10, 1), (("a", 0), 11, -1)], Antichain([12]))
    check(storage, ref)

    _, write = storage.acquire_capabilities("t")
    upper = ref.upper.elements[0]
    storage.append(write, [(("after", 1), upper, 1)], upper + 1)
    ref.append([(("after", 1), upper, 1)], Antichain([upper + 1]))
    storage.compact("t")
    storage.collect_garbage("t", grace_seconds=0)
    check(storage, ref)
    assert keys(storage) == storage.state("t").referenced()  # nothing orphaned is left


# -- two racing writers ---------------------------------------------------------------------

WORKER = (
    PRELUDE
    + """
import json, time
from pathlib import Path
from changeflow.errors import UpperMismatch
worker, rounds, start = int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
read, write = storage.acquire_capabilities("race")
storage.drop(read)
while not start.exists():
    time.sleep(0.001)
wins, losses = [], []
while write.frontier.elements[0] < rounds:
    t = write.frontier.elements[0]
    try:
        storage.append(write, [((worker, t), t, 1)], t + 1)
        wins.append(t)
    except UpperMismatch as e:
        losses.append(t)
        storage.downgrade(write, e.current)
print(json.dumps({"wins": wins, "losses": losses}))
"""
)


def test_racing_writers_on_s3_each_round_has_one_winner(tmp_path: Path, blob_root: str) -> None:
    consensus, rounds = f"sqlite:{tmp_path / 'consensus.sqlite'}", 20
    storage = Storage(open_consensus(consensus), Blob(blob_root))
    read, write = storage.create("race", pa.schema([("worker", pa.int64()), ("round", pa.int64())]))
    storage.drop(write)
    start = tmp_path / "start"
    args = [consensus, blob_root, str(rounds), str(start)]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, *args[:2], str(w), *args[2:]],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(2)
    ]
    time.sleep(1.5)  # both are waiting at the start line
    start.touch()
    results = []
    for p in workers:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out))

    winners: dict[int, int] = {}
    for w, result in enumerate(results):
        for t in result["wins"]:
            assert t not in winners, f"round {t} won twice"
            winners[t] = w
        for t in result["losses"]:
            assert t in results[1 - w]["wins"], f"round {t} lost to nobody"
    assert sorted(winners) == list(range(rounds))
    snapshot = storage.snapshot_table(read, rounds - 1).to_pylist()
    assert sorted((r["worker"], r["round"], r["_diff"]) for r in snapshot) == sorted(
        (w, t, 1) for t, w in winners.items()
    )
    storage.collect_garbage("race", grace_seconds=0)
    assert keys(storage) == storage.state("race").referenced()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != ENV}
