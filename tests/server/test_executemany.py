"""Prepared INSERTs without SQL text (``server/batch.py``): psycopg's ``executemany`` in text
and binary, compared with PostgreSQL 15: the same rows, the same errors, all or nothing per
Sync; and a prepared INSERT that cannot take that path still works."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.postgres

COLUMNS = "(k int NOT NULL, v text, f double precision, d numeric(8,2), b boolean, day date)"
ROWS = [
    (1, "a", 1.5, Decimal("3.14"), True, dt.date(2024, 1, 2)),
    (2, None, None, None, None, None),
    (3, "it's", -2.0, Decimal("-1.5"), False, dt.date(1999, 12, 31)),
]


@pytest.fixture(scope="module")
def pg(postgres_url: str) -> Iterator[psycopg.Connection]:
    from postgres_server import create_database

    url = create_database(postgres_url, "executemany")
    with psycopg.connect(url, autocommit=True) as c:
        yield c


def contents(c: psycopg.Connection, name: str) -> list[tuple]:
    return c.execute(f"SELECT k, v, f, d, b, day FROM {name} ORDER BY k").fetchall()


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_executemany_inserts_as_postgresql_does(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str, binary: bool
) -> None:
    name = f"{table_name}_{int(binary)}"
    for c in (conn, pg):
        c.execute(f"CREATE TABLE {name} {COLUMNS}")
        c.cursor(binary=binary).executemany(
            f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s, %s)", ROWS
        )
        c.cursor(binary=binary).executemany(
            f"INSERT INTO {name} (day, k) VALUES (%s, %s)",
            [(dt.date(2000, 1, 1), 10 + i) for i in range(50)],
        )
    assert contents(conn, name) == contents(pg, name)
    assert len(contents(conn, name)) == 53


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_executemany_into_a_keyed_table_inserts_and_checks_as_postgresql_does(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str, binary: bool
) -> None:
    """Prepared INSERTs into a table with a PRIMARY KEY and a UNIQUE column, each row inserted
    and its keys checked at its Execute: the same rows as PostgreSQL's, and a repeated key
    (against the table, within the run, of the UNIQUE column) the same error, nothing of the
    run written, in a transaction block too."""
    name = f"{table_name}_{int(binary)}"
    columns = COLUMNS.replace("k int NOT NULL", "k int PRIMARY KEY").replace(
        "v text", "v text UNIQUE"
    )
    insert = f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s, %s)"
    got = []
    for c in (pg, conn):
        c.execute(f"CREATE TABLE {name} {columns}")
        c.cursor(binary=binary).executemany(insert, ROWS)
        errors = []
        for rows in (
            [(10, "x", None, None, None, None), (1, "again", None, None, None, None)],
            [(11, "y", None, None, None, None), (11, "z", None, None, None, None)],
            [(12, "a", None, None, None, None)],  # v 'a' is row 1's
        ):
            with pytest.raises(psycopg.Error) as caught:
                c.cursor(binary=binary).executemany(insert, rows)
            errors.append(caught.value.sqlstate)
        with pytest.raises(psycopg.Error) as caught, c.transaction():
            c.cursor(binary=binary).execute(insert, (20, "t", None, None, None, None))
            c.cursor(binary=binary).execute(insert, (20, "u", None, None, None, None))
        errors.append(caught.value.sqlstate)
        c.cursor(binary=binary).execute(insert, (30, None, 1.0, None, None, None))
        got.append((errors, contents(c, name)))
    assert got[0] == got[1]
    assert got[1][0] == ["23505"] * 4 and len(got[1][1]) == 4


def test_a_bad_row_stops_executemany_as_in_postgresql(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str
) -> None:
    codes, got = [], []
    for c in (pg, conn):
        c.execute(f"CREATE TABLE {table_name} {COLUMNS}")
        with pytest.raises(psycopg.Error) as caught:
            c.cursor().executemany(
                f"INSERT INTO {table_name} (k, v) VALUES (%s, %s)",
                [(1, "a"), (None, "b"), (3, "c")],
            )
        codes.append(caught.value.sqlstate)
        got.append(contents(c, table_name))
        c.cursor().executemany(f"INSERT INTO {table_name} (k, v) VALUES (%s, %s)", [(4, "d")])
    assert codes == ["23502", "23502"]
    assert got[0] == got[1]
    assert contents(conn, table_name) == contents(pg, table_name)


def test_prepared_inserts_the_batch_cannot_take_still_work(
    conn: psycopg.Connection, table_name: str
) -> None:
    conn.execute(f"CREATE TABLE {table_name} (k int, v text DEFAULT 'dflt')")
    conn.cursor().executemany(
        f"INSERT INTO {table_name} (k) VALUES (%s)", [(1,), (2,)]
    )  # a DEFAULT
    conn.cursor().executemany(
        f"INSERT INTO {table_name} VALUES (%s + 1, %s)", [(3, "x")]
    )  # not plain
    with conn.transaction():
        conn.execute(f"INSERT INTO {table_name} VALUES (%s, %s)", (10, "in a block"))
    got = conn.execute(f"SELECT k, v FROM {table_name} ORDER BY k").fetchall()
    assert got == [(1, "dflt"), (2, "dflt"), (4, "x"), (10, "in a block")]


KINDS = {  # a column type, and values for it as parameters and as constants in the text
    "int": (st.integers(-(2**31), 2**31 - 1), ["0", "-7", "2147483648", "'12'", "'x'"]),
    "bigint": (st.integers(-(2**63), 2**63 - 1), ["5", "-99999999999", "'3'"]),
    "double precision": (st.floats(allow_nan=False, width=32), ["2", "'1.5'", "'inf'"]),
    "numeric": (st.integers(-1000, 1000), ["4", "'2.50'"]),
    "text": (st.text(max_size=4), ["'a'", "'it''s'", "''", "7"]),
    "boolean": (st.booleans(), ["'true'", "'f'", "1", "'maybe'"]),
}


@st.composite
def inserts(draw: st.DrawFn) -> tuple[list[str], list[str], list[list]]:
    """Column types, the VALUES items (``%s`` or a constant) and rows of parameters."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4))
    items = []
    for kind in kinds:
        constant = st.sampled_from([*KINDS[kind][1], "NULL"])
        items.append(draw(st.one_of(st.just("%s"), constant)))
    params = [KINDS[k][0] | st.none() for k, i in zip(kinds, items, strict=True) if i == "%s"]
    rows = draw(st.lists(st.tuples(*params), min_size=1, max_size=3))
    return kinds, items, [list(r) for r in rows]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(insert=inserts(), binary=st.booleans())
@example(insert=(["int", "boolean"], ["2147483648", "1"], [[]]), binary=False)  # 42804 first
def test_constants_in_a_prepared_insert_mean_what_the_statement_path_makes_them(
    conn: psycopg.Connection, insert, binary: bool
) -> None:
    """Constants among a prepared INSERT's parameters (collected as rows, no SQL parsed) give
    the rows and errors of the same INSERT on the statement path (a comment after it: not
    plain, so the row path does not take it)."""
    kinds, items, rows = insert
    columns = ", ".join(f"c{i} {k}" for i, k in enumerate(kinds))
    got = []
    values = ", ".join(items)
    for path, tail in (("rows", ""), ("statements", " /* not a plain INSERT */")):
        name = f"consts_{next(_tables)}"
        conn.execute(f"CREATE TABLE {name} ({columns})")
        try:
            insert = f"INSERT INTO {name} VALUES ({values}){tail}"
            conn.cursor(binary=binary).executemany(insert, rows)
            error = None
        except psycopg.Error as e:
            error = e.sqlstate
        contents = conn.execute(f"SELECT * FROM {name}").fetchall()
        got.append((path, error, sorted(contents, key=repr)))
    assert got[0][1:] == got[1][1:]


_tables = iter(range(10**6))


PIPELINES = {  # a table, then statements sent as one pipeline whose third fails
    "primary key": (
        "(k int PRIMARY KEY, v text)",
        "INSERT INTO {t} VALUES (%s, %s)",
        [(1, "a"), (2, "b"), (1, "dup"), (4, "d"), (5, "e")],
    ),
    "not null": (
        "(k int NOT NULL, v text)",
        "INSERT INTO {t} VALUES (%s, %s)",
        [(1, "a"), (2, "b"), (None, "c"), (4, "d"), (5, "e")],
    ),
    "expression": (
        "(k int, v text)",
        "INSERT INTO {t} VALUES (10 / %s, %s)",
        [(1, "a"), (2, "b"), (0, "c"), (4, "d"), (5, "e")],
    ),
    "update": (
        "(k int, v text)",
        "UPDATE {t} SET k = k + 10 / %s WHERE v = %s",
        [(1, "x"), (2, "y"), (0, "x"), (1, "y"), (1, "x")],
    ),
    "many keys": (  # past the 64 keys a write reads by key, a late repeat of an early key
        "(k int PRIMARY KEY, v text)",
        "INSERT INTO {t} VALUES (%s, %s)",
        [(1, "a"), (2, "b"), (3, "c"), *((i, "n") for i in range(10, 90)), (2, "again")],
    ),
}
BAD = {"many keys": 83}  # the failing statement, if not the third


@pytest.mark.parametrize("case", sorted(PIPELINES))
def test_an_error_in_a_pipeline_leaves_none_of_its_writes_as_in_postgresql(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str, case: str
) -> None:
    """The writes up to Sync are one implicit transaction: a failing statement (the third of
    five) leaves nothing of those before it; the pipeline without it commits all of them."""
    columns, statement, rows = PIPELINES[case]
    got = []
    for c in (pg, conn):
        t = f"{table_name}_{case.replace(' ', '_')}"
        c.execute(f"CREATE TABLE {t} {columns}")
        c.execute(f"INSERT INTO {t} VALUES (100, 'x'), (200, 'y')")
        with pytest.raises(psycopg.Error) as caught:
            c.cursor().executemany(statement.format(t=t), rows)
        after_error = c.execute(f"SELECT k, v FROM {t} ORDER BY k, v").fetchall()
        good = [r for i, r in enumerate(rows) if i != BAD.get(case, 2)]
        c.cursor().executemany(statement.format(t=t), good)
        after = c.execute(f"SELECT k, v FROM {t} ORDER BY k, v").fetchall()
        got.append((caught.value.sqlstate, after_error, after))
    assert got[0] == got[1]
    assert got[1][1] == [(100, "x"), (200, "y")]


def test_a_read_in_a_pipeline_commits_the_writes_before_it(
    conn: psycopg.Connection, table_name: str
) -> None:
    """A read between writes of one pipeline sees the writes before it (they commit first;
    changeflow's transactions read or write, not both)."""
    conn.execute(f"CREATE TABLE {table_name} (k int PRIMARY KEY)")
    with conn.pipeline():
        conn.execute(f"INSERT INTO {table_name} VALUES (1)")
        counted = conn.execute(f"SELECT count(*) FROM {table_name}")
        conn.execute(f"INSERT INTO {table_name} VALUES (2)")
    assert counted.fetchall() == [(1,)]
    assert conn.execute(f"SELECT k FROM {table_name} ORDER BY k").fetchall() == [(1,), (2,)]
