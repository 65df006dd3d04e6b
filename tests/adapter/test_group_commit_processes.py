"""Group commit across processes on one home (``storage/spool.py``): a process waiting for its
turn leaves its blind writes in the spool, the process with the turn commits them with its own
in one log entry, and every acknowledged write of every process is there once after a
restart."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

from changeflow.adapter.environment import Environment
from changeflow.adapter.group_commit import _Pending
from changeflow.adapter.session import Session
from changeflow.config import Config
from changeflow.errors import ChangeflowError
from changeflow.storage.spool import LOCK, SPOOL

PROCESSES, THREADS, EACH = 3, 2, 12


def _insert_one(home: str, row: int, queue: Any, go: Any = None) -> None:
    """A process that inserts one row (after a first one, -``row``, and ``go``, if given)
    and reports its log entries written for it."""
    env = Environment(Config.load(home=home), host_seconds=None)
    try:
        if go is not None:
            Session(env).execute(f"INSERT INTO t VALUES ({-row}, 0, 0)")
            queue.put(("first", None))
            go.wait()
        before = env.committer.entries
        Session(env).execute(f"INSERT INTO t VALUES ({row}, 0, 0)")
        queue.put(("ok", env.committer.entries - before))
    except BaseException as e:  # noqa: BLE001 — reported to the test
        queue.put(("error", repr(e)))
    finally:
        env.close()


def _spooled(home: Path, count: int) -> None:
    """Wait (up to five minutes: a spawned process starts slowly under load) until ``count``
    writes wait in the spool."""
    deadline = time.monotonic() + 300
    while len(list((home / SPOOL).glob("*.json"))) < count:
        assert time.monotonic() < deadline, "the writes were never spooled"
        time.sleep(0.01)


def test_one_entry_carries_the_waiting_writes_of_two_processes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = Config.load(home=str(home))
    env = Environment(config, host_seconds=None)
    Session(env).execute("CREATE TABLE t (worker int NOT NULL, i int NOT NULL, v int)")
    ctx = multiprocessing.get_context("spawn")
    queue, go = ctx.Queue(), ctx.Event()
    other = ctx.Process(target=_insert_one, args=(str(home), 2, queue, go))
    other.start()
    assert queue.get(timeout=600)[0] == "first"
    Session(env).execute("INSERT INTO t VALUES (-1, 0, 0)")  # each has seen the other's commit
    lock = os.open(home / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the turn is taken: both writers spool and wait
    go.set()
    mine: list[BaseException] = []

    def insert() -> None:
        try:
            Session(env).execute("INSERT INTO t VALUES (1, 0, 0)")
        except BaseException as e:  # noqa: BLE001 — reported below
            mine.append(e)

    before = env.committer.entries
    thread = threading.Thread(target=insert)
    thread.start()
    try:
        _spooled(home, 2)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    thread.join()
    status, entries = queue.get(timeout=600)
    other.join()
    assert not mine and status == "ok", (mine, entries)
    assert env.committer.entries - before + entries == 1  # one entry carried both
    assert len(env.log.state().carried) == 1
    assert not list((home / SPOOL).glob("*.json"))
    env.close()
    reopened = Environment(config, host_seconds=None)
    try:
        got = Session(reopened).execute("SELECT worker FROM t ORDER BY worker")[-1].rows
    finally:
        reopened.close()
    assert got == [(-2,), (-1,), (1,), (2,)]


def _writer(home: str, worker: int, queue: Any) -> None:
    """A process of ``THREADS`` sessions, each inserting ``EACH`` rows and updating its own
    first row after each; reports what was acknowledged."""
    env = Environment(Config.load(home=home), host_seconds=None)
    acknowledged: dict[int, list[int]] = {}
    updates: dict[int, int] = {}
    failures: list[str] = []

    def work(who: int) -> None:
        session = Session(env)
        acknowledged[who], updates[who] = [], 0
        try:
            session.execute(f"INSERT INTO t VALUES ({who}, -1, 0)")
            for i in range(EACH):
                session.execute(f"INSERT INTO t VALUES ({who}, {i}, 0)")
                acknowledged[who].append(i)
                try:
                    session.execute(f"UPDATE t SET v = v + 1 WHERE worker = {who} AND i = -1")
                    updates[who] += 1
                except ChangeflowError as e:
                    if e.sqlstate != "40001":
                        raise
        except BaseException as e:  # noqa: BLE001 — reported to the test
            failures.append(repr(e))

    threads = [threading.Thread(target=work, args=(worker * THREADS + k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    env.close()
    queue.put((acknowledged, updates, failures))


def test_every_acknowledged_write_of_every_process_survives(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = Config.load(home=str(home))
    env = Environment(config, host_seconds=None)
    Session(env).execute("CREATE TABLE t (worker int NOT NULL, i int NOT NULL, v int)")
    env.close()
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(home), w, queue)) for w in range(PROCESSES)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    acknowledged: dict[int, list[int]] = {}
    updates: dict[int, int] = {}
    for acked, updated, failures in results:
        assert not failures, failures
        acknowledged.update(acked)
        updates.update(updated)
    reopened = Environment(config, host_seconds=None)
    try:
        got = Session(reopened).execute("SELECT worker, i, v FROM t")[-1].rows
    finally:
        reopened.close()
    assert len(acknowledged) == PROCESSES * THREADS
    for who, acked in acknowledged.items():
        rows = sorted(i for w, i, _ in got if w == who)
        assert rows == [-1, *acked]  # each acknowledged write once, nothing else
        assert [v for w, i, v in got if w == who and i == -1] == [updates[who]]
    assert not list((home / SPOOL).glob("*.json"))


def test_a_write_whose_carrier_died_after_committing_it_is_not_committed_again(
    tmp_path: Path,
) -> None:
    """The turn's holder commits a waiting process's spooled write and is killed before it
    removes the spool file: the owner, given the turn, finds its write named in the log and
    removes the file, so no later turn commits it a second time."""
    home = tmp_path / "home"
    config = Config.load(home=str(home))
    env = Environment(config, host_seconds=None)
    Session(env).execute("CREATE TABLE t (worker int NOT NULL, i int NOT NULL, v int)")
    Session(env).execute("INSERT INTO t VALUES (1, 0, 0)")  # the owner sees another's commit
    lock = os.open(home / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # this process has the turn
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    owner = ctx.Process(target=_insert_one, args=(str(home), 2, queue))
    owner.start()
    try:
        _spooled(home, 1)
        assert env.log.spool is not None
        taken = env.log.spool.take()  # as a holder of the turn: commits it, then is "killed"
        ((name, frames),) = taken.items()
        env.log.commit(frames, floor=env.oracle("EpochMilliseconds").now(), carried=(name,))
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    status, entries = queue.get(timeout=600)
    owner.join()
    assert status == "ok" and entries == 0, entries  # its write was committed for it
    assert not list((home / SPOOL).glob("*.json"))
    Session(env).execute("INSERT INTO t VALUES (3, 0, 0)")  # a later turn carries nothing
    env.close()
    reopened = Environment(config, host_seconds=None)
    try:
        got = Session(reopened).execute("SELECT worker FROM t ORDER BY worker")[-1].rows
    finally:
        reopened.close()
    assert got == [(1,), (2,), (3,)]


def test_a_write_left_in_the_spool_by_a_killed_carrier_is_not_committed_again_later(
    tmp_path: Path,
) -> None:
    """The turn's holder commits a waiting process's spooled write and is killed before it
    removes the file; before the owner's turn, later holders commit many others' spooled
    writes (more than the log ever kept names of): none of them commits the left write again,
    and its owner, given the turn, finds it committed."""
    home = tmp_path / "home"
    config = Config.load(home=str(home))
    env = Environment(config, host_seconds=None)
    Session(env).execute("CREATE TABLE t (worker int NOT NULL, i int NOT NULL, v int)")
    Session(env).execute("INSERT INTO t VALUES (1, 0, 0)")  # the owner sees another's commit
    spool = env.log.spool
    assert spool is not None
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    owner = ctx.Process(target=_insert_one, args=(str(home), 2, queue))
    with spool.turn():  # this process has the turn
        owner.start()
        _spooled(home, 1)
        ((name, frames),) = spool.take().items()
        env.log.commit(frames, floor=env.oracle("EpochMilliseconds").now(), carried=(name,))
        # ... and its carrier is killed here: the file stays; later holders carry others
        ((shard, _),) = frames.items()
        for i in range(100):
            spool.put({shard: env.log.frame(shard, [((1000 + i, 0, 0), 1)], "t")})
            own = _Pending({shard: env.log.frame(shard, [((3000 + i, 0, 0), 1)], "t")}, None)
            env.committer._commit_spooled([own])
            assert own.ts is not None and own.error is None
    status, entries = queue.get(timeout=600)
    owner.join()
    assert status == "ok" and entries == 0, entries  # its write was committed for it
    assert not list((home / SPOOL).glob("*.json"))
    env.close()
    reopened = Environment(config, host_seconds=None)
    try:
        got = Session(reopened).execute("SELECT worker FROM t")[-1].rows
    finally:
        reopened.close()
    expected = [1, 2, *range(1000, 1100), *range(3000, 3100)]
    assert sorted(w for (w,) in got) == expected  # each once
