"""Plans kept by statement text: a statement run again is planned once per catalog version and
search path, and gives what planning it again gives; statements whose plans keep values read
while planning (now(), the user, settings) are planned each time."""

from __future__ import annotations

from pathlib import Path

import pytest

from changeflow.adapter.environment import Environment
from changeflow.adapter.plan_cache import plain
from changeflow.adapter.session import Session
from changeflow.adapter.sql.statements import parse
from changeflow.config import Config


@pytest.fixture
def env(tmp_path: Path):
    environment = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    yield environment
    environment.close()


def rows(session: Session, sql: str) -> list[tuple]:
    return sorted(session.execute(sql)[-1].rows)


def test_a_statement_run_again_is_planned_once_per_catalog_version(env: Environment) -> None:
    s = Session(env)
    s.execute("CREATE TABLE t (k int NOT NULL, v int)")
    s.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
    hits = env.plans.hits
    for n in range(3):
        s.execute("UPDATE t SET v = v + 1 WHERE k = 1")
        assert rows(s, "SELECT * FROM t WHERE k = 1") == [(1, 11 + n)]
    s.execute("DELETE FROM t WHERE k = 2")
    s.execute("DELETE FROM t WHERE k = 2")
    assert rows(s, "SELECT * FROM t") == [(1, 13)]
    assert env.plans.hits - hits == 2 + 2 + 1  # the second and third UPDATE and SELECT, a DELETE
    s.execute("ALTER TABLE t ADD COLUMN w int DEFAULT 7")  # a new catalog: planned again
    assert rows(s, "SELECT * FROM t WHERE k = 1") == [(1, 13, 7)]
    s.execute("UPDATE t SET v = v + 1 WHERE k = 1")
    assert rows(s, "SELECT * FROM t") == [(1, 14, 7)]


def test_the_search_path_names_the_plan(env: Environment) -> None:
    s = Session(env)
    s.execute("CREATE SCHEMA other")
    s.execute("CREATE TABLE t (k int NOT NULL)")
    s.execute("CREATE TABLE other.t (k int NOT NULL)")
    s.execute("INSERT INTO t VALUES (1)")
    s.execute("INSERT INTO other.t VALUES (2)")
    assert rows(s, "SELECT k FROM t") == [(1,)]
    s.execute("SET search_path = other")
    assert rows(s, "SELECT k FROM t") == [(2,)]
    s.execute("DELETE FROM t")
    s.execute("SET search_path = public")
    assert rows(s, "SELECT k FROM t") == [(1,)]
    s.execute("DELETE FROM t")
    assert rows(s, "SELECT k FROM other.t") == rows(s, "SELECT k FROM t") == []


def test_values_read_while_planning_are_read_each_time(env: Environment) -> None:
    s = Session(env)
    s.execute("CREATE TABLE one (k int)")
    s.execute("INSERT INTO one VALUES (1)")
    first = rows(s, "SELECT now() FROM one")
    assert rows(s, "SELECT now() FROM one") != first
    s.execute("SET application_name = 'a'")
    assert rows(s, "SELECT current_setting('application_name') FROM one") == [("a",)]
    s.execute("SET application_name = 'b'")
    assert rows(s, "SELECT current_setting('application_name') FROM one") == [("b",)]
    for text in (
        "SELECT k FROM t WHERE k = 1 AND v > 2 ORDER BY k LIMIT 3",
        "UPDATE t SET v = v * 2 WHERE k IN (1, 2)",
        "SELECT count(*), sum(v) FROM t JOIN u ON t.k = u.k GROUP BY t.k HAVING max(v) > 1",
    ):
        assert plain(parse(text).ast), text
    for text in (
        "SELECT now()",
        "SELECT user",
        "SELECT k FROM t WHERE k IN (SELECT k FROM u)",
        "SELECT current_setting('x')",
        "DELETE FROM t WHERE k = mz_now()",
        "UPDATE t SET v = DEFAULT WHERE k = 1",
    ):
        assert not plain(parse(text).ast), text


def test_a_statement_whose_plan_is_kept_copies_no_tree(env: Environment) -> None:
    """Parsing hands out the parse cache's tree, copied only when planning needs its own: a
    statement run again with its plan kept copies none; one planned copies its own."""
    s = Session(env)
    s.execute("CREATE TABLE c (k int NOT NULL, v int)")
    s.execute("INSERT INTO c VALUES (1, 1)")
    for text in ("UPDATE c SET v = v + 1 WHERE k = 1", "SELECT v FROM c WHERE k = 1"):
        first, again = parse(text), parse(text)
        s.run(first)
        s.run(again)
        assert first.tree is again.tree  # the parse cache's
        assert first._own and not again._own
    assert rows(s, "SELECT v FROM c") == [(3,)]
