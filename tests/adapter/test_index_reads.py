"""Indexes that serve: point and range reads (SELECT, UPDATE, DELETE with the key fixed or
bounded) through an index's arrangement give what the same statements give on a table without
an index (the reference path: the whole table read and filtered), on random writes over time,
at the latest timestamp and at a transaction's earlier one."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session
from changeflow.config import Config
from changeflow.errors import ChangeflowError

keys = st.integers(0, 4)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), keys, st.sampled_from(["a", "b", "it's"])),
        st.tuples(st.just("update"), keys, st.just("")),
        st.tuples(st.just("delete"), keys, st.sampled_from(["a", "b"])),
        st.tuples(st.just("tick"), st.just(0), st.just("")),
        st.tuples(st.just("read"), keys, st.just("")),
    ),
    max_size=10,
)
names = itertools.count()


def rows(session: Session, sql: str) -> list[tuple]:
    return sorted(session.execute(sql)[-1].rows)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=ops)
def test_point_reads_through_an_index_match_a_table_without_one(env: Environment, ops) -> None:
    n = next(names)
    indexed, plain = f"ix{n}", f"px{n}"
    s, old = Session(env), Session(env)
    for t in (indexed, plain):
        s.execute(f"CREATE TABLE {t} (k int NOT NULL, v text, n int NOT NULL)")
    s.execute(f"CREATE INDEX {indexed}_k ON {indexed} (k)")
    served = sum(a.served for a in env.arrangements.values())
    old.execute("BEGIN")  # a read-only transaction: every read at its first read's timestamp
    old_seen: dict[str, list] = {}
    for kind, k, v in ops:
        value = "'" + v.replace("'", "''") + "'"
        for t in (indexed, plain):
            if kind == "insert":
                s.execute(f"INSERT INTO {t} VALUES ({k}, {value}, 0)")
            elif kind == "update":
                s.execute(f"UPDATE {t} SET n = n + 1 WHERE k = {k}")
            elif kind == "delete":
                s.execute(f"DELETE FROM {t} WHERE k = {k} AND v = {value}")
        if kind == "tick":
            env.tick()
        if kind == "read":
            for query in (
                "SELECT k, v, n FROM {} WHERE k = {}",
                "SELECT count(*), sum(n) FROM {} WHERE {} = k AND n >= 1",
                "SELECT k, v, n FROM {0} WHERE k >= {1} AND k < {1} + 2",
                "SELECT k, v FROM {0} WHERE {1} < k",
                "SELECT k FROM {0} WHERE k <= {1} AND k > 5",
            ):
                got = [rows(s, query.format(t, k)) for t in (indexed, plain)]
                assert got[0] == got[1], (query, k)
                past = [rows(old, query.format(t, k)) for t in (indexed, plain)]
                assert past[0] == past[1], ("in the transaction", query, k)
                old_seen.setdefault(query.format("_", k), past[0])
                assert old_seen[query.format("_", k)] == past[0]  # one timestamp throughout
    old.execute("COMMIT")
    if any(kind == "read" for kind, _, _ in ops):
        assert sum(a.served for a in env.arrangements.values()) > served


def test_point_reads_and_writes_through_an_index_leave_the_write_log_unapplied(
    env: Environment,
) -> None:
    """A point SELECT, UPDATE or DELETE through an index reads the log's writes not applied
    yet (its view of the table) instead of applying them to the table first."""
    s = Session(env)
    s.execute("CREATE TABLE unapplied (k int NOT NULL, v int)")
    s.execute("CREATE INDEX unapplied_k ON unapplied (k)")
    s.execute("INSERT INTO unapplied VALUES (1, 10), (2, 20)")
    assert rows(s, "SELECT * FROM unapplied WHERE k = 1") == [(1, 10)]
    shard = env.catalog.load().find("unapplied").id  # type: ignore[union-attr]
    upper = env.storage.state(shard).upper
    s.execute("UPDATE unapplied SET v = v + 1 WHERE k = 1")
    s.execute("DELETE FROM unapplied WHERE k = 2")
    s.execute("INSERT INTO unapplied VALUES (3, 30)")
    assert rows(s, "SELECT * FROM unapplied WHERE k = 1") == [(1, 11)]
    assert rows(s, "SELECT * FROM unapplied WHERE k = 2") == []
    assert rows(s, "SELECT * FROM unapplied WHERE k = 3") == [(3, 30)]
    assert env.storage.state(shard).upper == upper  # every write still only in the log
    env.tick()  # applied now: the arrangement moves on from where the log's view left it
    assert env.storage.state(shard).upper != upper
    s.execute("UPDATE unapplied SET v = v + 1 WHERE k = 1")
    assert rows(s, "SELECT * FROM unapplied WHERE k >= 1") == [(1, 12), (3, 30)]


def test_text_and_two_column_keys_read_the_sorted_columns(env: Environment) -> None:
    """Rows present when an index's arrangement is built are found by a binary search of its
    sorted columns (text keys, the second column of a two-column key, NULL keys, a literal
    no stored value can equal), and later writes on top of them, as without an index."""
    s = Session(env)
    values = ", ".join(
        f"({k}, {'NULL' if k % 7 == 0 else repr(f'n{k % 5}')}, {k % 3})" for k in range(60)
    )
    for t in ("tk", "tp"):
        s.execute(f"CREATE TABLE {t} (k bigint NOT NULL, name text, g int NOT NULL)")
        s.execute(f"INSERT INTO {t} VALUES {values}, (5, 'é', 1), (5, 'e', 1)")
    s.execute("CREATE INDEX tk_name ON tk (name)")
    s.execute("CREATE INDEX tk_gk ON tk (g, k)")
    env.tick()
    for t in ("tk", "tp"):
        s.execute(f"UPDATE {t} SET g = g + 3 WHERE k = 4")
        s.execute(f"DELETE FROM {t} WHERE name = 'n2' AND k > 40")
    queries = [
        "SELECT * FROM {} WHERE name = 'n1'",
        "SELECT * FROM {} WHERE name = 'é'",
        "SELECT * FROM {} WHERE name = 'zz'",
        "SELECT * FROM {} WHERE g = 1 AND k = 5",
        "SELECT * FROM {} WHERE g = 4 AND k = 4",
        "SELECT * FROM {} WHERE g = 1 AND k = 9223372036854775807",
        "SELECT count(*) FROM {} WHERE g = 2 AND k = 17",
    ]
    served = sum(a.served for a in env.arrangements.values())
    for query in queries:
        assert rows(s, query.format("tk")) == rows(s, query.format("tp")), query
    assert sum(a.served for a in env.arrangements.values()) == served + len(queries)


def test_an_index_of_a_table_arranges_the_table_alone(env: Environment) -> None:
    """The host keeps one arrangement for an index of a table: the table's, which its reads
    use, not one of the index's own copy of it."""
    s = Session(env)
    s.execute("CREATE TABLE alone (k int NOT NULL)")
    s.execute("CREATE INDEX alone_k ON alone (k)")
    s.execute("INSERT INTO alone VALUES (1)")
    env.tick()
    state = env.catalog.load()
    table, index = state.find("alone"), state.find("alone_k")
    assert table is not None and index is not None
    kept = {shard for shard, _ in env.arrangements}
    assert table.id in kept and index.id not in kept


def test_an_index_of_a_large_table_stays_in_the_process(tmp_path) -> None:
    """An index of a table copies it: Spark's bulk hydration would buy nothing, so it runs
    in the process whatever the table's size (a view over as many rows goes to the cluster)."""
    config = Config.load(home=str(tmp_path / "home"), cluster_rows="2")
    environment = Environment(config, host_seconds=None)
    try:
        s = Session(environment)
        s.execute("CREATE TABLE big (k int NOT NULL)")
        s.execute("INSERT INTO big VALUES (1), (2), (3)")
        s.execute("CREATE INDEX big_k ON big (k)")
        index = environment.catalog.load().find("big_k")
        assert index is not None and index.options["tier"] == "process"
        assert rows(s, "SELECT * FROM big WHERE k = 2") == [(2,)]
    finally:
        environment.close()


def test_an_update_reads_its_rows_through_the_index_once(env: Environment) -> None:
    """An UPDATE's old and new rows come from one read of the index's arrangement."""
    s = Session(env)
    s.execute("CREATE TABLE once (k int NOT NULL, v int)")
    s.execute("CREATE INDEX once_k ON once (k)")
    s.execute("INSERT INTO once VALUES (1, 10), (2, 20)")
    assert rows(s, "SELECT * FROM once WHERE k = 1") == [(1, 10)]
    served = sum(a.served for a in env.arrangements.values())
    s.execute("UPDATE once SET v = v + 1 WHERE k = 1")
    assert sum(a.served for a in env.arrangements.values()) == served + 1
    assert rows(s, "SELECT * FROM once WHERE k >= 1") == [(1, 11), (2, 20)]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=ops)
def test_a_primary_key_serves_point_reads_without_an_index(env: Environment, ops) -> None:
    """A table's PRIMARY KEY and UNIQUE columns are arranged without CREATE INDEX once a read
    fixes them: point SELECT, UPDATE and DELETE give what a table without keys gives."""
    n = next(names)
    keyed, plain = f"kx{n}", f"kp{n}"
    s = Session(env)
    s.execute(f"CREATE TABLE {keyed} (k int PRIMARY KEY, v text UNIQUE, n int NOT NULL)")
    s.execute(f"CREATE TABLE {plain} (k int NOT NULL, v text, n int NOT NULL)")
    served = sum(a.served for a in env.arrangements.values())
    for kind, k, v in ops:
        value = "'" + v.replace("'", "''") + f"{k}'"
        if kind == "insert":
            try:
                s.execute(f"INSERT INTO {keyed} VALUES ({k}, {value}, 0)")
            except ChangeflowError as e:
                assert e.sqlstate == "23505"
            else:
                s.execute(f"INSERT INTO {plain} VALUES ({k}, {value}, 0)")
        for t in (keyed, plain):
            if kind == "update":
                s.execute(f"UPDATE {t} SET n = n + 1 WHERE k = {k}")
            elif kind == "delete":
                s.execute(f"DELETE FROM {t} WHERE k = {k}")
        if kind == "tick":
            env.tick()
        if kind == "read":
            for query in (
                "SELECT k, v, n FROM {} WHERE k = {}",
                "SELECT k, n FROM {} WHERE v = 'a{}'",
                "SELECT count(*), sum(n) FROM {} WHERE {} = k AND n >= 1",
            ):
                got = [rows(s, query.format(t, k)) for t in (keyed, plain)]
                assert got[0] == got[1], (query, k)
    assert rows(s, f"SELECT * FROM {keyed}") == rows(s, f"SELECT * FROM {plain}")
    if any(kind in ("read", "update", "delete") for kind, _, _ in ops):
        assert sum(a.served for a in env.arrangements.values()) > served
