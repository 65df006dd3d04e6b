"""A filter that fixes columns of a table read without an index picks its rows on Arrow columns
before they become Python rows (``arrangements.narrowed``), and a small read sums its updates
as rows without consolidating them on columns first: the same answers as the whole table read
(consolidated by storage) and filtered, on random tables, filters and writes."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.environment import Environment
from changeflow.adapter.rows import counted, evaluate_once
from changeflow.adapter.session import Session
from changeflow.adapter.sql.query import plan_query
from changeflow.adapter.sql.statements import parse
from changeflow.storage.txns import reader

ints = st.one_of(st.none(), st.integers(-3, 3))
texts = st.one_of(st.none(), st.sampled_from(["a", "b", "it's", ""]))
int_literals = st.one_of(
    st.integers(-3, 3).map(str), st.sampled_from(["2147483648", "-99999999999", "NULL", "1.0"])
)
text_literals = st.sampled_from(["'a'", "'b'", "''", "'it''s'", "'x'", "NULL"])
operators = st.sampled_from(["=", "=", "<", "<=", ">", ">="])
conditions = st.one_of(
    st.tuples(st.sampled_from(["k", "n"]), operators, int_literals),
    st.tuples(st.just("v"), operators, text_literals),
)
names = itertools.count()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(ints, texts, ints), max_size=20),
    deleted=st.integers(-3, 3),
    where=st.lists(conditions, min_size=1, max_size=3),
    aggregate=st.booleans(),
)
def test_a_narrowed_scan_gives_what_the_whole_table_gives(
    env: Environment, rows, deleted, where, aggregate
) -> None:
    t = f"t{next(names)}"
    s = Session(env)
    s.execute(f"CREATE TABLE {t} (k int, v text, n bigint)")
    if rows:
        values = ", ".join("(" + ", ".join(_sql(x) for x in row) + ")" for row in rows)
        s.execute(f"INSERT INTO {t} VALUES {values}")
    s.execute(f"DELETE FROM {t} WHERE k = {deleted}")  # retractions in the stored updates
    clause = " AND ".join(f"{c} {op} {lit}" for c, op, lit in where)
    select = "count(*), max(n), min(v)" if aggregate else "*"
    try:
        query = plan_query(parse(f"SELECT {select} FROM {t} WHERE {clause}").ast, _resolver(env))
    except Exception:  # noqa: BLE001 — a comparison the planner refuses (text = 1): no query
        return
    ts = env.read_ts("EpochMilliseconds", query.plan.collections())
    fast = env.evaluate(query.plan, ts)
    (shard,) = query.plan.collections()
    env.log.ready({shard}, ts)  # the reference reads the shard itself
    table = reader(env.storage, shard).snapshot_table(ts)  # consolidated by storage
    whole = evaluate_once(query.plan, {shard: counted(table)}, ts)
    assert fast == whole


def _resolver(env: Environment):
    from changeflow.adapter.resolver import CatalogResolver

    return CatalogResolver(env.catalog.load())


def _sql(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)
