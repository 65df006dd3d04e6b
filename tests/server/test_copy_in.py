"""COPY … FROM STDIN in text, CSV and binary format, compared with PostgreSQL 15: the same
input gives the same rows, and bad input the same SQLSTATE with nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import psycopg
import pytest

pytestmark = pytest.mark.postgres

COLUMNS = "(k int NOT NULL, v text, f double precision, d numeric(8,2), b boolean, day date)"
TEXT = (
    "1\ttab\\there\t1.5\t3.14159\tt\t2024-01-02\n"
    "2\t\\N\t\\N\t\\N\t\\N\t\\N\n"
    " 3 \tback\\\\slash\t-2e3\t-0.005\tno\t2024-02-29\n"
    "\\.\n"
)
CSV = (
    "k,v,f,d,b,day\n"
    '1,"comma, and ""quote""",1.5,3.14159,true,2024-01-02\n'
    "2,,,,,\n"
    '3,"",Infinity,12345.678,0,2024-02-29\n'
)


@pytest.fixture(scope="module")
def pg(postgres_url: str) -> Iterator[psycopg.Connection]:
    from postgres_server import create_database

    url = create_database(postgres_url, "copy_in")
    with psycopg.connect(url, autocommit=True) as c:
        yield c


def both(conn: psycopg.Connection, pg: psycopg.Connection, name: str) -> list:
    for c in (conn, pg):
        c.execute(f"CREATE TABLE {name} {COLUMNS}")
    return [conn, pg]


def contents(c: psycopg.Connection, name: str) -> list[tuple]:
    return c.execute(f"SELECT k, v, f, d, b, day FROM {name} ORDER BY k").fetchall()


@pytest.mark.parametrize(
    ("options", "data"), [("", TEXT), ("WITH (FORMAT csv, HEADER)", CSV)], ids=["text", "csv"]
)
def test_text_and_csv_load_as_postgresql_does(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str, options: str, data: str
) -> None:
    for c in both(conn, pg, table_name):
        with c.cursor().copy(f"COPY {table_name} FROM STDIN {options}") as copy:
            copy.write(data.encode())
    assert contents(conn, table_name) == contents(pg, table_name)
    assert len(contents(conn, table_name)) == 3


def test_binary_loads_as_postgresql_does(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str
) -> None:
    import datetime as dt

    rows = [
        (1, "a", 1.5, Decimal("3.14"), True, dt.date(2024, 1, 2)),
        (2, None, None, None, None, None),
        (3, "ü", -2.0, Decimal("-1.5"), False, dt.date(1999, 12, 31)),
    ]
    types = ["int4", "text", "float8", "numeric", "bool", "date"]
    for c in both(conn, pg, table_name):
        with c.cursor().copy(f"COPY {table_name} FROM STDIN (FORMAT binary)") as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)
    assert contents(conn, table_name) == contents(pg, table_name) == rows


@pytest.mark.parametrize(
    "data",
    [
        "x\ta\t1\t1\tt\t2024-01-01\n",  # not an integer
        "\\N\ta\t1\t1\tt\t2024-01-01\n",  # NULL in a NOT NULL column
        "1\ta\t1\n",  # too few columns
        "1\ta\t1\t1\tt\t2024-01-01\textra\n",  # too many
        "1\ta\t1\t123456789\tt\t2024-01-01\n",  # numeric(8,2) overflow
        "1\ta\t1\t1\tmaybe\t2024-01-01\n",  # not a boolean
        "2\tb\t1\t1\tt\t2024-01-01\n3\tc\t1\t1\tt\t2024-02-30\n",  # no such day
    ],
)
def test_bad_input_fails_as_in_postgresql_and_writes_nothing(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str, data: str
) -> None:
    codes = []
    for c in both(conn, pg, table_name):
        c.execute(f"INSERT INTO {table_name} (k) VALUES (0)")
        with (
            pytest.raises(psycopg.Error) as caught,
            c.cursor().copy(f"COPY {table_name} FROM STDIN") as copy,
        ):
            copy.write(("1\tok\t1\t1\tt\t2024-01-01\n" + data).encode())
        e = caught.value
        # the error, its detail and the context naming the line (and column) it was read on
        codes.append((e.sqlstate, e.diag.message_primary, e.diag.message_detail, e.diag.context))
        assert contents(c, table_name) == [(0, None, None, None, None, None)]
    assert codes[0] == codes[1], codes


def test_copy_into_a_table_with_defaults_and_in_a_transaction(
    conn: psycopg.Connection, table_name: str
) -> None:
    conn.execute(f"CREATE TABLE {table_name} (k int, v text DEFAULT 'dflt')")
    with conn.cursor().copy(f"COPY {table_name} (k) FROM STDIN") as copy:
        copy.write(b"1\n2\n")
    with conn.transaction():
        with conn.cursor().copy(f"COPY {table_name} FROM STDIN (FORMAT csv)") as copy:
            copy.write(b"3,x\n")
        conn.execute(f"INSERT INTO {table_name} VALUES (4, 'y')")
    got = conn.execute(f"SELECT k, v FROM {table_name} ORDER BY k").fetchall()
    assert got == [(1, "dflt"), (2, "dflt"), (3, "x"), (4, "y")]


def test_copy_and_prepared_inserts_keep_the_primary_key(
    conn: psycopg.Connection, pg: psycopg.Connection
) -> None:
    """Rows that COPY or prepared INSERTs bring (taken as columns, not statements) are
    checked against PRIMARY KEY and UNIQUE as an INSERT is (23505, nothing written)."""
    codes: list[list[str | None]] = []
    for c in (pg, conn):
        codes.append([])
        c.execute("CREATE TABLE copy_keyed (k int PRIMARY KEY, v text UNIQUE)")
        c.execute("INSERT INTO copy_keyed VALUES (1, 'a')")
        for data in ("2\tb\n1\tc\n", "3\td\n3\te\n", "4\ta\n"):
            with (
                pytest.raises(psycopg.Error) as caught,
                c.cursor().copy("COPY copy_keyed FROM STDIN") as copy,
            ):
                copy.write(data)
            codes[-1].append(caught.value.sqlstate)
        with pytest.raises(psycopg.Error) as caught:
            c.cursor().executemany(
                "INSERT INTO copy_keyed VALUES (%s, %s)", [(5, "e"), (6, "f"), (5, "g")]
            )
        codes[-1].append(caught.value.sqlstate)
        c.cursor().executemany("INSERT INTO copy_keyed VALUES (%s, %s)", [(7, "h"), (8, "i")])
    assert codes == [["23505"] * 4] * 2
    assert contents_keyed(conn) == contents_keyed(pg) == [(1, "a"), (7, "h"), (8, "i")]


def contents_keyed(c: psycopg.Connection) -> list[tuple]:
    return c.execute("SELECT k, v FROM copy_keyed ORDER BY k").fetchall()


def _lines(rows: list[tuple]) -> str:
    return "".join("\t".join("\\N" if v is None else str(v) for v in r) + "\n" for r in rows)


LARGE = [  # COPYs of 200 rows (checked on columns); each but the first has one duplicate
    [(k, k % 50, None if k % 2 else f"b{k}") for k in range(200)],
    [(k, 1000 + k, "x") for k in range(200, 400)][:150] + [(7, 999, "y")] + [],
    [(k, 2000 + k, "x") for k in range(400, 600)][:100] + [(410, 5000, "z")],
    [(k, 3000 + k, "x") for k in range(600, 800)][:60] + [(900, 4, "b4")],
    [(k, None, None) for k in range(1000, 1200)],
]


def test_a_large_copy_keeps_keys_as_postgresql(
    conn: psycopg.Connection, pg: psycopg.Connection
) -> None:
    """A COPY of many rows into a table with a PRIMARY KEY and a UNIQUE of two columns (its
    keys checked on columns): NULLs never conflict; a key the table holds, or one the COPY
    brings twice, is 23505 with PostgreSQL's message and detail, and nothing is written."""
    got = []
    for c in (pg, conn):
        c.execute("CREATE TABLE copy_large (k int PRIMARY KEY, a int, b text, UNIQUE (a, b))")
        outcomes = []
        for rows in [*LARGE, "DELETE FROM copy_large WHERE k < 100", LARGE[0][:100]]:
            if isinstance(rows, str):  # keys deleted are free again
                c.execute(rows)
                continue
            try:
                with c.cursor().copy("COPY copy_large FROM STDIN") as copy:
                    copy.write(_lines(rows))
                outcomes.append(None)
            except psycopg.Error as e:
                outcomes.append((e.sqlstate, str(e).splitlines()[0], e.diag.message_detail))
            outcomes.append(c.execute("SELECT count(*), sum(k) FROM copy_large").fetchall())
        got.append(outcomes)
    assert got[0] == got[1]
    assert [o[0] for o in got[1][::2] if o] == ["23505"] * 3
    assert got[1][-1] == [(400, sum(range(200)) + sum(range(1000, 1200)))]


def test_an_empty_line_is_a_row_as_in_postgresql(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str
) -> None:
    """An empty line of text input is a row of one empty value, not a line to skip."""
    rows = []
    for c in (conn, pg):
        c.execute(f"CREATE TABLE {table_name} (v text)")
        with c.cursor().copy(f"COPY {table_name} FROM STDIN") as copy:
            copy.write(b"a\n\nb\n")
        rows.append(c.execute(f"SELECT v FROM {table_name} ORDER BY v").fetchall())
    assert rows[0] == rows[1] == [("",), ("a",), ("b",)]


def test_dates_in_postgresql_input_forms_load_as_postgresql(
    conn: psycopg.Connection, pg: psycopg.Connection, table_name: str
) -> None:
    """COPY reads PostgreSQL's date/time input forms (month names, MDY numbers, zones) as a
    cast does; an impossible date is its 22008 with nothing written."""
    columns = "(k int, d date, ts timestamp, tz timestamptz)"
    data = (
        "1\tJanuary 8, 1999\t1/8/1999 4:05 pm\t1999-01-08 04:05:06 PST\n"
        "2\t08-Jan-99\t19990108T040506\tJan 8 1999 04:05 America/New_York\n"
        "3\t1999.008\t1999-01-08 12:05 AM\t1999-01-08 04:05:06 +0530\n"
    )
    for c in (conn, pg):
        c.execute("SET TimeZone = 'UTC'")
        c.execute(f"CREATE TABLE {table_name} {columns}")
        with c.cursor().copy(f"COPY {table_name} FROM STDIN") as copy:
            copy.write(data.encode())
    select = f"SELECT k, d, ts, tz::text FROM {table_name} ORDER BY k"
    assert conn.execute(select).fetchall() == pg.execute(select).fetchall()
    for c in (conn, pg):
        with (
            pytest.raises(psycopg.Error) as caught,
            c.cursor().copy(f"COPY {table_name} FROM STDIN") as copy,
        ):
            copy.write(b"4\t13/13/1999\t\\N\t\\N\n")
        assert caught.value.sqlstate == "22008"
    assert len(conn.execute(select).fetchall()) == 3
