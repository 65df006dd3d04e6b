"""Columns handed to a table already typed (a prepared INSERT's bound rows, COPY's binary
values) are taken as they are where their type is the column's, and integers narrowed by one
checked cast: the same rows as the same values inserted by SQL text, and an error, no row,
where a value does not fit."""

from __future__ import annotations

import itertools

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changeflow.adapter.environment import Environment
from changeflow.adapter.session import Session

names = itertools.count()
values = st.one_of(
    st.none(),
    st.integers(-40_000, 40_000),
    st.integers(-(2**31) - 2, 2**31 + 1),
    st.sampled_from([-(2**63), 2**63 - 1, 0]),
)
rows = st.lists(st.tuples(values, values, values, st.one_of(st.none(), st.text(max_size=3))))


def _literal(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=rows)
def test_typed_columns_insert_what_sql_text_inserts(env: Environment, rows: list) -> None:
    s = Session(env)
    n = next(names)
    for t in (f"by_columns{n}", f"by_text{n}"):
        s.execute(f"CREATE TABLE {t} (a smallint, b int, c bigint, d text)")
    data = [pa.array([r[i] for r in rows], pa.int64()) for i in range(3)]
    data.append(pa.array([r[3] for r in rows], pa.string()))
    try:
        s.insert_columns(f"by_columns{n}", None, data, text=False)
        taken = None
    except Exception as e:  # noqa: BLE001 — compared with the text path's below
        taken = e
    try:
        if rows:
            text = ", ".join("(" + ", ".join(map(_literal, r)) + ")" for r in rows)
            s.execute(f"INSERT INTO by_text{n} VALUES {text}")
        refused = None
    except Exception as e:  # noqa: BLE001
        refused = e
    assert (taken is None) == (refused is None), (taken, refused)
    got = [
        sorted(s.execute(f"SELECT * FROM {t}")[-1].rows, key=repr)
        for t in (f"by_columns{n}", f"by_text{n}")
    ]
    assert got[0] == got[1]
    if taken is not None:
        assert got[0] == []
