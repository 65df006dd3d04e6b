"""ALTER SEQUENCE in a transaction holds the sequence, as PostgreSQL's lock does: another
session's nextval waits until the transaction ends, so a ROLLBACK that puts the sequence
back hands out no value twice, and after a COMMIT the waiting session takes the altered
sequence's values. Two sessions of one environment, the second in a thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from changeflow.adapter import sequence_holds
from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.config import Config


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Environment]:
    environment = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    yield environment
    environment.close()


def value(session: Session, sql: str) -> int:
    return session.execute(sql)[-1].rows[0][0]


def nextval_waiting(session: Session) -> tuple[threading.Thread, list[int]]:
    """``session``'s nextval('s') in a thread, returned once it waits."""
    got: list[int] = []
    thread = threading.Thread(target=lambda: got.append(value(session, "SELECT nextval('s')")))
    thread.start()
    for _ in range(6000):  # until it waits (or has returned, which the caller sees)
        if sequence_holds.waiting() or not thread.is_alive():
            break
        thread.join(0.01)
    return thread, got


@pytest.mark.parametrize("end", ["ROLLBACK", "COMMIT"])
def test_nextval_waits_for_an_altering_transaction(env: Environment, end: str) -> None:
    a, b = Session(env), Session(env)
    a.execute("CREATE SEQUENCE s")
    taken = [value(b, "SELECT nextval('s')") for _ in range(2)]
    a.execute("BEGIN; ALTER SEQUENCE s RESTART WITH 100")
    thread, got = nextval_waiting(b)
    assert thread.is_alive() and not got  # it waits
    assert value(a, "SELECT nextval('s')") == 100  # the altering session goes on
    a.execute(end)
    thread.join(60)
    assert not thread.is_alive()
    taken += got + [value(a, "SELECT nextval('s')"), value(b, "SELECT nextval('s')")]
    if end == "ROLLBACK":
        assert taken == [1, 2, 3, 4, 5]
    else:
        assert taken == [1, 2, 101, 102, 103]


def test_the_altering_session_and_others_after_it(env: Environment) -> None:
    a, b = Session(env), Session(env)
    a.execute("CREATE SEQUENCE s; CREATE SEQUENCE t")
    a.execute("BEGIN; ALTER SEQUENCE s INCREMENT BY 10")
    assert value(b, "SELECT nextval('t')") == 1  # another sequence is not held
    assert value(a, "SELECT nextval('s')") == 1
    a.execute("COMMIT")
    assert value(b, "SELECT nextval('s')") > 1


def test_a_commit_releases_the_hold_while_the_transaction_is_still_referenced(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hold ends at COMMIT, not when the transaction object is collected."""
    monkeypatch.setattr(sequence_holds, "WAIT", 0.2)
    a, b = Session(env), Session(env)
    a.execute("CREATE SEQUENCE s")
    a.execute("BEGIN; ALTER SEQUENCE s RESTART WITH 100")
    kept = a.txn  # a reference that outlives the transaction
    a.execute("COMMIT")
    assert value(b, "SELECT nextval('s')") == 100
    assert kept is not None
