"""A read-then-write transaction of a group is unaffected by the writes before it when its
read's filter lets none of their rows through, told by the values of the columns it fixes
without building the plan's operators (``conflicts.passes_none``): the same verdict as the
row operators over the written rows, on random reads and writes."""

from __future__ import annotations

import itertools

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.conflicts import passes_none, reads_unaffected
from changeflow.adapter.environment import Environment
from changeflow.adapter.resolver import CatalogResolver
from changeflow.adapter.rows import counted, evaluate_once
from changeflow.adapter.session import Session
from changeflow.adapter.sql.query import plan_query
from changeflow.adapter.sql.statements import parse
from changeflow.updates import DIFF, TIME

ks = st.one_of(st.none(), st.integers(-2, 2))
texts = st.one_of(st.none(), st.sampled_from(["a", "b", ""]))
updates = st.tuples(ks, texts, st.one_of(st.none(), st.integers(-3, 3)), st.sampled_from([1, -1]))
wheres = st.sampled_from(
    [
        "k = {a}",
        "k = {a} AND n = {b}",
        "k = {a} AND n > {b}",
        "n <= {b} AND n >= {a}",
        "v = 'a' AND k = {a}",
        "v = 'b'",
        "k = 2147483648",
        "k = {a} OR n = {b}",  # fixes nothing: the operators decide
        "k + 1 = {a}",
    ]
)
selects = st.sampled_from(["k, v", "n + 1", "*"])
names = itertools.count()


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    written=st.lists(updates, max_size=8),
    where=wheres,
    select=selects,
    a=st.integers(-2, 2),
    b=st.integers(-3, 3),
)
def test_a_filter_passing_none_is_what_the_operators_say(
    env: Environment, written, where, select, a, b
) -> None:
    t = f"t{next(names)}"
    Session(env).execute(f"CREATE TABLE {t} (k int, v text, n bigint)")
    text = f"SELECT {select} FROM {t} WHERE {where.format(a=a, b=b)}"
    plan = plan_query(parse(text).ast, CatalogResolver(env.catalog.load())).plan
    (shard,) = plan.collections()
    frame = pa.table(
        {
            "k": pa.array([u[0] for u in written], pa.int32()),
            "v": pa.array([u[1] for u in written], pa.string()),
            "n": pa.array([u[2] for u in written], pa.int64()),
            TIME: pa.array([1] * len(written), pa.int64()),
            DIFF: pa.array([u[3] for u in written], pa.int64()),
        }
    )
    through = evaluate_once(plan, {shard: counted(frame)}, 0)
    if passes_none(plan, {shard: frame}):
        assert not through
    assert reads_unaffected([(plan, {})], {shard: frame}) == (not through)
