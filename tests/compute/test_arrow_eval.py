"""Plans evaluated on Arrow tables (``compute.arrow_eval``) against the reference evaluator on
random plans and histories, and SQL-shaped aggregates against DuckDB on random data."""

from __future__ import annotations

import math
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC
from changeflow.compute import plan as P
from changeflow.compute.arrow_eval import Rel, Unsupported, check, evaluate_arrow
from changeflow.compute.evaluate import evaluate
from changeflow.compute.expr import Arith, Cmp, Col, lit
from changeflow.compute.types import FLOAT8, INT4, INT8, NUMERIC, TEXT, Column
from changeflow.compute.values import python_values
from changeflow.time import Antichain
from changeflow.updates import DIFF

sys.path.insert(0, str(Path(__file__).parent))
from plans import INPUTS, histories, plans  # noqa: E402

TIMES = 8


def supported(plan: P.Plan) -> bool:
    try:
        check(plan)
    except Unsupported:
        return False
    return True


def snapshot(get: P.Get, version: dict[tuple, int] | list[tuple[tuple, int]]) -> pa.Table:
    """Rows and counts as a table of the data columns and ``_diff``."""
    rows = list(version.items()) if isinstance(version, dict) else version
    columns = [pa.array([r[i] for r, _ in rows], c.type.arrow) for i, c in enumerate(get.schema)]
    columns.append(pa.array([c for _, c in rows], pa.int64()))
    return pa.Table.from_arrays(columns, names=[*(c.name for c in get.schema), DIFF])


def collection(rel: Rel) -> dict[tuple, int]:
    """The rows of a relation with their summed counts (zeros left out)."""
    values = [python_values(c) for c in rel.columns]
    out: Counter = Counter()
    rows = zip(*values, strict=True) if values else [()] * len(rel)
    for row, count in zip(rows, rel.counts.to_pylist(), strict=True):
        out[row] += count
    return {r: c for r, c in out.items() if c}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    plan=plans(3).filter(supported),
    history=histories(TIMES),
    at=st.integers(0, TIMES - 1),
    consolidated=st.booleans(),
)
def test_arrow_plans_equal_the_reference(
    plan: P.Plan, history: dict[str, list], at: int, consolidated: bool
) -> None:
    """On snapshots, or on the raw updates up to the time read (deletions included)."""
    versions, tables = {}, {}
    for name, updates in history.items():
        ptvc = PTVC.empty(name=name)
        ptvc.append(updates, Antichain([TIMES]))
        versions[name] = ptvc.read(at)
        raw = [(row, c) for row, t, c in updates if t <= at]
        tables[name] = snapshot(INPUTS[name], versions[name] if consolidated else raw)
    try:
        expected = evaluate(plan, versions, at)
    except Exception as error:  # the rows refuse it (an overflow): the columns must not answer
        with pytest.raises((Unsupported, type(error))):
            evaluate_arrow(plan, tables)
        return
    try:
        got = evaluate_arrow(plan, tables)
    except Unsupported:
        return
    assert collection(got) == expected, plan.explain()


# -- SQL-shaped aggregates against DuckDB -------------------------------------------------------

T = P.Get(
    "t",
    (
        Column("g", INT4),
        Column("b", INT8),
        Column("c", NUMERIC),
        Column("d", TEXT),
        Column("f", FLOAT8),
    ),
)
U = P.Get("u", (Column("g", INT4), Column("e", TEXT)))

t_rows = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(0, 4)),
        st.one_of(st.none(), st.integers(-(2**40), 2**40)),
        st.one_of(
            st.none(),
            st.decimals(min_value=-1000, max_value=1000, places=2, allow_nan=False),
        ),
        st.one_of(st.none(), st.sampled_from(["a", "b", "ab", ""])),
        st.one_of(st.none(), st.floats(-1e6, 1e6)),
    ),
    min_size=1,
    max_size=30,
)
u_rows = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 4)), st.sampled_from(["x", "y"])), max_size=10
)


def col(get: P.Get | P.Plan, i: int) -> Col:
    return P.col(get.schema, i)


def _table(get: P.Get, rows: list[tuple]) -> pa.Table:
    return snapshot(get, dict(Counter(rows)))


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return a is not None and b is not None and abs(Decimal(a) - Decimal(b)) < Decimal("1e-9")
    return a == b


def _key(row: tuple) -> tuple:
    """A row's sort key alike on both sides (a decimal zero in positional form, not 0E-10)."""
    return tuple((v is None, f"{v:f}" if isinstance(v, Decimal) else str(v)) for v in row)


def _same_rows(ours: list[tuple], theirs: list[tuple]) -> None:
    key = _key
    ours, theirs = sorted(ours, key=key), sorted(theirs, key=key)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert all(_close(x, y) for x, y in zip(a, b, strict=True)), (a, b)


def _rows_of(rel: Rel) -> list[tuple]:
    return [r for r, c in collection(rel).items() for _ in range(c)]


@settings(max_examples=60, deadline=None)
@given(t=t_rows, u=u_rows)
def test_group_by_and_join_against_duckdb(t: list[tuple], u: list[tuple]) -> None:
    """GROUP BY with NULL keys, sum of bigint (numeric), avg, count(DISTINCT), min, max; an
    equi-join with NULL keys; both against DuckDB and the reference evaluator."""
    aggs = (
        P.Aggregate("count"),
        P.Aggregate("sum", col(T, 1)),
        P.Aggregate("sum", col(T, 2)),
        P.Aggregate("avg", col(T, 2)),
        P.Aggregate("avg", col(T, 4)),
        P.Aggregate("count", col(T, 3), distinct=True),
        P.Aggregate("min", col(T, 3)),
        P.Aggregate("max", col(T, 4)),
        P.Aggregate("count", col(T, 2)),
    )
    grouped = P.Reduce(T, (0,), aggs)
    joined = P.Join((T, U), ((0, 5),))
    per_key = P.Reduce(joined, (6,), (P.Aggregate("count"), P.Aggregate("sum", col(joined, 0))))
    tables = {"t": _table(T, t), "u": _table(U, u)}
    versions = {"t": dict(Counter(t)), "u": dict(Counter(u))}
    db = duckdb.connect()
    db.execute("CREATE TABLE t (g INT, b BIGINT, c DECIMAL(18, 2), d TEXT, f DOUBLE)")
    db.execute("CREATE TABLE u (g INT, e TEXT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [list(r) for r in t])
    if u:
        db.executemany("INSERT INTO u VALUES (?, ?)", [list(r) for r in u])
    cases = {
        grouped: "SELECT g, count(*), sum(b), sum(c), avg(c), avg(f), count(DISTINCT d), min(d),"
        " max(f), count(c) FROM t GROUP BY g",
        joined: "SELECT * FROM t JOIN u ON t.g = u.g",
        per_key: "SELECT u.e, count(*), sum(t.g) FROM t JOIN u ON t.g = u.g GROUP BY u.e",
    }
    for plan, sql in cases.items():
        ours = _rows_of(evaluate_arrow(plan, tables))
        _same_rows(ours, [tuple(r) for r in db.execute(sql).fetchall()])
        reference = evaluate(plan, versions, 0)
        _same_rows(ours, [r for r, c in reference.items() for _ in range(c)])


def test_overflow_and_division_by_zero_are_the_rows_to_tell() -> None:
    """A sum past bigint's range, a quotient by zero: not answered here."""
    big = _table(T, [(1, 2**62, None, None, None), (1, 2**62 - 1, None, None, None)])
    total = P.Reduce(P.Map(T, (("x", Arith("+", col(T, 1), col(T, 1))),)), (), ())
    with pytest.raises(Unsupported):
        evaluate_arrow(total, {"t": big})
    by_zero = P.Filter(T, (Cmp("=", Arith("/", col(T, 0), lit(0)), lit(1)),))
    with pytest.raises(Unsupported):
        evaluate_arrow(by_zero, {"t": big})
