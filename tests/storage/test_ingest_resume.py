"""Ingesting a folder as its files arrive: each ingest reads only the files not yet retired,
resumed at the shard's upper, and leaves the shard as an ingest of every file would."""

from __future__ import annotations

import os
import random
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.cdc.chaos import mangle
from changeflow.cdc.files import list_files, write_messages
from changeflow.cdc.messages import Updates
from changeflow.cdc.writer import write_history
from changeflow.config import Config
from changeflow.storage import Storage
from changeflow.storage.ingest import ingest, ingest_spark, retired_files

from .test_ingest import COLUMNS, SCHEMA, as_json, contents, history

TICKS = 12


def arrivals(seed: int, fmt: str, rounds: int, ticks: int, chaos: bool = True) -> list[list]:
    """The messages of a history, re-batched, duplicated and shuffled (with ``chaos``), cut
    into ``rounds`` consecutive arrivals (a copy of an old message may arrive in any later
    round)."""
    rng = random.Random(seed)
    messages = write_history(history(seed, ticks), batch_size=5)
    if chaos:
        messages = mangle(messages, rng, duplication=0.3)
    if fmt == "jsonl":
        messages = [
            Updates(tuple((as_json(d), t, r) for d, t, r in m.updates))
            if isinstance(m, Updates)
            else m
            for m in messages
        ]
    cuts = sorted(rng.sample(range(1, len(messages)), rounds - 1))
    return [messages[a:b] for a, b in zip([0, *cuts], [*cuts, len(messages)], strict=True)]


def arrive(folder: Path, messages: list, fmt: str, round_: int) -> None:
    write_messages(folder, messages, fmt, COLUMNS, files=2, prefix=f"r{round_:02d}")


def same_shards(storage: Storage, a: str, b: str) -> None:
    upper = storage.state(a).upper
    assert upper == storage.state(b).upper
    for t in range(upper.elements[0] if upper else TICKS):
        assert contents(storage, a, t) == contents(storage, b, t), f"as of {t}"


@pytest.fixture
def storage(tmp_path: Path):
    storage = Storage.open(Config.load(home=str(tmp_path / "home")))
    yield storage
    storage.close()


def run_arrivals(storage: Storage, tmp_path: Path, seed: int, fmt: str, on_spark=None) -> None:
    """Each round's files arrive, then are ingested incrementally and, into a fresh shard,
    from scratch; the two shards agree at every time after every round."""
    folder = tmp_path / f"cdc{seed}"
    storage.create(f"inc{seed}", SCHEMA, "counter")
    for i, messages in enumerate(arrivals(seed, fmt, rounds=4, ticks=TICKS)):
        arrive(folder, messages, fmt, i)
        full = f"full{seed}_{i}"
        storage.create(full, SCHEMA, "counter")
        if on_spark is None:
            ingest(storage, f"inc{seed}", [folder], fmt, resume=True)
            ingest(storage, full, [folder], fmt)
        else:
            ingest_spark(storage, f"inc{seed}", [folder], fmt, on_spark, resume=True)
            ingest_spark(storage, full, [folder], fmt, on_spark)
        same_shards(storage, f"inc{seed}", full)
    assert storage.state(f"inc{seed}").upper.elements == ()  # the history closes
    assert set(retired_files(storage, f"inc{seed}")) == {str(f) for f in list_files([folder])}


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "avro"])
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000))
def test_incremental_ingest_equals_a_full_one(
    storage: Storage, tmp_path: Path, fmt: str, seed: int
) -> None:
    run_arrivals(storage, tmp_path, seed, fmt)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_incremental_ingest_on_spark_equals_a_full_one(
    spark, storage: Storage, tmp_path: Path, fmt: str
) -> None:
    run_arrivals(storage, tmp_path, 7, fmt, spark)


def test_a_retired_file_is_not_read_again_after_a_restart_and_a_changed_one_is(
    tmp_path: Path,
) -> None:
    config, folder = Config.load(home=str(tmp_path / "home")), tmp_path / "cdc"
    rounds = arrivals(3, "jsonl", rounds=3, ticks=TICKS, chaos=False)
    storage = Storage.open(config)
    storage.create("s", SCHEMA, "counter")
    arrive(folder, rounds[0], "jsonl", 0)
    ingest(storage, "s", [folder], "jsonl", resume=True)
    storage.close()
    with closing(Storage.open(config)) as storage:  # a restart: what was retired is recorded
        retired = sorted(retired_files(storage, "s"))
        assert retired, "a file wholly below the upper is retired"
        # A retired file's bytes are never looked at again: garbage of the same size and time.
        victim = Path(retired[0])
        info = victim.stat()
        victim.write_bytes(b"x" * info.st_size)
        os.utime(victim, ns=(info.st_atime_ns, info.st_mtime_ns))
        arrive(folder, rounds[1], "jsonl", 1)
        ingest(storage, "s", [folder], "jsonl", resume=True)
        # Once it changes it is read again, and its garbage is an error that appends nothing.
        victim.write_bytes(b"not json\n")
        upper = storage.state("s").upper
        arrive(folder, rounds[2], "jsonl", 2)
        with pytest.raises(Exception, match="not json|JSON"):
            ingest(storage, "s", [folder], "jsonl", resume=True)
        assert storage.state("s").upper == upper
