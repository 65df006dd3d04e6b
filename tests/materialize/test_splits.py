"""A materialization split by key range: the ranges partition the keys, each range is exactly
once with its own checkpoint, also when a crash leaves the ranges at different frontiers, and
a checkpoint of one layout refuses a run of another."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_faults import (  # noqa: E402
    FINAL,
    SHARD,
    SPLIT,
    Setup,
    Target,
    _env,
    expected,
    make_target,
)

from changeflow.errors import InvalidInput  # noqa: E402
from changeflow.failpoints import ENV, EXIT_CODE  # noqa: E402
from changeflow.materialize.keyrange import (  # noqa: E402
    KEY_SPACE,
    KeyRange,
    key_hashes,
    key_ranges,
    parse,
)
from changeflow.materialize.recovery import RecoveryLog  # noqa: E402
from changeflow.materialize.runtime import drop, holder  # noqa: E402
from changeflow.materialize.splits import materialize_split  # noqa: E402

KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
POINTS = (
    "runtime.after_open",
    "runtime.before_start_commit",
    "runtime.after_log_commit",
    "runtime.during_acknowledge",
)


def test_ranges_partition_the_keys() -> None:
    for count in (1, 2, 3, 7):
        ranges = key_ranges(count)
        assert ranges[0].begin == 0 and ranges[-1].end == KEY_SPACE - 1
        assert all(a.end + 1 == b.begin for a, b in zip(ranges, ranges[1:], strict=False))
    rows = pa.table(
        {"k": pa.array(np.arange(-500, 500)), "s": pa.array([f"s{i % 7}" for i in range(1000)])}
    )
    parts = [r.select(rows, ["k", "s"]) for r in key_ranges(3)]
    assert all(p.num_rows > 200 for p in parts)
    together = pa.concat_tables(parts).sort_by([("k", "ascending")])
    assert together.equals(rows)
    # the same key hashes alike whatever its integer type and chunking, in every process
    as_int32 = pa.table({"k": pa.chunked_array([pa.array([7, -3], pa.int32()), [12]])})
    assert (
        key_hashes(as_int32, ["k"]).tolist()
        == key_hashes(pa.table({"k": [7, -3, 12]}), ["k"]).tolist()
    )
    assert key_hashes(pa.table({"k": [7]}), ["k"]).tolist() == [KNOWN_HASH_OF_7]
    for r in key_ranges(4):
        assert parse("m", r.qualify("m")) == r
    assert parse("m", "m") == KeyRange() and parse("m", "mm@0-1") is None
    with pytest.raises(InvalidInput, match="1 to 1024"):
        key_ranges(0)


KNOWN_HASH_OF_7 = 313405475  # a change of the hash would move stored keys between ranges


def _setup(kind: str, reduction: str, tmp_path: Path, request: pytest.FixtureRequest):
    target = make_target(kind, tmp_path, request)
    return target, Setup.make(tmp_path, target, reduction)


def _check(setup: Setup, target: Target, reduction: str, ranges: list[KeyRange]) -> None:
    """The target equals the collection at its final frontier, it holds a checkpoint at
    that frontier for every range and no other, and each range held some of the keys."""
    assert target.read() == expected(setup.storage, reduction)
    statement = "SELECT key_begin, key_end, checkpoint FROM changeflow_checkpoints"
    if target.kind == "sqlite":
        with sqlite3.connect(target.path) as db:
            rows = db.execute(statement).fetchall()
    else:
        import psycopg

        with psycopg.connect(target.url) as conn:
            rows = conn.execute(statement).fetchall()
    held = {KeyRange(b, e): json.loads(c)["frontier"] for b, e, c in rows}
    assert held == {r: [FINAL] for r in ranges}
    keys = pa.table({"k": sorted(target.read())})
    assert all(r.select(keys, ["k"]).num_rows for r in ranges)


@pytest.mark.parametrize("reduction", ["lww", "sum"])
@pytest.mark.parametrize("kind", KINDS)
def test_ranges_at_different_frontiers_resume_each_from_its_own(
    kind: str, reduction: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """As after a crash between the ranges' commits: one range has committed the second half
    of the history, the other has not; the next run finishes the other alone."""
    target, setup = _setup(kind, reduction, tmp_path, request)
    ranges = key_ranges(2)
    setup.append(0, SPLIT)
    materialize_split(setup.storage, setup.spec, setup.log, 2)
    setup.append(SPLIT, FINAL)
    (ahead,) = materialize_split(setup.storage, setup.spec, setup.log, ranges[1:])
    assert ahead.frontier.elements == (FINAL,)
    progress = materialize_split(setup.storage, setup.spec, setup.log, 2)
    assert [p.transactions > 0 for p in progress] == [True, False]
    _check(setup, target, reduction, ranges)
    materialize_split(setup.storage, setup.spec, setup.log, 2)  # nothing new: nothing changes
    _check(setup, target, reduction, ranges)


SPLIT_CHILD = """
import json, sys
from pathlib import Path
from changeflow.materialize.runtime import Materialization
from changeflow.materialize.splits import materialize_split
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
consensus, blob, log, spec, splits = sys.argv[1:6]
spec = json.loads(spec)
spec["key"] = tuple(spec["key"])
storage = Storage(open_consensus(consensus), Blob(blob))
materialize_split(storage, Materialization(**spec), Path(log), int(splits))
"""


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("reduction", ["lww", "sum"])
@pytest.mark.parametrize("kind", KINDS)
def test_exactly_once_after_a_crash_of_split_ranges(
    kind: str, reduction: str, point: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The process of three ranges dies at ``point`` of whichever range gets there first,
    the others wherever they are; the next run completes every range exactly once."""
    target, setup = _setup(kind, reduction, tmp_path, request)
    setup.append(0, SPLIT)
    materialize_split(setup.storage, setup.spec, setup.log, 3)
    setup.append(SPLIT, FINAL)
    args = [setup.consensus, setup.blob, str(setup.log), json.dumps(asdict(setup.spec)), "3"]
    child = subprocess.run(
        [sys.executable, "-c", SPLIT_CHILD, *args],
        env={**_env(), ENV: point},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == EXIT_CODE, child.stderr
    materialize_split(setup.storage, setup.spec, setup.log, 3)
    _check(setup, target, reduction, key_ranges(3))


@pytest.mark.parametrize("kind", KINDS)
def test_another_layout_is_refused_while_checkpoints_exist(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target, setup = _setup(kind, "sum", tmp_path, request)
    setup.append(0, SPLIT)
    materialize_split(setup.storage, setup.spec, setup.log, 2)
    with pytest.raises(InvalidInput, match="overlaps keys"):
        materialize_split(setup.storage, setup.spec, setup.log, 3)
    with pytest.raises(InvalidInput, match="overlaps keys"):
        setup.run()  # the whole key space in one
    # a target that keeps its own checkpoints refuses it with a fresh recovery log too
    with pytest.raises(InvalidInput, match="overlaps keys"):
        materialize_split(setup.storage, setup.spec, tmp_path / "fresh.sqlite", 3)
    for bad in ([KeyRange(0, 10), KeyRange(10, 20)], [KeyRange(5, KEY_SPACE)]):
        with pytest.raises(InvalidInput, match=r"^key range"):
            materialize_split(setup.storage, setup.spec, setup.log, bad)
    setup.append(SPLIT, FINAL)
    materialize_split(setup.storage, setup.spec, setup.log, 2)  # the same layout goes on
    _check(setup, target, "sum", key_ranges(2))


def test_drop_lets_go_of_every_range(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    _, setup = _setup("sqlite", "lww", tmp_path, request)
    setup.append(0, SPLIT)
    materialize_split(setup.storage, setup.spec, setup.log, 2)
    holders = {holder(r.qualify("m")) for r in key_ranges(2)}
    assert set(setup.storage.registered_readers(SHARD)) == holders
    assert drop(setup.storage, "m", setup.log) == SHARD
    assert setup.storage.registered_readers(SHARD) == {}
    log = RecoveryLog(setup.log)
    try:
        assert log.checkpointed("m") == []
    finally:
        log.close()
    with pytest.raises(InvalidInput, match="no materialization named 'm'"):
        drop(setup.storage, "m", setup.log)
