"""Advisory locks (pg_advisory_lock and its kin) as PostgreSQL 15 gives them: one session's calls
compared with PostgreSQL's answers, then what two sessions of one home see of each other's
locks (exclusion, sharing, waits, transaction ends, lock_timeout, a deadlock), and a lock that
a process on the same home holds until it dies."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_errors, same_outcomes  # noqa: E402

K = 917_000  # keys of these tests' own (PostgreSQL's locks are its server's, shared)

ONE_SESSION = [
    f"SELECT pg_advisory_lock({K})",
    f"SELECT pg_advisory_lock({K})",  # counted: taken twice, unlocked twice
    f"SELECT pg_advisory_unlock({K}), pg_advisory_unlock({K})",
    f"SELECT pg_advisory_unlock({K})",  # held no more: false (and a warning)
    f"SELECT pg_try_advisory_lock({K}, 1), pg_try_advisory_lock_shared({K}, 1)",
    f"SELECT pg_advisory_unlock({K}, 1), pg_advisory_unlock_shared({K}, 1)",
    f"SELECT pg_advisory_unlock_shared({K}, 1)",
    f"SELECT pg_advisory_lock('{K + 1}'), pg_advisory_lock(NULL), pg_try_advisory_lock(1, NULL)",
    f"SELECT id, pg_try_advisory_lock(id + {K}) FROM adv ORDER BY id",
    "SELECT pg_typeof(pg_advisory_lock_shared(-1)), pg_typeof(pg_try_advisory_lock(-1))",
    "SELECT pg_advisory_unlock_all()",
    f"SELECT pg_advisory_unlock({K + 1}), pg_advisory_unlock_shared(-1)",
    "BEGIN",
    f"SELECT pg_advisory_xact_lock({K}), pg_try_advisory_xact_lock_shared({K})",
    f"SELECT pg_advisory_unlock({K})",  # a transaction's lock is not the session's to unlock
    "COMMIT",
    f"SELECT pg_advisory_xact_lock_shared({K}), pg_try_advisory_xact_lock(-{K})",
]
REFUSED = [
    "SELECT pg_advisory_lock(1.5)",
    "SELECT pg_advisory_lock(1::bigint, 2)",
    "SELECT pg_advisory_lock()",
    "SELECT pg_advisory_lock(1, 2, 3)",
    "SELECT pg_advisory_unlock_all(1)",
    "SELECT pg_try_advisory_lock('x')",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str) -> Iterator[tuple]:
    create = "CREATE TABLE adv (id bigint)"
    with beside_postgres(tmp_path / "home", postgres_url, "adv", create, "INSERT INTO adv "
                         "VALUES (1), (2), (3)") as pair:  # fmt: skip
        yield pair


@pytest.mark.postgres
def test_one_sessions_calls_as_postgres(both) -> None:
    ours, pg = both
    pg.execute("SELECT pg_advisory_unlock_all()")
    try:
        same_outcomes(ours, pg, ONE_SESSION)
        same_errors(ours, pg, REFUSED)
    finally:
        pg.execute("SELECT pg_advisory_unlock_all()")
    warned = [n for n in ours.notices if "don't own" in n]
    assert warned == [
        "WARNING:  you don't own a lock of type ExclusiveLock\n",
        "WARNING:  you don't own a lock of type ShareLock\n",
        "WARNING:  you don't own a lock of type ExclusiveLock\n",
        "WARNING:  you don't own a lock of type ShareLock\n",
        "WARNING:  you don't own a lock of type ExclusiveLock\n",
    ]


def _connect(home: Path):
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    return conn


def _one(conn, sql: str):
    return conn.execute(sql).fetchall()[0][0]


def _in_thread(fn) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except DatabaseError as e:
            out["error"] = e.sqlstate
        out["at"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_two_sessions_exclude_share_and_wait(tmp_path: Path) -> None:
    a, b = _connect(tmp_path / "home"), _connect(tmp_path / "home")
    assert _one(a, "SELECT pg_advisory_lock(7)") == ""
    assert _one(b, "SELECT pg_try_advisory_lock(7)") is False
    assert _one(b, "SELECT pg_try_advisory_lock_shared(7)") is False
    assert _one(b, "SELECT pg_try_advisory_lock(7, 0)") is True  # the pair's own space
    assert _one(b, "SELECT pg_advisory_unlock(7)") is False  # a's, not b's
    thread, out = _in_thread(lambda: _one(b, "SELECT pg_advisory_lock(7)"))
    time.sleep(0.3)
    assert thread.is_alive(), out  # b waits for a
    released = time.monotonic()
    assert _one(a, "SELECT pg_advisory_unlock(7)") is True
    thread.join(10)
    assert out.get("value") == "" and out["at"] >= released, out
    # shared with shared, not with exclusive
    assert _one(a, "SELECT pg_try_advisory_lock_shared(8)") is True
    assert _one(b, "SELECT pg_try_advisory_lock_shared(8)") is True
    assert _one(b, "SELECT pg_try_advisory_lock(8)") is False
    # a transaction's lock goes at its COMMIT, or when it fails
    a.execute("BEGIN")
    a.execute("SELECT pg_advisory_xact_lock(9)")
    assert _one(b, "SELECT pg_try_advisory_lock(9)") is False
    a.execute("COMMIT")
    assert _one(b, "SELECT pg_try_advisory_lock(9)") is True
    b.execute("SELECT pg_advisory_unlock(9)")
    a.execute("BEGIN")
    a.execute("SELECT pg_advisory_xact_lock(10)")
    with pytest.raises(DatabaseError):
        a.execute("SELECT 1 / 0")
    assert _one(b, "SELECT pg_try_advisory_xact_lock(10)") is True  # an implicit transaction's
    assert _one(b, "SELECT pg_try_advisory_lock(10)") is True  # ... let go when it ended
    a.execute("ROLLBACK")
    # a session-level lock outlives the transaction that took it, even rolled back
    a.execute("BEGIN")
    a.execute("SELECT pg_advisory_lock(11)")
    a.execute("ROLLBACK")
    assert _one(b, "SELECT pg_try_advisory_lock(11)") is False
    # lock_timeout ends a wait with 55P03; closing a session lets go of its locks
    b.execute("SET lock_timeout = '200ms'")
    started = time.monotonic()
    with pytest.raises(DatabaseError) as caught:
        b.execute("SELECT pg_advisory_lock(11)")
    assert caught.value.sqlstate == "55P03" and time.monotonic() - started >= 0.2
    a.close()
    assert _one(b, "SELECT pg_try_advisory_lock(11)") is True
    # a connection dropped without close() lets go as well
    c = _connect(tmp_path / "home")
    c.execute("SELECT pg_advisory_lock(12)")
    assert _one(b, "SELECT pg_try_advisory_lock(12)") is False
    del c
    gc.collect()
    assert _one(b, "SELECT pg_try_advisory_lock(12)") is True
    b.close()


@pytest.mark.parametrize(
    "held, wanted",
    [
        (
            ("pg_advisory_lock(1)", "pg_advisory_lock(2)"),
            ("pg_advisory_lock(2)", "pg_advisory_lock(1)"),
        ),
        (("pg_advisory_lock_shared(3)",) * 2, ("pg_advisory_lock(3)",) * 2),  # both upgrade
    ],
)
def test_a_deadlock_between_two_sessions_fails_one_of_them(
    tmp_path: Path, held: tuple[str, str], wanted: tuple[str, str]
) -> None:
    a, b = _connect(tmp_path / "home"), _connect(tmp_path / "home")
    a.execute("SET deadlock_timeout = 100")
    b.execute("SET deadlock_timeout = 100")
    a.execute(f"SELECT {held[0]}")
    b.execute(f"SELECT {held[1]}")
    first, one = _in_thread(lambda: _one(a, f"SELECT {wanted[0]}"))
    time.sleep(0.05)
    second, two = _in_thread(lambda: _one(b, f"SELECT {wanted[1]}"))
    deadline = time.monotonic() + 10
    while "error" not in one and "error" not in two and time.monotonic() < deadline:
        time.sleep(0.02)
    failed = [o for o in (one, two) if "error" in o]
    assert [o["error"] for o in failed] == ["40P01"], (one, two)
    loser, winner = (a, second) if "error" in one else (b, first)
    loser.execute("SELECT pg_advisory_unlock_all()")  # as the failed one's client would
    winner.join(10)
    assert not winner.is_alive() and [o.get("value") for o in (one, two) if o is not failed[0]]
    a.close()
    b.close()


CHILD = """
import sys, time
import changeflow
conn = changeflow.connect(sys.argv[1], host_seconds=0)
conn.autocommit = True
conn.execute("SELECT pg_advisory_lock(5, 6)")
print("held", flush=True)
time.sleep(600)
"""


def test_a_lock_holds_across_processes_until_its_holder_dies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _connect(home).close()  # the home made first
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(home)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        mine = _connect(home)
        assert _one(mine, "SELECT pg_try_advisory_lock(5, 6)") is False
        assert _one(mine, "SELECT pg_try_advisory_lock_shared(5, 6)") is False
        assert _one(mine, "SELECT pg_try_advisory_lock(5, 7)") is True
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        assert _one(mine, "SELECT pg_try_advisory_lock(5, 6)") is True
        mine.close()
    finally:
        child.kill()
        child.wait()
