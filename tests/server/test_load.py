"""Sixteen clients at once inserting, updating and reading: strict serializability checked
against a log of acknowledgement times and read results; then SIGKILL in the middle of the
load: clients get a clean error, not a hang, and a restart has every acknowledged write, with a
materialized view and a sink caught up exactly."""

from __future__ import annotations

import bisect
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

CLIENTS = 16
SECONDS = 8.0
#: a client that completes no statement (nor a 40001 answer) for this long counts as hung;
#: how long the whole run takes is not bounded (a loaded machine may take long over it)
STATEMENT_DEADLINE = 120.0


@dataclass
class Log:
    """One client's history: what it acknowledged when, and what its reads returned."""

    inserts: list[tuple[float, int]] = field(default_factory=list)  # (ack time, n)
    updates: list[tuple[float, int]] = field(default_factory=list)  # (ack time, version)
    reads: list[tuple[float, float, dict[int, tuple[int, int]]]] = field(default_factory=list)
    tried_insert: int = -1  # the last n sent (acknowledged or not)
    tried_update: int = 0
    retries: int = 0  # writes retried after 40001 (a concurrent write won)
    error: BaseException | None = None
    ended: float = 0.0
    progress: float = field(default_factory=time.monotonic)  # when a statement last ended


def write(c: psycopg.Connection, log: Log, sql: str, params: tuple[int, ...]) -> None:
    """Run a write, again while it fails with 40001 (it was not applied: a concurrent write
    changed what it read)."""
    while True:
        try:
            c.execute(sql, params)
            log.progress = time.monotonic()
            return
        except psycopg.errors.SerializationFailure:
            log.progress = time.monotonic()
            log.retries += 1


def run_client(dsn: str, k: int, log: Log, until: float, go: threading.Event) -> None:
    """Insert rows (k, n), bump row (k, 0)'s version, and read every client's progress, in
    turn, until ``until`` or an error; the row (k, 0) exists first. Each client does at least
    one whole turn and ends on a read, however late it started (a loaded machine may take
    longer than the run to connect sixteen clients)."""
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            go.wait()
            step = 0
            while step == 0 or step % 3 != 0 or time.monotonic() < until:
                step += 1
                if step % 3 == 1:
                    log.tried_insert += 1
                    write(c, log, "INSERT INTO load VALUES (%s, %s, 0)", (k, log.tried_insert))
                    log.inserts.append((time.monotonic(), log.tried_insert))
                elif step % 3 == 2 and log.tried_insert >= 0:
                    log.tried_update += 1
                    write(
                        c,
                        log,
                        "UPDATE load SET v = %s WHERE client = %s AND n = 0",
                        (log.tried_update, k),
                    )
                    log.updates.append((time.monotonic(), log.tried_update))
                else:
                    started = time.monotonic()
                    got = c.execute(
                        "SELECT client, max(n), max(v), count(*) FROM load GROUP BY client"
                    ).fetchall()
                    ended = log.progress = time.monotonic()
                    for client, top, _, count in got:
                        assert count == top + 1, f"client {client}: {count} rows up to {top}"
                    seen = {client: (top, version) for client, top, version, _ in got}
                    log.reads.append((started, ended, seen))
    except (psycopg.Error, AssertionError) as e:
        log.error = e
    finally:
        log.ended = time.monotonic()


def join(threads: list[threading.Thread], logs: list[Log]) -> None:
    """Wait for the clients to end, failing if one makes no progress for STATEMENT_DEADLINE
    (a hang), however long they take in all."""
    for t, log in zip(threads, logs, strict=True):
        while t.is_alive():
            t.join(0.5)
            hung = time.monotonic() - max(log.progress, log.ended)
            assert not t.is_alive() or hung < STATEMENT_DEADLINE, "a client hangs"


def last_before(acks: list[tuple[float, int]], t: float) -> int:
    """The last value acknowledged before ``t`` (-1 if none); acks are in time order."""
    i = bisect.bisect_left(acks, (t, -1))
    return acks[i - 1][1] if i else -1


def check_strict_serializable(logs: list[Log]) -> list[str]:
    """Every read sees every write acknowledged before it started and nothing not yet sent;
    a read that starts after another ended sees at least as much."""
    problems = []
    reads = sorted((r for log in logs for r in log.reads), key=lambda r: r[1])
    ends = [r[1] for r in reads]
    floor: list[dict[int, tuple[int, int]]] = []  # elementwise max of the reads ended so far
    for _, _, seen in reads:
        last = dict(floor[-1]) if floor else {}
        for k, (top, version) in seen.items():
            had = last.get(k, (-1, -1))
            last[k] = (max(had[0], top), max(had[1], version))
        floor.append(last)
    for started, _, seen in reads:
        for k, log in enumerate(logs):
            top, version = seen.get(k, (-1, -1))
            if top < last_before(log.inserts, started):
                problems.append(f"a read at {started:.3f} missed client {k}'s acked insert")
            if version < last_before(log.updates, started):
                problems.append(f"a read at {started:.3f} missed client {k}'s acked update")
            if top > log.tried_insert or version > log.tried_update:
                problems.append(f"a read saw client {k}'s write that was never sent")
        i = bisect.bisect_left(ends, started)
        if i:
            for k, (top, version) in floor[i - 1].items():
                mine = seen.get(k, (-1, -1))
                if mine[0] < top or mine[1] < version:
                    problems.append(f"a read at {started:.3f} saw less of {k} than an earlier one")
    return problems[:10]


def sink_rows(target: Path) -> list[tuple[Any, ...]]:
    try:
        with sqlite3.connect(target) as db:
            return sorted(db.execute("SELECT client, n, v FROM load_out").fetchall())
    except sqlite3.Error:
        return []


def load(server: Any, seconds: float, logs: list[Log]) -> list[threading.Thread]:
    """Start the clients (each on its own connection); they stop after ``seconds``."""
    go = threading.Event()
    until = time.monotonic() + seconds
    dsn = server.dsn(connect_timeout=str(int(STATEMENT_DEADLINE)))
    threads = [
        threading.Thread(target=run_client, args=(dsn, k, logs[k], until, go), daemon=True)
        for k in range(len(logs))
    ]
    for t in threads:
        t.start()
    go.set()
    return threads


@pytest.mark.slow
def test_sixteen_clients_strict_serializable_and_sigkill_under_load(
    start_server, tmp_path: Path
) -> None:
    server = start_server("--http", "off", "--allow-path", str(tmp_path))
    target = tmp_path / "sink.sqlite"
    with server.connect() as c:
        c.execute("CREATE TABLE load (client int NOT NULL, n int NOT NULL, v int NOT NULL)")
        c.execute(
            "CREATE MATERIALIZED VIEW load_totals AS SELECT client, count(*) AS n, sum(v) AS v "
            "FROM load GROUP BY client"
        )
        c.execute(f"CREATE SINK load_out FROM load INTO 'sqlite:{target}' KEY (client, n)")

    # 1. a bounded run: every read consistent with the acknowledgements
    logs = [Log() for _ in range(CLIENTS)]
    join(load(server, SECONDS, logs), logs)
    assert [log.error for log in logs] == [None] * CLIENTS
    assert sum(len(log.reads) for log in logs) >= CLIENTS
    assert check_strict_serializable(logs) == []
    with server.connect() as c:
        rows = c.execute("SELECT client, max(n), max(v), count(*) FROM load GROUP BY client")
        assert sorted(rows.fetchall()) == [
            (k, log.tried_insert, log.tried_update, log.tried_insert + 1)
            for k, log in enumerate(logs)
        ]

    # 2. SIGKILL in the middle of more of it
    logs = [Log(tried_insert=log.tried_insert, tried_update=log.tried_update) for log in logs]
    acked_before = [(log.tried_insert, log.tried_update) for log in logs]
    threads = load(server, 600.0, logs)
    deadline = time.monotonic() + 300  # killed once every client has a write acknowledged
    while not all(log.inserts or log.error for log in logs) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(log.error for log in logs)
    assert all(log.inserts for log in logs)
    server.proc.kill()
    server.proc.wait()
    for t in threads:
        t.join(STATEMENT_DEADLINE)
        assert not t.is_alive(), "a client hangs after the server was killed"
    assert all(isinstance(log.error, psycopg.OperationalError) for log in logs), [
        log.error for log in logs
    ]
    started = time.monotonic()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.dsn(connect_timeout="5"))
    assert time.monotonic() - started < 6

    again = start_server("--http", "off", home=server.home)
    with again.connect(connect_timeout=str(int(STATEMENT_DEADLINE))) as c:
        got = c.execute("SELECT client, max(n), max(v), count(*) FROM load GROUP BY client")
        progress = {k: (top, version, count) for k, top, version, count in got.fetchall()}
        for k, log in enumerate(logs):
            acked_n = last_before(log.inserts, float("inf"))
            acked_n = max(acked_n, acked_before[k][0])
            acked_v = max(last_before(log.updates, float("inf")), acked_before[k][1])
            top, version, count = progress[k]
            assert acked_n <= top <= log.tried_insert and count == top + 1, (k, progress[k])
            assert acked_v <= version <= log.tried_update, (k, progress[k])
        direct = c.execute(
            "SELECT client, count(*), sum(v) FROM load GROUP BY client ORDER BY client"
        ).fetchall()
        assert c.execute("SELECT * FROM load_totals ORDER BY client").fetchall() == direct
        everything = sorted(c.execute("SELECT client, n, v FROM load").fetchall())
    deadline = time.monotonic() + 600  # a bound, not an expectation: it takes seconds
    while sink_rows(target) != everything and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sink_rows(target) == everything
    assert again.stop() == 0


def test_the_checker_finds_stale_reads_and_phantoms() -> None:
    a, b = Log(tried_insert=2, tried_update=1), Log(tried_insert=0)
    a.inserts, a.updates, b.inserts = [(1.0, 0), (2.0, 1), (3.0, 2)], [(2.5, 1)], [(1.0, 0)]
    a.reads = [(3.1, 3.2, {0: (2, 1), 1: (0, 0)})]
    assert check_strict_serializable([a, b]) == []
    b.reads = [(2.6, 2.7, {0: (1, 0), 1: (0, 0)})]  # missed the update acked at 2.5
    assert check_strict_serializable([a, b]) == ["a read at 2.600 missed client 0's acked update"]
    b.reads = [(3.3, 3.4, {0: (1, 1), 1: (0, 0)})]  # less than the read that ended at 3.2
    assert len(check_strict_serializable([a, b])) == 2
    b.reads = [(3.3, 3.4, {0: (3, 1), 1: (0, 0)})]  # a row never sent
    assert check_strict_serializable([a, b]) == ["a read saw client 0's write that was never sent"]
