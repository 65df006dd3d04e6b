"""The SQL drivers' columnar path against a reference, on random transactions (hypothesis).

Each transaction is one LoadBatch of its keys and one StoreBatch of its rows, in a random
order, over a two-column key: upserts (``_exists`` null), inserts of new keys (``_exists``
false) and deletes. The drivers write them in key order, set-based; what each load returns
and what the table holds after each commit must equal a dictionary updated a key at a time.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import psycopg
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_server import database_for_test

from changeflow.materialize.columns import store_schema
from changeflow.materialize.driver import Runner
from changeflow.materialize.drivers import open_driver
from changeflow.materialize.protocol import (
    Acknowledge,
    Binding,
    Flush,
    Flushed,
    LoadBatch,
    LoadedBatch,
    Open,
    StartCommit,
    StartedCommit,
    StoreBatch,
)

COLUMNS = ("a", "b", "n", "w")
TYPES = ("string", "int32", "int64", "double")
KEY = ("a", "b")
_tables = itertools.count()

keys = st.tuples(st.sampled_from(["", "x", "y", "é", "x y"]), st.integers(-3, 3))
values = st.tuples(
    st.integers(-(2**63), 2**63 - 1), st.none() | st.floats(allow_nan=False, width=64)
)
actions = st.none() | values  # None: delete the key
transactions = st.lists(st.dictionaries(keys, actions, min_size=1, max_size=12), max_size=5)


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """One target per dialect for the module; every example writes a table of its own."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path_factory.mktemp('batches') / 'target.sqlite'}"
    return database_for_test(request.getfixturevalue("postgres_url"), "sql_batches")


def table_rows(url: str, name: str) -> dict[tuple, tuple]:
    """The target table's rows, by key."""
    statement = f'SELECT "a", "b", "n", "w" FROM "{name}"'
    if url.startswith("sqlite:"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:"))) as db:
            rows = db.execute(statement).fetchall()
    else:
        with psycopg.connect(url) as conn:
            rows = conn.execute(statement).fetchall()
    return {(a, b): (n, w) for a, b, n, w in rows}


def store_table(binding: Binding, changes: dict[tuple, Any], held: dict) -> pa.Table:
    """A StoreBatch table: an upsert of a held key, an insert of a new one, a delete."""
    rows = []
    for (a, b), action in changes.items():
        n, w = (None, None) if action is None else action
        exists = None if (a, b) in held else False
        rows.append({"a": a, "b": b, "n": n, "w": w, "_exists": exists, "_deleted": not action})
    return pa.Table.from_pylist(rows, schema=store_schema(binding))


@pytest.fixture(scope="module")
def runners(url: str) -> Iterator[list[Runner]]:
    opened: list[Runner] = []
    yield opened
    for runner in opened:
        runner.driver.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(transactions=transactions)
def test_batches_leave_the_table_as_a_key_at_a_time_reference(
    url: str, runners: list[Runner], transactions: list[dict[tuple, Any]]
) -> None:
    name = f"batches_{next(_tables)}"
    binding = Binding(name, COLUMNS, TYPES, KEY)
    runner = Runner(open_driver(url))
    runners.append(runner)
    runner.handle(Open(name, (binding,), {}))
    held: dict[tuple, tuple] = {}
    for frontier, changes in enumerate(transactions, start=1):
        runner.handle(Acknowledge())
        asked = pa.Table.from_pylist(
            [{"a": a, "b": b} for a, b in changes],
            pa.schema([("a", pa.string()), ("b", pa.int32())]),
        )
        runner.handle(LoadBatch(0, asked))
        loaded, flushed = runner.handle(Flush())
        assert isinstance(loaded, LoadedBatch) and isinstance(flushed, Flushed)
        found = {(r["a"], r["b"]): (r["n"], r["w"]) for r in loaded.rows.to_pylist()}
        assert found == {k: held[k] for k in changes if k in held}
        runner.handle(StoreBatch(0, store_table(binding, changes, held)))
        (started,) = runner.handle(StartCommit({"frontier": [frontier]}))
        assert isinstance(started, StartedCommit)
        for k, action in changes.items():
            if action is None:
                held.pop(k, None)
            else:
                held[k] = action
        assert table_rows(url, name) == held
    runner.driver.close()
    runners.remove(runner)


def test_a_row_that_does_not_fit_its_table_is_a_clear_error_and_writes_nothing(
    url: str, runners: list[Runner]
) -> None:
    """A key column left null (the key is NOT NULL): one InvalidInput naming the
    materialization, and nothing of the transaction is written."""
    from changeflow.errors import InvalidInput

    name = f"batches_{next(_tables)}"
    binding = Binding(name, COLUMNS, TYPES, KEY)
    runner = Runner(open_driver(url))
    runners.append(runner)
    runner.handle(Open(name, (binding,), {}))
    runner.handle(Acknowledge())
    runner.handle(Flush())
    good = {"a": "x", "b": 1, "n": 1, "w": None, "_exists": None, "_deleted": False}
    bad = {**good, "a": None}
    rows = pa.Table.from_pylist([good, bad], schema=store_schema(binding))
    runner.handle(StoreBatch(0, rows))
    with pytest.raises(InvalidInput, match=f"materialization '{name}': commit"):
        runner.handle(StartCommit({"frontier": [1]}))
    assert table_rows(url, name) == {}
