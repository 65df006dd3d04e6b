"""Consensus: one contract, the same suite on SQLite and on PostgreSQL.

Every test takes ``consensus_location``, a fresh SQLite file or a fresh PostgreSQL database, so
both backends must pass the same tests: compare-and-set, scan, truncate, several instances on one
location, several processes racing on one key, and random operations against a dict model.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.errors import InvalidInput
from changeflow.storage.consensus import (
    Consensus,
    ConsensusUnavailable,
    Decoded,
    VersionedData,
    open_consensus,
)


@pytest.fixture
def consensus(consensus_location: str) -> Iterator[Consensus]:
    c = open_consensus(consensus_location)
    yield c
    c.close()


def fill(c: Consensus, key: str, n: int) -> None:
    """Write versions 1..n of ``key``, each with data ``b"v<seqno>"``."""
    head = c.head(key)
    for seqno in range(head.seqno + 1 if head else 1, n + 1):
        assert c.compare_and_set(key, seqno - 1 or None, VersionedData(seqno, f"v{seqno}".encode()))


def test_head_of_a_missing_key_is_none(consensus: Consensus) -> None:
    assert consensus.head("nothing") is None
    assert consensus.scan("nothing") == []
    assert consensus.truncate("nothing", 10) == 0


def test_cas_from_none_creates_seqno_1(consensus: Consensus) -> None:
    assert consensus.compare_and_set("k", None, VersionedData(1, b"one"))
    assert consensus.head("k") == VersionedData(1, b"one")
    assert consensus.compare_and_set("k", 1, VersionedData(2, b"\x00two\xff"))
    assert consensus.head("k") == VersionedData(2, b"\x00two\xff")
    assert consensus.scan("k") == [VersionedData(1, b"one"), VersionedData(2, b"\x00two\xff")]


def test_head_leaves_out_the_data_of_a_known_seqno(consensus: Consensus) -> None:
    fill(consensus, "k", 2)
    assert consensus.head("k", 2) == VersionedData(2, b"")  # the caller has it
    assert consensus.head("k", 1) == VersionedData(2, b"v2")
    assert consensus.head("k", None) == VersionedData(2, b"v2")
    assert consensus.head("missing", 1) is None
    decoded = Decoded(consensus, lambda head: head.data.decode())
    assert decoded.head("k")[1] == "v2"
    assert decoded.head("k")[1] == "v2"  # unchanged: its data not read again
    fill(consensus, "k", 3)
    assert decoded.head("k") == (VersionedData(3, b"v3"), "v3")


def test_cas_with_a_wrong_expected_changes_nothing(consensus: Consensus) -> None:
    fill(consensus, "k", 3)
    before = consensus.scan("k")
    assert not consensus.compare_and_set("k", None, VersionedData(1, b"x"))
    assert not consensus.compare_and_set("k", 2, VersionedData(3, b"x"))
    assert not consensus.compare_and_set("k", 4, VersionedData(5, b"x"))
    assert consensus.scan("k") == before
    assert consensus.head("k") == VersionedData(3, b"v3")
    # On a missing key, any expected other than None loses.
    assert not consensus.compare_and_set("fresh", 0, VersionedData(1, b"x"))
    assert not consensus.compare_and_set("fresh", 5, VersionedData(6, b"x"))
    assert consensus.head("fresh") is None


@pytest.mark.parametrize(("expected", "seqno"), [(None, 0), (None, 2), (3, 3), (3, 5), (3, 2)])
def test_seqno_must_be_expected_plus_one(
    consensus: Consensus, expected: int | None, seqno: int
) -> None:
    fill(consensus, "k", 3)
    with pytest.raises(ValueError, match="next seqno"):
        consensus.compare_and_set("k", expected, VersionedData(seqno, b"x"))
    assert consensus.head("k") == VersionedData(3, b"v3")
    assert len(consensus.scan("k")) == 3


def test_scan_order_limit_and_from(consensus: Consensus) -> None:
    fill(consensus, "k", 10)
    every = [VersionedData(s, f"v{s}".encode()) for s in range(1, 11)]
    assert consensus.scan("k") == every
    assert consensus.scan("k", limit=3) == every[:3]
    assert consensus.scan("k", from_seqno=4) == every[3:]
    assert consensus.scan("k", from_seqno=4, limit=2) == every[3:5]
    assert consensus.scan("k", from_seqno=10) == every[9:]
    assert consensus.scan("k", from_seqno=11) == []
    assert consensus.scan("k", limit=0) == []


def test_truncate_keeps_the_head_and_deletes_below(consensus: Consensus) -> None:
    fill(consensus, "k", 5)
    assert consensus.truncate("k", 3) == 2
    assert [v.seqno for v in consensus.scan("k")] == [3, 4, 5]
    assert consensus.truncate("k", 3) == 0
    # Truncating past the head keeps the head.
    assert consensus.truncate("k", 100) == 2
    assert consensus.scan("k") == [VersionedData(5, b"v5")]
    assert consensus.head("k") == VersionedData(5, b"v5")
    # The key goes on from its head.
    assert not consensus.compare_and_set("k", None, VersionedData(1, b"again"))
    assert consensus.compare_and_set("k", 5, VersionedData(6, b"v6"))
    assert [v.seqno for v in consensus.scan("k")] == [5, 6]


def test_keys_are_independent(consensus: Consensus) -> None:
    fill(consensus, "a", 4)
    fill(consensus, "b", 2)
    assert consensus.compare_and_set("c", None, VersionedData(1, b"c1"))
    assert consensus.truncate("a", 4) == 3
    assert [v.seqno for v in consensus.scan("a")] == [4]
    assert [v.seqno for v in consensus.scan("b")] == [1, 2]
    assert consensus.head("b") == VersionedData(2, b"v2")
    assert consensus.head("c") == VersionedData(1, b"c1")
    assert not consensus.compare_and_set("b", 4, VersionedData(5, b"x"))
    assert consensus.head("a") == VersionedData(4, b"v4")
    # Keys that share a prefix are still different keys.
    assert consensus.head("a ") is None
    assert consensus.head("A") is None


def test_decoded_values_follow_another_instances_writes(consensus_location: str) -> None:
    """:class:`Decoded` decodes each version once, and still sees what another instance (or
    process) wrote since."""
    first = open_consensus(consensus_location)
    second = open_consensus(consensus_location)
    decoded: list[int] = []

    def decode(head: VersionedData) -> str:
        decoded.append(head.seqno)
        return head.data.decode().upper()

    values = Decoded(first, decode)
    try:
        assert values.head("k") == (None, None)
        fill(first, "k", 2)
        assert values.head("k")[1] == values.head("k")[1] == "V2"
        assert second.compare_and_set("k", 2, VersionedData(3, b"other"))
        assert values.head("k") == (VersionedData(3, b"other"), "OTHER")
        assert decoded == [2, 3]
    finally:
        first.close()
        second.close()


def test_another_instance_sees_the_state(consensus_location: str) -> None:
    first = open_consensus(consensus_location)
    second = open_consensus(consensus_location)
    try:
        fill(first, "k", 3)
        assert second.head("k") == VersionedData(3, b"v3")
        assert not second.compare_and_set("k", 2, VersionedData(3, b"x"))
        assert second.compare_and_set("k", 3, VersionedData(4, b"from second"))
        assert first.head("k") == VersionedData(4, b"from second")
        assert not first.compare_and_set("k", 3, VersionedData(4, b"x"))
        assert first.truncate("k", 4) == 3
        assert [v.seqno for v in second.scan("k")] == [4]
    finally:
        first.close()
        second.close()
    third = open_consensus(consensus_location)  # after every instance closed: still there
    try:
        assert third.head("k") == VersionedData(4, b"from second")
    finally:
        third.close()


WORKER = """
import sys, time
from pathlib import Path
from changeflow.storage.consensus import VersionedData, open_consensus

location, key, worker, wins, gate = sys.argv[1:6]
wins, gate = int(wins), Path(gate)
(gate / f"ready-{worker}").touch()
while not (gate / "go").exists():
    time.sleep(0.001)
c = open_consensus(location)
won = 0
while won < wins:
    head = c.head(key)
    expected = head.seqno if head else None
    new = VersionedData((expected or 0) + 1, f"{worker}:{won}".encode())
    if c.compare_and_set(key, expected, new):
        won += 1
c.close()
"""


def run_workers(location: str, key: str, workers: int, wins: int, gate: Path) -> None:
    """Start ``workers`` processes on ``location`` at once; each CASes ``key`` until it won ``wins``
    times; wait for all of them."""
    gate.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, location, key, str(w), str(wins), str(gate)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
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
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_many_opening_a_fresh_location_at_once_all_open_it(consensus_location: str) -> None:
    """Creating the store races too: every opener must succeed and see one store."""
    start = threading.Barrier(8)

    def open_one(_: int) -> Consensus:
        start.wait()
        return open_consensus(consensus_location)

    with ThreadPoolExecutor(8) as pool:
        opened = list(pool.map(open_one, range(8)))
    try:
        assert opened[0].compare_and_set("k", None, VersionedData(1, b"x"))
        assert all(c.head("k") == VersionedData(1, b"x") for c in opened)
    finally:
        for c in opened:
            c.close()


def test_processes_racing_on_one_key_lose_nothing(consensus_location: str, tmp_path: Path) -> None:
    """Processes that open a fresh location at the same moment and race to CAS one key: every
    version 1..N*K exists exactly once and holds one win of one worker, each win exactly once."""
    workers, wins = 4, 25
    run_workers(consensus_location, "raced", workers, wins, tmp_path / "gate")
    c = open_consensus(consensus_location)
    try:
        versions = c.scan("raced", limit=10 * workers * wins)
        assert [v.seqno for v in versions] == list(range(1, workers * wins + 1))
        payloads = [v.data.decode() for v in versions]
        assert sorted(payloads) == sorted(f"{w}:{i}" for w in range(workers) for i in range(wins))
        for w in range(workers):  # each worker's wins, in the order it won them
            mine = [int(p.split(":")[1]) for p in payloads if p.startswith(f"{w}:")]
            assert mine == list(range(wins))
        assert c.head("raced") == versions[-1]
    finally:
        c.close()


# A CAS: (key index, how wrong the expected seqno is (0: right), data); a truncate: (key, seqno).
cas_op = st.tuples(
    st.just("cas"),
    st.integers(0, 2),
    st.sampled_from([0, 0, 0, -1, 1, 2, None]),
    st.binary(max_size=8),
)
truncate_op = st.tuples(st.just("truncate"), st.integers(0, 2), st.integers(0, 12))


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.one_of(cas_op, cas_op, cas_op, truncate_op), max_size=30))
def test_random_operations_match_a_dict_model(
    consensus: Consensus, ops: list[tuple[object, ...]]
) -> None:
    run = uuid.uuid4().hex  # one location for every example: fresh keys for each
    keys = [f"{run}/{i}" for i in range(3)]
    model: dict[str, dict[int, bytes]] = {k: {} for k in keys}
    for op in ops:
        key = keys[op[1]]
        versions = model[key]
        head = max(versions) if versions else None
        if op[0] == "cas":
            _, _, wrong, data = op
            if wrong is None:  # "no version yet"
                expected = None
            else:
                expected = (head or 0) + wrong
                expected = None if expected == 0 else expected
            if expected is not None and expected < 0:
                continue
            written = consensus.compare_and_set(
                key, expected, VersionedData((expected or 0) + 1, data)
            )
            assert written == (expected == head)
            if written:
                versions[(expected or 0) + 1] = data
        else:
            _, _, seqno = op
            doomed = [s for s in versions if s < seqno and s != head]
            assert consensus.truncate(key, seqno) == len(doomed)
            for s in doomed:
                del versions[s]
        for k in keys:
            expected_versions = [VersionedData(s, d) for s, d in sorted(model[k].items())]
            assert consensus.scan(k) == expected_versions
            assert consensus.head(k) == (expected_versions[-1] if expected_versions else None)


def test_an_unknown_scheme_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"'mysql://x' is neither sqlite:PATH nor postgresql://"):
        open_consensus("mysql://x")
    with pytest.raises(InvalidInput, match="CHANGEFLOW_CONSENSUS"):
        open_consensus(str(tmp_path / "consensus.sqlite"))


def test_an_unreachable_postgres_is_unavailable_and_the_password_is_redacted() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once the socket is closed
    url = f"postgresql://someone:hunter2secret@127.0.0.1:{port}/consensus"
    with pytest.raises(ConsensusUnavailable) as info:
        open_consensus(url)
    message = str(info.value)
    assert "hunter2secret" not in message
    assert f"postgresql://someone@127.0.0.1:{port}/consensus" in message


@pytest.mark.postgres
def test_the_postgres_scheme_is_accepted_too(postgres_url: str) -> None:
    c = open_consensus("postgres://" + postgres_url.removeprefix("postgresql://"))
    try:
        key = uuid.uuid4().hex
        assert c.compare_and_set(key, None, VersionedData(1, b"x"))
        assert c.head(key) == VersionedData(1, b"x")
    finally:
        c.close()


def test_a_head_read_again_sees_every_other_writer(tmp_path: Path) -> None:
    """A SQLite head read before is current after a write by this connection, by another
    thread's connection, or by another opener of the file (as another process)."""
    location = f"sqlite:{tmp_path / 'c.sqlite'}"
    mine, other = open_consensus(location), open_consensus(location)
    fill(mine, "k", 1)
    assert mine.head("k") == VersionedData(1, b"v1")
    assert mine.compare_and_set("k", 1, VersionedData(2, b"v2"))
    assert mine.head("k") == VersionedData(2, b"v2")
    assert other.compare_and_set("k", 2, VersionedData(3, b"v3"))
    assert mine.head("k") == VersionedData(3, b"v3")
    assert mine.head("k", 3) == VersionedData(3, b"")
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(mine.compare_and_set, "k", 3, VersionedData(4, b"v4")).result()
    assert mine.head("k", 3) == VersionedData(4, b"v4")
    mine.close()
    other.close()


def test_heads_carried_past_a_commit_are_those_of_every_writer(tmp_path: Path) -> None:
    """A commit carries this opener's heads read since its last sight of the file to the new
    stamp (no query for them next): never a head another writer moved before that commit."""
    location = f"sqlite:{tmp_path / 'c.sqlite'}"
    mine, other = open_consensus(location), open_consensus(location)
    try:
        for key in ("a", "b", "c"):
            fill(mine, key, 1)
        assert [mine.head(k) for k in "abc"] == [VersionedData(1, b"v1")] * 3
        assert other.compare_and_set("b", 1, VersionedData(2, b"theirs"))  # after mine read b
        assert mine.compare_and_set("a", 1, VersionedData(2, b"mine"))
        assert mine.head("a") == VersionedData(2, b"mine")
        assert mine.head("b") == VersionedData(2, b"theirs")
        assert mine.head("c") == VersionedData(1, b"v1")
        assert mine.compare_and_set("c", 1, VersionedData(2, b"again"))  # a, b carried
        assert other.compare_and_set("a", 2, VersionedData(3, b"theirs"))
        assert [mine.head(k) for k in "abc"] == [
            VersionedData(3, b"theirs"),
            VersionedData(2, b"theirs"),
            VersionedData(2, b"again"),
        ]
    finally:
        mine.close()
        other.close()


def test_a_commit_landing_right_after_this_ones_is_never_hidden(tmp_path: Path) -> None:
    """Another writer's commit between this commit and its look at the file's stamp: the
    heads are not carried to that later stamp (they would be stale at it, and every
    compare-and-set expecting them would fail again and again)."""
    location = f"sqlite:{tmp_path / 'c.sqlite'}"
    mine, other = open_consensus(location), open_consensus(location)
    try:
        for key in ("a", "b"):
            fill(mine, key, 1)
        assert [mine.head(k) for k in "ab"] == [VersionedData(1, b"v1")] * 2
        wal = mine._wal_index()
        assert wal is not None
        stamp, calls = wal.stamp, []

        def stamp_after_theirs() -> bytes:
            calls.append(1)
            if len(calls) == 2:  # after this commit, before its stamp is read
                assert other.compare_and_set("a", 2, VersionedData(3, b"theirs"))
                assert other.compare_and_set("b", 1, VersionedData(2, b"theirs"))
            return stamp()

        wal.stamp = stamp_after_theirs  # type: ignore[method-assign]
        assert mine.compare_and_set("a", 1, VersionedData(2, b"mine"))
        wal.stamp = stamp  # type: ignore[method-assign]
        assert len(calls) == 2
        assert mine.head("a") == VersionedData(3, b"theirs")
        assert mine.head("b") == VersionedData(2, b"theirs")
        assert mine.compare_and_set("a", 3, VersionedData(4, b"mine again"))
    finally:
        mine.close()
        other.close()


BUMP = """
import sys
from changeflow.storage.consensus import VersionedData, open_consensus
c = open_consensus(sys.argv[1])
head = c.head("k")
assert c.compare_and_set("k", head.seqno, VersionedData(head.seqno + 1, b"other"))
c.close()
"""


def test_a_head_every_thread_shares_is_current_after_another_processs_write(
    tmp_path: Path,
) -> None:
    """SQLite heads are shared by the threads of a process while nothing commits: one read
    by a thread, then a commit by another process, and every thread reads the new head."""
    location = f"sqlite:{tmp_path / 'c.sqlite'}"
    c = open_consensus(location)
    try:
        fill(c, "k", 1)
        for seqno in range(2, 5):
            with ThreadPoolExecutor(1) as pool:
                before = pool.submit(c.head, "k").result()
            assert before == c.head("k")
            assert c.head("k", seqno - 1) == VersionedData(seqno - 1, b"")
            subprocess.run([sys.executable, "-c", BUMP, location], check=True, timeout=120)
            assert c.head("k") == VersionedData(seqno, b"other")
            with ThreadPoolExecutor(1) as pool:
                assert pool.submit(c.head, "k", seqno - 1).result() == VersionedData(
                    seqno, b"other"
                )
    finally:
        c.close()


_COMMIT_THEN_DIE = """
import os, signal, sys
from changeflow.storage.consensus import VersionedData, open_consensus
c = open_consensus(sys.argv[1])
assert c.compare_and_set("k", None, VersionedData(1, b"kept"))
assert c._conn().execute("PRAGMA synchronous").fetchone()[0] == int(sys.argv[2])
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize(("level", "pragma"), [("full", 2), ("normal", 1), ("", 2)])
def test_a_sqlite_commit_survives_a_sigkill_at_each_sync_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: str, pragma: int
) -> None:
    """CHANGEFLOW_SQLITE_SYNC sets how commits reach the disk (unset or empty: full); at
    each level a commit whose call returned is there after its process is killed."""
    from changeflow.storage.consensus import SYNC_ENV

    location = f"sqlite:{tmp_path / 'c.sqlite'}"
    open_consensus(location).close()  # made
    monkeypatch.setenv(SYNC_ENV, level)
    run = [sys.executable, "-c", _COMMIT_THEN_DIE, location, str(pragma)]
    assert subprocess.run(run, timeout=300).returncode == -9
    c = open_consensus(location)
    try:
        assert c.head("k") == VersionedData(1, b"kept")
    finally:
        c.close()


def test_an_unknown_sqlite_sync_level_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from changeflow.storage.consensus import SYNC_ENV

    monkeypatch.setenv(SYNC_ENV, "off")
    with pytest.raises(InvalidInput, match="CHANGEFLOW_SQLITE_SYNC must be one of full, normal"):
        open_consensus(f"sqlite:{tmp_path / 'c.sqlite'}").head("k")
