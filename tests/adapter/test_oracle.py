"""The timestamp oracle against the laws of the formalism, on SQLite and on PostgreSQL.

The laws of the seed's oracle, as this oracle states them (a write command is ``write_ts`` then
``apply_write`` of it; ``advance_to`` is a timeline's data moving on):

1. timestamps never decrease: a read_ts is at least every read_ts before it and every write
   applied before it; write timestamps strictly increase;
2. a write_ts is strictly greater than every read_ts returned before it;
3. a read_ts is at least what the timeline was advanced to (its inputs are readable there);
4. a write_ts is at least what the timeline was advanced to (it is writable there), and at least
   the wall clock in EpochMilliseconds.

Checked against a model in one process with several oracle instances on one consensus (so
their cached versions go stale), and from a log of concurrent processes.
"""

from __future__ import annotations

import bisect
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.oracle import TRUNCATE_EVERY, TimestampOracle
from changeflow.adapter.timelines import Timeline
from changeflow.errors import InvalidInput, InvalidTime, StoreMismatch
from changeflow.storage.consensus import Consensus, VersionedData, open_consensus

WORKER = Path(__file__).with_name("oracle_worker.py")
COMMANDS = ("read_ts", "apply_write")  # a read, a write command (write_ts then apply_write)


class Clock:
    """A wall clock the test sets (seconds since the epoch, like ``time.time``)."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


@pytest.fixture
def consensus(consensus_location: str) -> Iterator[Consensus]:
    c = open_consensus(consensus_location)
    yield c
    c.close()


def test_initial_state(consensus: Consensus) -> None:
    """EpochMilliseconds starts at the wall clock, other timelines at 0."""
    epoch = TimestampOracle(consensus, "EpochMilliseconds", clock=Clock(1_000_000))
    assert (epoch.read_ts(), epoch.peek_write_ts()) == (1_000_000, 1_000_000)
    assert epoch.write_ts() == 1_000_001
    user = TimestampOracle(consensus, Timeline.user("shop"), clock=Clock(1_000_000))
    assert (user.read_ts(), user.peek_write_ts()) == (0, 0)
    assert [user.write_ts(), user.write_ts()] == [1, 2]
    assert user.read_ts() == 0  # nothing applied
    user.apply_write(2)
    assert (user.read_ts(), user.peek_write_ts()) == (2, 2)
    assert consensus.head("oracle/User(shop)") is not None
    assert epoch.read_ts() == 1_000_000  # timelines are independent


def test_a_floor_raises_reads_and_writes_without_a_write_of_its_own(
    consensus: Consensus,
) -> None:
    """A timeline committing through a log of its own: read timestamps are at least the log's
    last commit (the floor), write timestamps above it, and nothing is written for that."""
    last = [-1]
    oracle = TimestampOracle(
        consensus, "EpochMilliseconds", clock=Clock(1_000_000), floor=lambda: last[0]
    )
    seqno = consensus.head("oracle/EpochMilliseconds").seqno
    assert oracle.read_ts() == 1_000_000
    last[0] = 1_000_050  # a commit in the log, ahead of the clock
    assert oracle.read_ts() == 1_000_050
    assert consensus.head("oracle/EpochMilliseconds").seqno == seqno
    assert oracle.write_ts() == 1_000_051
    oracle.apply_write(1_000_020)  # behind the floor: reads stay at the floor
    assert oracle.read_ts() == 1_000_050


def test_wall_clock_going_backwards(consensus: Consensus) -> None:
    clock = Clock(5_000_000)
    oracle = TimestampOracle(consensus, "EpochMilliseconds", clock=clock)
    clock.ms = 5_000_100
    assert oracle.write_ts() == 5_000_100
    clock.ms = 4_000_000  # back by 1000 s
    assert oracle.write_ts() == 5_000_101
    assert oracle.write_ts() == 5_000_102
    oracle.apply_write(5_000_102)
    assert oracle.read_ts() == 5_000_102
    clock.ms = 5_000_050  # still behind what was handed out
    assert oracle.write_ts() == 5_000_103
    clock.ms = 6_000_000
    assert oracle.write_ts() == 6_000_000
    assert oracle.read_ts() == 5_000_102  # the clock alone moves no read


def test_a_fresh_oracle_resumes_from_the_consensus(consensus_location: str) -> None:
    """Durable: another connection (another process, after a restart) continues where the
    first left off, whatever its clock says; reopening does not reset the state."""
    first_consensus = open_consensus(consensus_location)
    first = TimestampOracle(first_consensus, "EpochMilliseconds", clock=Clock(9_000_000))
    for _ in range(3):
        first.apply_write(first.write_ts())
    assert first.read_ts() == 9_000_003
    first_consensus.close()
    again = open_consensus(consensus_location)
    try:
        second = TimestampOracle(again, "EpochMilliseconds", clock=Clock(1_000))
        assert (second.read_ts(), second.peek_write_ts()) == (9_000_003, 9_000_003)
        assert second.write_ts() == 9_000_004
        user = TimestampOracle(again, "External(orders)")
        user.advance_to(40)
        assert TimestampOracle(again, "External(orders)").read_ts() == 40
    finally:
        again.close()


def test_advance_to(consensus: Consensus) -> None:
    oracle = TimestampOracle(consensus, "External(orders)")
    oracle.advance_to(100)
    assert (oracle.read_ts(), oracle.peek_write_ts()) == (100, 100)
    oracle.advance_to(50)  # never backwards
    assert (oracle.read_ts(), oracle.peek_write_ts()) == (100, 100)
    assert oracle.write_ts() == 101
    assert oracle.read_ts() == 100
    oracle.advance_to(101)
    assert (oracle.read_ts(), oracle.peek_write_ts()) == (101, 101)
    epoch = TimestampOracle(consensus, "EpochMilliseconds")
    with pytest.raises(InvalidInput, match="use apply_write"):
        epoch.advance_to(10)


@pytest.mark.parametrize("bad", [-1, 2**63, True, 1.5, "3", None])
def test_bad_timestamps_are_refused(consensus: Consensus, bad: object) -> None:
    oracle = TimestampOracle(consensus, "User(x)")
    with pytest.raises(InvalidTime, match=r"timeline User\(x\)"):
        oracle.apply_write(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidTime):
        oracle.advance_to(bad)  # type: ignore[arg-type]
    assert oracle.read_ts() == 0


def test_no_write_timestamp_after_the_last_time(consensus: Consensus) -> None:
    oracle = TimestampOracle(consensus, "User(x)")
    oracle.apply_write(2**63 - 1)
    with pytest.raises(InvalidTime, match="no write timestamp after"):
        oracle.write_ts()


def test_old_versions_are_truncated(consensus: Consensus) -> None:
    oracle = TimestampOracle(consensus, "User(x)")
    for _ in range(3 * TRUNCATE_EVERY):
        oracle.apply_write(oracle.write_ts())
    versions = consensus.scan(oracle.key, limit=10 * TRUNCATE_EVERY)
    assert len(versions) <= TRUNCATE_EVERY
    assert versions[-1].seqno == 6 * TRUNCATE_EVERY + 1
    assert oracle.read_ts() == 3 * TRUNCATE_EVERY


def test_a_foreign_value_under_the_key_is_refused(consensus: Consensus) -> None:
    consensus.compare_and_set("oracle/User(x)", None, VersionedData(1, b"not json"))
    with pytest.raises(StoreMismatch, match="does not hold a timestamp oracle state"):
        TimestampOracle(consensus, "User(x)")


def test_instances_with_stale_versions_retry(consensus: Consensus) -> None:
    """Two instances on one key: each compare-and-set that lost is retried on the new head."""
    a = TimestampOracle(consensus, "User(x)")
    b = TimestampOracle(consensus, "User(x)")
    assert [a.write_ts(), b.write_ts(), a.write_ts(), b.write_ts()] == [1, 2, 3, 4]
    assert b.retries == 2 and a.retries == 1
    b.apply_write(3)
    a.apply_write(2)  # already visible: nothing to write
    assert a.read_ts() == 3


# Operations: (kind, which instance, argument). ``tick`` moves the clock by ms (backwards too);
# ``apply`` applies the write timestamp obtained ``arg`` writes ago (or a fresh value).
ops = st.lists(
    st.tuples(
        st.sampled_from(["write", "write", "read", "read", "peek", "apply", "advance", "tick"]),
        st.integers(0, 2),
        st.integers(-40, 40),
    ),
    max_size=60,
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(epoch=st.booleans(), ops=ops, offset=st.integers(-20, 20))
def test_random_interleavings_keep_the_laws(
    consensus: Consensus, epoch: bool, ops: list[tuple[str, int, int]], offset: int
) -> None:
    """Random operations through three instances on one timeline: every result equals the
    model's and satisfies the laws against every operation completed before it."""
    timeline = "EpochMilliseconds" if epoch else f"User({uuid.uuid4().hex})"
    clock = Clock(1_700_000_000_000)
    oracles = [TimestampOracle(consensus, timeline, clock=clock) for _ in range(3)]
    # The model: exact state (the epoch key is shared by every example, so start from it).
    read, write = oracles[0].read_ts(), oracles[0].peek_write_ts()
    clock.ms = write + offset
    reads: list[int] = [read]  # every read_ts returned
    writes: list[int] = [write]  # every write_ts returned (and the start)
    applied: list[int] = [read]  # every ts whose apply_write or advance_to completed
    for kind, i, arg in ops:
        oracle = oracles[i]
        if kind == "write":
            ts = oracle.write_ts()
            write = max(write + 1, clock.ms if epoch else 0)
            assert ts == write
            assert ts > max(reads)  # law 2
            assert ts > max(writes)  # law 1
            assert ts >= max(applied)  # law 4
            assert not epoch or ts >= clock.ms  # law 4: the wall clock
            writes.append(ts)
        elif kind in ("read", "peek"):
            ts = oracle.read_ts() if kind == "read" else oracle.peek_write_ts()
            assert ts == (read if kind == "read" else write)
            if kind == "read":
                assert ts >= max(reads)  # law 1
                assert ts >= max(applied)  # laws 1 and 3
                reads.append(ts)
            else:
                assert ts >= max(writes)
        elif kind == "apply":
            ts = writes[-1 - min(abs(arg), len(writes) - 1)] if arg >= 0 else write - arg
            oracle.apply_write(ts)
            read, write = max(read, ts), max(write, ts)
            applied.append(ts)
        elif kind == "advance" and not epoch:
            ts = max(0, write + arg)
            oracle.advance_to(ts)
            read, write = max(read, ts), max(write, ts)
            applied.append(ts)
        elif kind == "tick":
            clock.ms += arg
    assert (oracles[2].read_ts(), oracles[1].peek_write_ts()) == (read, write)


def run_workers(
    location: str, timeline: str, workers: int, count: int, tmp: Path
) -> tuple[list[list[list]], list[int]]:
    """Run ``workers`` processes of ``count`` operations at once; their logs and the number of
    compare-and-sets each lost (and retried)."""
    gate = tmp / "gate"
    gate.mkdir()
    retries: list[int] = []  # compare-and-sets each worker lost
    logs = [tmp / f"log-{w}.jsonl" for w in range(workers)]
    args = [location, timeline]
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), *args, str(w), str(count), str(w), str(gate), str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w, log in enumerate(logs)
    ]
    try:
        deadline = time.monotonic() + 60
        while len(list(gate.glob("ready-*"))) < workers:
            failed = [p for p in procs if p.poll() not in (None, 0)]
            assert not failed, failed[0].communicate()[1]
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.01)
        (gate / "go").touch()
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            retries.append(int(out))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [[json.loads(line) for line in log.read_text().splitlines()] for log in logs], retries


class Before:
    """The greatest result of operations completed before a given moment."""

    def __init__(self, entries: list[list]) -> None:
        entries = sorted(entries, key=lambda e: e[3])
        self.done = [e[3] for e in entries]
        self.best: list[int] = []
        for e in entries:
            value = e[5] if e[5] is not None else e[1]
            self.best.append(max(self.best[-1], value) if self.best else value)

    def __call__(self, moment: int) -> int | None:
        """The greatest over those completed strictly before ``moment``; None if none."""
        i = bisect.bisect_left(self.done, moment)
        return self.best[i - 1] if i else None


@pytest.mark.parametrize("timeline", ["EpochMilliseconds", "User(shop)"])
def test_concurrent_processes_keep_the_laws(
    consensus_location: str, tmp_path: Path, timeline: str
) -> None:
    """Processes racing on one oracle; from their logs of (operation, invocation, completion,
    result), every pair of operations in real-time order keeps the laws."""
    logs, _ = run_workers(consensus_location, timeline, workers=4, count=60, tmp=tmp_path)
    entries = [e for log in logs for e in log]
    by_op = {op: [e for e in entries if e[0] == op] for op in ("read_ts", "write_ts")}
    applied_before = Before([e for e in entries if e[0] in ("apply_write", "advance_to")])
    read_before = Before(by_op["read_ts"])
    write_before = Before(by_op["write_ts"])
    assert by_op["read_ts"] and by_op["write_ts"]
    for op, _, invoked, _, wall_ms, result in entries:
        if op == "read_ts":
            assert result >= (applied_before(invoked) or 0)  # laws 1 and 3
            assert result >= (read_before(invoked) or 0)  # law 1
        elif op == "write_ts":
            assert result > (read_before(invoked) or -1)  # law 2
            assert result > (write_before(invoked) or -1)  # law 1
            assert result >= (applied_before(invoked) or 0)  # law 4
            if timeline == "EpochMilliseconds":
                assert result >= wall_ms  # law 4: the wall clock
        elif op == "peek_write_ts":
            assert result >= (write_before(invoked) or 0)
    for log in logs:  # one process: the timestamps of its commands never decrease
        commands = [e[5] if e[0] == "read_ts" else e[1] for e in log if e[0] in COMMANDS]
        assert commands == sorted(commands)
    writes = [e[5] for e in by_op["write_ts"]]
    assert len(set(writes)) == len(writes)  # every write timestamp handed out once


def test_threads_sharing_one_oracle(consensus: Consensus) -> None:
    """Threads of one process may share an instance: every write timestamp is handed out once,
    and each thread's write commands and reads never go backwards."""
    oracle = TimestampOracle(consensus, "User(x)")
    seen: list[list[int]] = [[] for _ in range(4)]

    def work(mine: list[int]) -> None:
        for _ in range(25):
            ts = oracle.write_ts()
            oracle.apply_write(ts)
            assert oracle.read_ts() >= ts
            mine.append(ts)

    threads = [threading.Thread(target=work, args=(mine,)) for mine in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(mine == sorted(mine) and len(mine) == 25 for mine in seen)
    every = sorted(ts for mine in seen for ts in mine)
    assert every == list(range(1, 101))  # nothing else writes: no gaps either
    assert oracle.read_ts() == oracle.peek_write_ts() == 100
