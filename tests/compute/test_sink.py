"""The self-correcting sink against real storage: one sink, two replicas in two processes,
a restart against a partly (or wrongly) written output, and far-future retractions.

The output is always compared with the desired collection at every readable time, and its
updates with the desired updates, so a duplicated or lost update cannot pass.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from changeflow.collection import Update, consolidate, read
from changeflow.compute.sink import SelfCorrectingSink
from changeflow.errors import FrontierViolation, Timeout
from changeflow.storage import ReadCapability, Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])
Step = tuple[list[Update], int]


def open_storage(location: str, root: Path) -> Storage:
    return Storage(open_consensus(location), Blob(str(root / "blob")))


@pytest.fixture
def storage(tmp_path: Path) -> Storage:
    return open_storage(f"sqlite:{tmp_path / 'consensus.sqlite'}", tmp_path)


def desired_stream(seed: int, steps: int = 30) -> list[Step]:
    """Inserts, updates and deletes of a keyed collection; frontiers that stay or jump."""
    rng = random.Random(seed)
    live: dict[str, tuple[int, int]] = {}  # key -> (value, copies)
    out: list[Step] = []
    frontier = 0
    for _ in range(steps):
        new = frontier + rng.choice([0, 1, 1, 1, 2, 3])
        times = sorted(rng.randrange(frontier, max(new, frontier + 1)) for _ in range(6))
        updates: list[Update] = []
        for t in times[: rng.randint(0, 6)]:
            key = f"k{rng.randrange(10)}"
            if key in live:
                value, copies = live.pop(key)
                updates.append(((key, value), t, -copies))
                if rng.random() < 0.3:  # a delete; else an update
                    continue
            live[key] = (rng.randrange(5), rng.choice([1, 1, 1, 2]))
            updates.append(((key, live[key][0]), t, live[key][1]))
        out.append((updates, new))
        frontier = new
    return [*out, ([], frontier + 1)]  # the last frontier passes every update


def triples(table: pa.Table) -> list[Update]:
    return [((r["key"], r["value"]), r["_time"], r["_diff"]) for r in table.to_pylist()]


def updates_of(steps: list[Step]) -> list[Update]:
    return [u for updates, _ in steps for u in updates]


def written(storage: Storage, name: str) -> list[Update]:
    """The output's updates, consolidated, read from its since (exact times from there on)."""
    cap, write = storage.acquire_capabilities(name)
    storage.drop(write)
    upper = storage.state(name).upper
    out: list[Update] = []
    for table, progress in storage.subscribe_at(cap, timeout=10):
        out += triples(table)
        if upper <= progress:
            break
    storage.drop(cap)
    return consolidate(out)


def output_at(storage: Storage, cap: ReadCapability, t: int) -> dict:
    return {data: diff for data, _, diff in triples(storage.snapshot_table(cap, t))}


def check_every_time(
    storage: Storage, cap: ReadCapability, desired: list[Update], start: int | None = None
) -> None:
    """The output reads as the desired collection at every time in ``[start, upper)``."""
    state = storage.state("view")
    low = state.since.elements[0] if start is None else start
    for t in range(low, state.upper.elements[0]):
        assert output_at(storage, cap, t) == read(desired, t), f"at time {t}"


# -- one sink ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_sink_writes_exactly_the_desired_collection(storage: Storage, seed: int) -> None:
    cap, write = storage.create("view", SCHEMA)
    storage.drop(write)
    steps = desired_stream(seed)
    sink = SelfCorrectingSink(storage, "view")
    stats = sink.run(steps)
    desired, final = updates_of(steps), steps[-1][1]

    assert storage.state("view").upper == Antichain([final])
    assert written(storage, "view") == consolidate(desired)
    check_every_time(storage, cap, desired)
    assert stats.appends_lost == 0
    assert stats.updates_written == len(consolidate(desired))
    assert sink.read_cap.frontier == Antichain([final - 1])  # the output may compact to there
    sink.close()


def test_an_append_the_sink_wins_leaves_its_buffer_without_a_read_back(
    storage: Storage,
) -> None:
    """Its append at the read-back's upper is exactly what the output holds there; another
    writer's append after it is read back and corrected."""
    storage.create("view", SCHEMA)
    sink = SelfCorrectingSink(storage, "view")
    sink.step([(("a", 1), 0, 1), (("b", 2), 1, 1)], 2)
    assert sink.caught_up() and len(sink.correction) == 0
    other = SelfCorrectingSink(storage, "view")  # a replica, first to write "c"
    other.run([([(("a", 1), 0, 1), (("b", 2), 1, 1), (("c", 3), 2, 1)], 3)])
    sink.run([([(("c", 3), 2, 1)], 3)])
    assert written(storage, "view") == [(("a", 1), 0, 1), (("b", 2), 1, 1), (("c", 3), 2, 1)]
    other.close()
    sink.close()


def test_a_sink_takes_frames_and_antichains_and_refuses_going_back(storage: Storage) -> None:
    storage.create("view", SCHEMA)
    sink = SelfCorrectingSink(storage, "view")
    frame = pa.table({"key": ["a", "b"], "value": [1, 2], "_time": [0, 3], "_diff": [1, 1]}).cast(
        SCHEMA.append(pa.field("_time", pa.int64())).append(pa.field("_diff", pa.int64()))
    )
    sink.run([(frame, Antichain([2])), ([], 4)])
    assert written(storage, "view") == [(("a", 1), 0, 1), (("b", 2), 3, 1)]
    with pytest.raises(FrontierViolation, match="cannot move back"):
        sink.step(None, 3)
    with pytest.raises(FrontierViolation, match="at time 1 arrived after"):
        sink.step([(("c", 0), 1, 1)])
    sink.close()


def test_a_sink_whose_output_stalls_raises_a_changeflow_timeout(storage: Storage) -> None:
    storage.create("view", SCHEMA)
    sink = SelfCorrectingSink(storage, "view")
    # Its write capability moved on, as another writer's append would move it, but the
    # output's upper never follows: nothing comes back to read.
    storage.downgrade(sink.write_cap, Antichain([3]))
    with pytest.raises(Timeout, match=r"view: the output's upper stayed at \[0\] for 0.05 s") as e:
        sink.run([([], 5)], idle_timeout=0.05)
    assert (e.value.persisted, e.value.desired, e.value.seconds) == (0, 5, 0.05)
    sink.close()


# -- two replicas in two processes ------------------------------------------------------------

WORKER = """
import json, random, sys, time
from pathlib import Path
from changeflow.compute.sink import SelfCorrectingSink
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus

location, blob_root, steps_file, start, replica = sys.argv[1:6]
storage = Storage(open_consensus(location), Blob(blob_root))
steps = [
    ([(tuple(d), t, r) for d, t, r in updates], frontier)
    for updates, frontier in json.loads(Path(steps_file).read_text())
]
sink = SelfCorrectingSink(storage, "view")
rng = random.Random(int(replica))
while not Path(start).exists():
    time.sleep(0.001)


def paced():
    for step in steps:
        time.sleep(rng.uniform(0, 0.01))
        yield step


stats = sink.run(paced(), idle_timeout=60)
sink.close()
print(json.dumps(stats.__dict__))
"""


def test_two_replicas_in_two_processes_write_the_desired_collection_once(
    consensus_location: str, tmp_path: Path
) -> None:
    storage = open_storage(consensus_location, tmp_path)
    cap, write = storage.create("view", SCHEMA)
    storage.drop(write)
    steps = desired_stream(seed=7, steps=40)
    steps_file, start = tmp_path / "steps.json", tmp_path / "start"
    steps_file.write_text(json.dumps(steps))
    replicas = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                consensus_location,
                str(tmp_path / "blob"),
                str(steps_file),
                str(start),
                str(replica),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for replica in range(2)
    ]
    while len(storage.state("view").readers) < 3:  # both replicas hold their capabilities
        time.sleep(0.01)
    start.touch()
    stats = []
    for p in replicas:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        stats.append(json.loads(out))
    print(f"\nreplica stats ({consensus_location.split(':')[0]}): {stats}")

    desired = updates_of(steps)
    assert storage.state("view").upper == Antichain([steps[-1][1]])
    assert written(storage, "view") == consolidate(desired)
    check_every_time(storage, cap, desired)
    # Every won append is exactly the desired updates of its window: nothing is written twice.
    assert sum(s["updates_written"] for s in stats) == len(consolidate(desired))


# -- restart ----------------------------------------------------------------------------------


def wrong(steps: list[Step]) -> list[Step]:
    """The stream with a bogus row at time 0 and the first step's updates lost."""
    first, frontier = steps[0]
    return [([(("bogus", 0), 0, 1), *first[1:]], frontier), *steps[1:]]


@pytest.mark.parametrize("history", ["partial", "wrong"])
def test_a_restarted_sink_converges_without_duplicates(storage: Storage, history: str) -> None:
    created = storage.create("view", SCHEMA)
    for c in created:
        storage.drop(c)  # since follows the sinks' read capabilities
    steps = desired_stream(seed=5)
    assert steps[0][0], "the wrong history drops an update of the first step"
    first = SelfCorrectingSink(storage, "view")
    for updates, frontier in (steps if history == "partial" else wrong(steps))[:12]:
        first.step(updates, frontier)  # then stop, whatever it was doing
    first.close()
    state = storage.state("view")
    since, start = state.since.elements[0], state.upper.elements[0]
    assert 0 < since < start < steps[-1][1]

    restarted = SelfCorrectingSink(storage, "view")
    assert restarted.as_of == since
    cap, write = storage.acquire_capabilities("view")
    storage.drop(write)
    stats = restarted.run(steps)
    desired = updates_of(steps)

    assert storage.state("view").upper == Antichain([steps[-1][1]])
    check_every_time(storage, cap, desired, start=start)
    later = [u for u in consolidate(desired) if u[1] >= start]
    if history == "partial":
        check_every_time(storage, cap, desired)  # the first sink's part was right already
        assert stats.updates_written == len(later)  # nothing it wrote is written again
    else:
        assert output_at(storage, cap, start - 1) != read(desired, start - 1)  # history stays
        assert output_at(storage, cap, start) == read(desired, start)  # corrected at start
        assert stats.updates_written > len(later)
    restarted.close()


# -- far-future retractions -------------------------------------------------------------------


def test_far_future_retractions_are_written_when_the_frontier_passes_them(
    storage: Storage,
) -> None:
    cap, write = storage.create("view", SCHEMA)
    storage.drop(write)
    steps: list[Step] = [
        ([((f"k{t}", t), t, 1), ((f"k{t}", t), t + (2**40 if t % 5 == 0 else 1000), -1)], t + 1)
        for t in range(30)
    ]
    steps += [([], 1010), ([], 1031), ([], 2**40 + 12), ([], 2**40 + 31)]
    sink = SelfCorrectingSink(storage, "view")
    desired: list[Update] = []
    for updates, frontier in steps:
        desired += updates
        sink.step(updates, frontier)
        sink.run([])  # write and read back up to the frontier
        assert storage.state("view").upper == Antichain([frontier])
        due = [u for u in consolidate(desired) if u[1] < frontier]
        assert written(storage, "view") == due  # every update at its own time, none early
        assert output_at(storage, cap, frontier - 1) == read(desired, frontier - 1)

    times = {t for _, t, _ in desired} | {t - 1 for _, t, _ in desired if t}
    for t in sorted(times):
        assert output_at(storage, cap, t) == read(desired, t), f"at time {t}"
    assert read(desired, 2**40 + 30) == {} and output_at(storage, cap, 2**40 + 30) == {}
    assert sink.stats.updates_written == len(desired) == 60
    sink.close()
