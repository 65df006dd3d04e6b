"""Group commit: concurrent sessions' transactions share log entries (a leader waits briefly
for company when the last group had some), every acknowledged one is durable and each keeps
its own outcome."""

from __future__ import annotations

import threading
from pathlib import Path

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.config import Config
from changeflow.errors import ChangeflowError

WORKERS, EACH = 8, 15


def test_concurrent_commits_are_all_durable(tmp_path: Path) -> None:
    config = Config.load(home=str(tmp_path / "home"))
    env = Environment(config, host_seconds=None)
    Session(env).execute("CREATE TABLE t (worker int NOT NULL, i int NOT NULL, v int)")
    acknowledged: dict[int, list[int]] = {w: [] for w in range(WORKERS)}
    updates = [0] * WORKERS
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        session = Session(env)
        try:
            session.execute(f"INSERT INTO t VALUES ({worker}, -1, 0)")
            for i in range(EACH):
                session.execute(f"INSERT INTO t VALUES ({worker}, {i}, 0)")
                acknowledged[worker].append(i)
                try:  # its own row: no other transaction's write changes what it read
                    session.execute(f"UPDATE t SET v = v + 1 WHERE worker = {worker} AND i = -1")
                    updates[worker] += 1
                except ChangeflowError as e:
                    assert e.sqlstate == "40001"
        except BaseException as e:  # noqa: BLE001 — reported below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    entries = env.committer.entries
    env.close()
    reopened = Environment(config, host_seconds=None)  # read back from storage
    try:
        got = Session(reopened).execute("SELECT worker, i, v FROM t")[-1].rows
    finally:
        reopened.close()
    for w in range(WORKERS):
        mine = sorted(i for worker, i, _ in got if worker == w)
        assert mine == [-1, *acknowledged[w]]
        assert [v for worker, i, v in got if worker == w and i == -1] == [updates[w]]
    assert sum(updates) == WORKERS * EACH  # an UPDATE of one's own row never conflicts
    assert entries <= WORKERS * (2 * EACH + 1) + 1  # (grouped as timing allows)
