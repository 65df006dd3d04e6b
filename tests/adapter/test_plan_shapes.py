"""Plans kept by shape: statements that differ only in their literals share one plan, with
each statement's literals put in place, and give the rows planning each of them gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.adapter.sql.shapes import shape_of
from changeflow.adapter.sql.statements import parse
from changeflow.config import Config
from changeflow.errors import ChangeflowError


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory):
    """A session planning through the cache, and one planning every statement anew."""
    out = []
    for name in ("kept", "anew"):
        home = tmp_path_factory.mktemp(name) / "home"
        env = Environment(Config.load(home=str(home)), host_seconds=None)
        out.append((env, Session(env)))
    out[1][0].plans.plan = lambda stmt, state, make: make(stmt)  # type: ignore[method-assign]
    for _, s in out:
        s.execute("CREATE TABLE t (k int NOT NULL, v bigint, name text)")
        s.execute(
            "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 3000000000, 'c'), "
            "(4, NULL, 'it''s'), (5, -7, NULL)"
        )
    yield out[0][1], out[1][1]
    for env, _ in out:
        env.close()


def test_shapes_take_out_integers_and_standard_strings() -> None:
    a = shape_of("SELECT t1.k FROM t1 WHERE k = 5 AND name = 'it''s' -- 7\n AND v > 2.5")
    assert a.values == (5, "it's")
    b = shape_of("SELECT t1.k FROM t1 WHERE k = 6 AND name = 'x' -- 7\n AND v > 2.5")
    assert a.key == b.key and b.values == (6, "x")
    assert shape_of("SELECT 5").key != shape_of("SELECT 3000000000").key  # integer, bigint
    assert shape_of("SELECT 3000000000").key != shape_of("SELECT 10000000000000000000").key
    assert shape_of("SELECT \"col 1\", $1, 1e3, 2.5, B'101', x2 FROM t").values == ()
    assert shape_of("SELECT 1 /* 2 */").values == (1,)
    assert shape_of(a.text((9, "o'k"))).values == (9, "o'k")


def test_a_statement_of_a_known_shape_is_not_parsed_until_its_tree_is_asked_for() -> None:
    parse("SELECT k FROM t WHERE k = 1")
    again = parse("SELECT k FROM t WHERE k = 12345")
    assert again.lazy and not again.returns
    assert again.tree.sql(dialect="postgres") == "SELECT k FROM t WHERE k = 12345"
    with pytest.raises(ChangeflowError):  # a text of no shape parsed yet is parsed at once
        parse("SELECT k FROM WHERE")
    parse("DELETE FROM t WHERE k = 1 RETURNING k")
    assert parse("DELETE FROM t WHERE k = 2 RETURNING k").returns


TEXTS = [
    "SELECT k, v FROM t WHERE k = {i} OR v > {j}",
    "SELECT k FROM t WHERE name = {s} OR k IN ({i}, {j})",
    "SELECT k, v + {i} FROM t WHERE v BETWEEN {j} AND {big}",
    "SELECT k FROM t ORDER BY k LIMIT {small} OFFSET {small2}",
    "SELECT k FROM t WHERE {small} > {small2} AND k < {i}",  # literals compared with literals
    "SELECT k, name FROM t ORDER BY {pos}",  # a column position, not a value
    "SELECT count(*), sum(v) FROM t WHERE name < {s} GROUP BY k > {i}",
    "SELECT {s} || name, k * {i} FROM t WHERE k = {small}",
    "SELECT k FROM t WHERE v < {big} AND k <> {huge}",
    "SELECT CAST(name AS varchar({length})) FROM t WHERE k >= {small}",  # a type's length
    "SELECT k FROM t WHERE k < CAST('{small}' AS int) + 1 AND v > {j}",  # text read as int
]
INT4 = st.integers(min_value=0, max_value=2**31 - 1)
VALUES = st.fixed_dictionaries(
    {
        "i": st.one_of(st.integers(0, 6), INT4),
        "j": st.one_of(st.integers(0, 6), INT4),
        "small": st.integers(0, 6),
        "small2": st.integers(0, 6),
        "pos": st.integers(0, 3),
        "length": st.integers(1, 4),
        "big": st.one_of(st.integers(0, 30), st.integers(2**31, 2**63 - 1)),
        "huge": st.one_of(st.integers(0, 9), st.integers(2**63, 2**70)),
        "s": st.text(alphabet="abc'", max_size=3).map(lambda v: "'" + v.replace("'", "''") + "'"),
    }
)


def outcome(session: Session, text: str) -> Any:
    try:
        result = session.execute(text)[-1]
    except ChangeflowError as e:
        return ("error", e.sqlstate)
    return (result.status, result.rows, [(c.name, c.type.name) for c in result.columns or ()])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=VALUES, which=st.integers(0, len(TEXTS) - 1))
def test_a_kept_plan_gives_the_rows_planning_gives(sessions, values, which) -> None:
    kept, anew = sessions
    text = TEXTS[which].format(**values)
    assert outcome(kept, text) == outcome(anew, text), text


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(a=st.integers(0, 6), b=st.one_of(st.integers(0, 6), st.integers(2**31, 2**40)))
def test_kept_writes_write_what_planned_ones_write(sessions, a, b) -> None:
    kept, anew = sessions
    for text in (
        f"UPDATE t SET v = v + {a} WHERE k = {a % 5 + 1}",
        f"UPDATE t SET v = {b}, name = 'n{a}' WHERE k > {a} AND k < {a + 2}",
        f"DELETE FROM t WHERE k = {a + 10}",
        f"UPDATE t SET v = v - {a} WHERE name = 'b' AND v > {b} RETURNING k, v",
    ):
        assert outcome(kept, text) == outcome(anew, text), text
    query = "SELECT * FROM t"
    assert sorted(outcome(kept, query)[1], key=repr) == sorted(outcome(anew, query)[1], key=repr)


def test_one_plan_serves_a_shape(sessions) -> None:
    kept, _ = sessions
    env = kept.env
    kept.execute("CREATE TABLE u (k int, v int)")
    kept.execute("INSERT INTO u VALUES (1, 1), (2, 5), (3, 5), (4, 1)")
    kept.execute("SELECT k FROM u WHERE k = 1 AND v > 2")  # by its text
    kept.execute("SELECT k FROM u WHERE k = 9 AND v > 2")  # the shape's plan made
    hits = env.plans.hits
    for n in range(2, 6):
        got = kept.execute(f"SELECT k FROM u WHERE k = {n} AND v > 2")[-1].rows
        assert got == ([(n,)] if n in (2, 3) else [])
    assert env.plans.hits - hits == 4
