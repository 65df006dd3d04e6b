"""Conflicts only where they are real: a read-then-write transaction that writes is refused
(40001) iff a concurrent commit changed the rows it read, checked against the full
re-evaluation of what it read (the reference) on random tables and random concurrent writes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.config import Config
from changeflow.errors import ChangeflowError

pair = st.tuples(st.integers(0, 3), st.integers(0, 2))
writes = st.lists(st.tuples(st.sampled_from(["insert", "delete", "update"]), pair), max_size=4)
reads = st.sampled_from(
    [
        ("UPDATE {t} SET v = v + 1 WHERE k = 1", "SELECT k, v FROM {t} WHERE k = 1"),
        ("DELETE FROM {t} WHERE v = 2", "SELECT k, v FROM {t} WHERE v = 2"),
        (  # not linear: a subquery, checked by evaluating it again
            "DELETE FROM {t} WHERE k = (SELECT max(k) FROM {t})",
            "SELECT k, v FROM {t} WHERE k = (SELECT max(k) FROM {t})",
        ),
    ]
)
names = itertools.count()


def rows(session: Session, sql: str) -> list[tuple]:
    return sorted(session.execute(sql)[-1].rows)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(initial=st.lists(pair, max_size=6), read=reads, concurrent=writes)
def test_a_commit_fails_iff_what_it_read_changed(
    env: Environment, initial: list, read: tuple[str, str], concurrent: list
) -> None:
    t = f"t{next(names)}"
    a, b = Session(env), Session(env)
    b.execute(f"CREATE TABLE {t} (k int, v int)")
    if initial:
        b.execute(f"INSERT INTO {t} VALUES " + ", ".join(f"({k}, {v})" for k, v in initial))
    write, query = (x.format(t=t) for x in read)
    seen = rows(b, query)
    a.execute("BEGIN")
    a.execute(write)
    for kind, (k, v) in concurrent:
        if kind == "insert":
            b.execute(f"INSERT INTO {t} VALUES ({k}, {v})")
        elif kind == "delete":
            b.execute(f"DELETE FROM {t} WHERE k = {k} AND v = {v}")
        else:
            b.execute(f"UPDATE {t} SET v = {v} WHERE k = {k}")
    changed = rows(b, query) != seen
    before = rows(b, f"SELECT k, v FROM {t}")
    try:
        a.execute("COMMIT")
        refused = False
    except ChangeflowError as e:
        assert e.fields.get("sqlstate") == "40001", e
        refused = True
    assert refused == (changed and bool(seen))  # one that wrote nothing commits anyway
    if refused:  # nothing of it was written
        assert rows(b, f"SELECT k, v FROM {t}") == before


def test_concurrent_increments_lose_nothing_and_disjoint_ones_never_conflict(
    env: Environment,
) -> None:
    """Threads of one process commit in groups: increments of one row by several sessions
    (retried on 40001) all count; increments of each session's own row never fail."""
    import threading

    t = f"t{next(names)}"
    Session(env).execute(
        f"CREATE TABLE {t} (k int, v int); INSERT INTO {t} VALUES (0, 0), (1, 0), (2, 0), (3, 0)"
    )
    failures: list[int] = []
    errors: list[BaseException] = []

    def run(k: int) -> None:
        s = Session(env)
        try:
            for _ in range(10):
                s.execute(f"UPDATE {t} SET v = v + 1 WHERE k = {k}")  # its own row
                while True:
                    try:
                        s.execute(f"UPDATE {t} SET v = v + 1 WHERE k = 0")  # a shared one
                        break
                    except ChangeflowError as e:
                        assert e.fields.get("sqlstate") == "40001", e
                        failures.append(k)
        except BaseException as e:  # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in (1, 2, 3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert errors == []
    assert rows(Session(env), f"SELECT k, v FROM {t}") == [(0, 30), (1, 10), (2, 10), (3, 10)]


@pytest.mark.parametrize("other_row", [2, 1])
def test_writes_of_another_process_are_checked_through_storage(tmp_path, other_row: int) -> None:
    """Between this process's own commits (checked in memory), another process on the same
    home writes the table: the commit is refused iff that write changed the rows it read."""
    home = str(tmp_path / "home")
    one = Environment(Config.load(home=home), host_seconds=None)
    two = Environment(Config.load(home=home), host_seconds=None)
    try:
        Session(one).execute("CREATE TABLE t (k int, v int); INSERT INTO t VALUES (1, 0), (2, 0)")
        a = Session(one)
        a.execute("BEGIN")
        a.execute("UPDATE t SET v = v + 1 WHERE k = 1")
        Session(one).execute("INSERT INTO t VALUES (3, 0)")
        Session(two).execute(f"UPDATE t SET v = v + 10 WHERE k = {other_row}")
        Session(one).execute("INSERT INTO t VALUES (4, 0)")
        try:
            a.execute("COMMIT")
            refused = False
        except ChangeflowError as e:
            assert e.fields.get("sqlstate") == "40001", e
            refused = True
        assert refused == (other_row == 1)
        expected = [(1, 10 if refused else 1), (2, 0 if refused else 10), (3, 0), (4, 0)]
        assert rows(Session(one), "SELECT k, v FROM t") == expected
    finally:
        two.close()
        one.close()
