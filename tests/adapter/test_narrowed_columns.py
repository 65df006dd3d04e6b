"""A filtered scan whose rows, picked on Arrow columns, are many runs its plan on those columns
(``columnar_rows``): the same answers as the row operators over the whole table read
(consolidated by storage), on random tables, filters, aggregates and projections."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.arrangements import narrowed, point
from changeflow.adapter.columnar_rows import NARROWED_ROWS, columnar, worth_columns
from changeflow.adapter.environment import Environment
from changeflow.adapter.resolver import CatalogResolver
from changeflow.adapter.rows import counted, evaluate_once
from changeflow.adapter.session import Session
from changeflow.adapter.sql.query import plan_query
from changeflow.adapter.sql.statements import parse
from changeflow.storage.txns import reader

keys = st.sampled_from([0, 0, 1, 2])  # many rows per key: the columns' path is taken
values = st.one_of(st.none(), st.integers(-2_147_483_648, 2_147_483_647))
texts = st.one_of(st.none(), st.sampled_from(["a", "b", "it's", ""]))
numerics = st.one_of(st.none(), st.sampled_from(["1.50", "-2", "0.125", "1e3", "7.0"]))
selects = st.sampled_from(
    [
        "count(*), max(v), min(v)",
        "count(v), sum(v), avg(v)",
        "sum(d), avg(d), max(d)",
        "min(t), max(t), count(DISTINCT t)",
        "t, count(*), sum(v) GROUP BY t",
        "v + 1, t",
        "k, d * 2",
        "DISTINCT t",
        "bool_and(v > 0), bool_or(v IS NULL)",
    ]
)
names = itertools.count()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(keys, values, texts, numerics), min_size=40, max_size=160),
    copies=st.integers(1, 4),  # the same rows again: past NARROWED_ROWS for a key
    updated=st.integers(0, 2),
    key=st.integers(0, 2),
    select=selects,
    bound=st.one_of(st.none(), st.integers(-5, 5)),
)
def test_a_scan_on_columns_gives_what_the_rows_give(
    env: Environment, rows, copies, updated, key, select, bound
) -> None:
    t = f"t{next(names)}"
    s = Session(env)
    s.execute(f"CREATE TABLE {t} (k int NOT NULL, v bigint, t text, d numeric)")
    values_sql = ", ".join("(" + ", ".join(_sql(x) for x in row) + ")" for row in rows * copies)
    s.execute(f"INSERT INTO {t} VALUES {values_sql}")
    s.execute(f"UPDATE {t} SET v = v / 2 WHERE k = {updated}")  # retractions stored
    where = f"k = {key}" + ("" if bound is None else f" AND v > {bound}")
    select, _, grouped = select.partition(" GROUP BY ")
    text = f"SELECT {select} FROM {t} WHERE {where}"
    query = plan_query(
        parse(text + (f" GROUP BY {grouped}" if grouped else "")).ast,
        CatalogResolver(env.catalog.load()),
    )
    plan = query.plan
    ts = env.read_ts("EpochMilliseconds", plan.collections())
    served = env.evaluate(plan, ts)  # through the write log's view, as a statement reads
    (shard,) = plan.collections()
    env.log.ready({shard}, ts)  # the reference reads the shard itself
    table = reader(env.storage, shard).snapshot_table(ts)
    whole = evaluate_once(plan, {shard: counted(table)}, ts)
    assert served == whole
    fixed = point(plan)
    assert fixed is not None
    picked = narrowed(env.updates_until(shard, ts), fixed)
    on_columns = columnar(plan, {shard: picked})  # the path itself, wherever it applies
    assert on_columns is None or on_columns == whole
    if picked.num_rows >= NARROWED_ROWS:
        assert worth_columns(plan, picked)


def test_a_client_count_takes_the_columns(env: Environment) -> None:
    """The serve benchmark's scan: a client's rows of a shared table, counted and summed."""
    s = Session(env)
    s.execute("CREATE TABLE shared (client int NOT NULL, n int NOT NULL, v int)")
    rows = ", ".join(f"({i % 4}, {i // 4}, {i})" for i in range(1600))
    s.execute(f"INSERT INTO shared VALUES {rows}")
    s.execute("UPDATE shared SET v = v + 1 WHERE client = 1 AND n = 0")
    query = plan_query(
        parse("SELECT count(*), max(v), sum(v) FROM shared WHERE client = 1").ast,
        CatalogResolver(env.catalog.load()),
    )
    ts = env.read_ts("EpochMilliseconds", query.plan.collections())
    expected = {(400, 1597, sum(range(1, 1600, 4)) + 1): 1}
    assert env.evaluate(query.plan, ts) == expected
    (shard,) = query.plan.collections()
    env.log.ready({shard}, ts)
    picked = narrowed(env.updates_until(shard, ts), point(query.plan))
    assert worth_columns(query.plan, picked)
    assert columnar(query.plan, {shard: picked}) == expected


def _sql(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)
