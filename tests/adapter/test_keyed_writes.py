"""PRIMARY KEY and UNIQUE checks read only the rows with the written keys: concurrent writes
of different keys both commit, of the same key one fails (40001) or is refused (23505)."""

from __future__ import annotations

from pathlib import Path

import pytest

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.config import Config
from changeflow.errors import ChangeflowError


@pytest.fixture
def env(tmp_path: Path):
    environment = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    yield environment
    environment.close()


def rows(session: Session, sql: str) -> list[tuple]:
    return sorted(session.execute(sql)[-1].rows)


def test_concurrent_inserts_of_other_keys_both_commit(env: Environment) -> None:
    a, b = Session(env), Session(env)
    a.execute("CREATE TABLE p (k int PRIMARY KEY, v text UNIQUE)")
    a.execute("INSERT INTO p VALUES (0, 'zero')")
    a.execute("BEGIN")
    a.execute("INSERT INTO p VALUES (1, 'one')")
    b.execute("BEGIN")
    b.execute("INSERT INTO p VALUES (2, 'two')")
    b.execute("COMMIT")
    a.execute("COMMIT")  # its keys were not written meanwhile: no conflict
    assert rows(a, "SELECT * FROM p") == [(0, "zero"), (1, "one"), (2, "two")]


def test_concurrent_inserts_of_one_key_do_not_both_commit(env: Environment) -> None:
    a, b = Session(env), Session(env)
    a.execute("CREATE TABLE p (k int PRIMARY KEY, v text UNIQUE)")
    for mine, theirs in (("(1, 'a')", "(1, 'b')"), ("(2, 'v')", "(3, 'v')")):  # key, value
        a.execute("BEGIN")
        a.execute(f"INSERT INTO p VALUES {mine}")
        b.execute(f"INSERT INTO p VALUES {theirs}")
        with pytest.raises(ChangeflowError) as e:
            a.execute("COMMIT")
        assert e.value.sqlstate == "40001"
    assert rows(a, "SELECT * FROM p") == [(1, "b"), (3, "v")]


def test_a_write_of_many_keys_reads_the_table_once(env: Environment) -> None:
    s = Session(env)
    s.execute("CREATE TABLE many (k int PRIMARY KEY)")
    s.execute("INSERT INTO many VALUES (500)")
    values = ", ".join(f"({i})" for i in range(200))
    s.execute(f"INSERT INTO many VALUES {values}")
    with pytest.raises(ChangeflowError) as e:
        s.execute(
            f"INSERT INTO many VALUES {values.replace('(7)', '(500)')}".replace("(0)", "(1000)")
        )
    assert e.value.sqlstate == "23505"
    with pytest.raises(ChangeflowError) as e:
        s.execute("INSERT INTO many VALUES (600), (601), (600)")
    assert e.value.sqlstate == "23505"
    assert rows(s, "SELECT count(*) FROM many") == [(201,)]
    s.execute("INSERT INTO many VALUES (7) ON CONFLICT (k) DO UPDATE SET k = 700")
    with pytest.raises(ChangeflowError) as e:  # DO UPDATE's new key is checked too
        s.execute("INSERT INTO many VALUES (8) ON CONFLICT (k) DO UPDATE SET k = 500")
    assert e.value.sqlstate == "23505"
    assert rows(s, "SELECT k FROM many WHERE k >= 500") == [(500,), (700,)]
