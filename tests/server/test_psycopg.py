"""psycopg 3 against ``changeflow serve``: types in text and binary, parameters, errors,
transactions, cursors, SUBSCRIBE through DECLARE/FETCH and COPY."""

from __future__ import annotations

import datetime as dt
import math
import time
from decimal import Decimal

import psycopg
import pytest
from psycopg import errors

UTC = dt.UTC
COLUMNS = (
    "i integer NOT NULL, s smallint, b bigint, n numeric, f double precision, t text, "
    "d date, ts timestamp, tz timestamptz, ok boolean"
)
ROWS = [
    (
        1,
        -2,
        2**40,
        Decimal("12.5"),
        1.25,
        "it's é 🙂",
        dt.date(2024, 2, 29),
        dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        True,
    ),
    (
        2,
        None,
        -(2**62),
        Decimal("-0.001"),
        -1e300,
        "tab\there\nline",
        dt.date(1970, 1, 1),
        dt.datetime(1999, 12, 31, 23, 59, 59),
        dt.datetime(2000, 1, 1, tzinfo=UTC),
        False,
    ),
    (3, 7, 0, Decimal("123456789012345.678"), 0.0, "", None, None, None, None),
]
INSERT = "INSERT INTO {} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"


def test_startup_parameters(conn: psycopg.Connection) -> None:
    info = conn.info
    assert info.parameter_status("server_version") == "15.0"
    assert info.parameter_status("client_encoding") == "UTF8"
    assert info.parameter_status("TimeZone") == "UTC"
    assert info.parameter_status("integer_datetimes") == "on"
    assert info.parameter_status("standard_conforming_strings") == "on"
    assert info.parameter_status("DateStyle").startswith("ISO")
    assert info.backend_pid > 0
    assert conn.execute("SELECT version()").fetchone()[0].startswith("PostgreSQL 15.0")
    assert conn.execute("SELECT current_database()").fetchone() == ("materialize",)
    row = conn.execute("SELECT current_database(), session_user, pg_backend_pid()").fetchone()
    assert row == ("materialize", conn.info.user, info.backend_pid)
    recursive = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < %s)"
    assert conn.execute(f"{recursive} SELECT sum(n) FROM r", (4,)).fetchone() == (10,)
    assert conn.execute("SELECT 1 + 1").fetchone() == (2,)
    conn.execute("SET application_name = 'tests'")
    assert conn.execute("SHOW application_name").fetchone() == ("tests",)
    assert conn.execute("SHOW transaction_isolation").fetchone() == ("strict serializable",)


@pytest.mark.parametrize("mode", ["text", "binary", "prepared"])
def test_every_type_round_trips(conn: psycopg.Connection, table_name: str, mode: str) -> None:
    conn.execute(f"CREATE TABLE {table_name} ({COLUMNS})")
    cur = conn.cursor()
    for row in ROWS:
        cur.execute(
            INSERT.format(table_name),
            row,
            binary=mode == "binary",
            prepare=True if mode == "prepared" else None,
        )
        assert cur.statusmessage == "INSERT 0 1"
    for binary in (False, True):
        cur.execute(f"SELECT * FROM {table_name} ORDER BY i", binary=binary)
        assert cur.fetchall() == ROWS
    oids = [c.type_code for c in cur.description]
    assert oids == [23, 21, 20, 1700, 701, 25, 1082, 1114, 1184, 16]


def test_special_values_and_text_format(conn: psycopg.Connection) -> None:
    row = conn.execute(
        "SELECT 'Infinity'::double precision, '-Infinity'::double precision, "
        "'NaN'::double precision, 2.50::numeric, true, false"
    ).fetchone()
    assert row[0] == math.inf and row[1] == -math.inf and math.isnan(row[2])
    assert row[3:] == (Decimal("2.5"), True, False)
    raw = conn.pgconn.exec_(
        b"SELECT 'Infinity'::double precision, 1.5::double precision, 2.50::numeric, true, "
        b"'2024-01-02 03:04:05.5'::timestamp, '2024-01-02 03:04:05'::timestamptz"
    )
    values = [raw.get_value(0, i) for i in range(raw.nfields)]
    assert values == [
        b"Infinity",
        b"1.5",
        b"2.50",  # PostgreSQL keeps a numeric's scale
        b"t",
        b"2024-01-02 03:04:05.5",
        b"2024-01-02 03:04:05+00",
    ]


def test_binary_parameters_decoded_by_declared_type(
    conn: psycopg.Connection, table_name: str
) -> None:
    """A float, a numeric and a date in binary are not taken for integers."""
    conn.execute(f"CREATE TABLE {table_name} (f double precision, n numeric, d date, t text)")
    params = (2.75, Decimal("-1234.5678"), dt.date(2001, 2, 3), "x'y")
    conn.cursor().execute(f"INSERT INTO {table_name} VALUES (%b, %b, %b, %b)", params)
    assert conn.execute(f"SELECT * FROM {table_name}").fetchone() == params
    got = conn.cursor().execute(
        f"SELECT t FROM {table_name} WHERE f = %s AND n = %s",
        (2.75, Decimal("-1234.5678")),
        binary=True,
    )
    assert got.fetchall() == [("x'y",)]


def test_nulls_and_streaming(conn: psycopg.Connection) -> None:
    assert conn.execute("SELECT NULL", binary=True).fetchone() == (None,)
    assert conn.execute("SELECT %s::integer", (None,), binary=True).fetchone() == (None,)
    rows = list(conn.cursor().stream("SELECT * FROM (VALUES (1), (2), (3)) AS v (a) ORDER BY a"))
    assert rows == [(1,), (2,), (3,)]


def test_placeholders_inside_quotes_are_left_alone(conn: psycopg.Connection) -> None:
    row = conn.execute("SELECT '$1', %s::text, -%s", ("a", -3)).fetchone()
    assert row == ("$1", "a", 3)


def test_errors_carry_sqlstate_and_the_connection_goes_on(
    conn: psycopg.Connection, table_name: str
) -> None:
    with pytest.raises(errors.UndefinedTable) as e:
        conn.execute("SELECT * FROM no_such_table")
    assert e.value.sqlstate == "42P01"
    with pytest.raises(errors.DivisionByZero):
        conn.execute("SELECT 1 / 0")
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELEC 1")
    assert e.value.sqlstate == "42601"
    conn.execute(f"CREATE TABLE {table_name} (a int NOT NULL)")
    with pytest.raises(errors.NotNullViolation):
        conn.execute(f"INSERT INTO {table_name} VALUES (%s)", (None,))
    with pytest.raises(errors.UndefinedColumn):
        conn.execute(f"SELECT nope FROM {table_name}", prepare=True)
    assert conn.execute("SELECT 42").fetchone() == (42,)


def test_describe_does_not_run_the_statement(conn: psycopg.Connection, table_name: str) -> None:
    """Describe of a prepared INSERT (statement and portal) writes nothing; Execute writes once."""
    conn.execute(f"CREATE TABLE {table_name} (a int)")
    pg = conn.pgconn
    sql = f"INSERT INTO {table_name} VALUES ($1)".encode()
    assert pg.prepare(b"ins", sql, [23]).status == psycopg.pq.ExecStatus.COMMAND_OK
    described = pg.describe_prepared(b"ins")
    assert described.nparams == 1 and described.param_type(0) == 23 and described.nfields == 0
    assert conn.execute(f"SELECT count(*) FROM {table_name}").fetchone() == (0,)
    assert pg.exec_prepared(b"ins", [b"5"]).command_status == b"INSERT 0 1"
    sel = pg.prepare(b"sel", f"SELECT a, a * 2 AS b FROM {table_name} WHERE a > $1".encode())
    assert sel.status == psycopg.pq.ExecStatus.COMMAND_OK
    d = pg.describe_prepared(b"sel")
    assert [d.fname(i) for i in range(d.nfields)] == [b"a", b"b"]
    assert conn.execute(f"SELECT a FROM {table_name}").fetchall() == [(5,)]


def test_transactions(server, table_name: str) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (a int)")
    with server.connect(autocommit=False) as c:
        c.execute(f"INSERT INTO {table_name} VALUES (1)")
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        c.rollback()
        c.execute(f"INSERT INTO {table_name} VALUES (2)")
        c.execute(f"INSERT INTO {table_name} VALUES (3)")
        c.commit()
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        c.execute(f"INSERT INTO {table_name} VALUES (4)")
        with pytest.raises(errors.UndefinedTable):
            c.execute("INSERT INTO no_such_table VALUES (1)")
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        with pytest.raises(errors.InFailedSqlTransaction):
            c.execute("SELECT 1")
        c.rollback()
        got = c.execute(f"SELECT a FROM {table_name} ORDER BY a").fetchall()
        assert got == [(2,), (3,)]
        c.rollback()
    with server.connect() as c, c.transaction():
        c.execute(f"INSERT INTO {table_name} VALUES (5)")
    with server.connect() as c:
        assert c.execute(f"SELECT count(*) FROM {table_name}").fetchone() == (3,)


def test_server_side_cursor(server, table_name: str) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (a int, b text)")
        c.cursor().executemany(
            f"INSERT INTO {table_name} VALUES (%s, %s)", [(i, str(i)) for i in range(25)]
        )
    with server.connect(autocommit=False) as c:
        with c.cursor(name="big") as cur:
            cur.itersize = 10
            cur.execute(f"SELECT a, b FROM {table_name} WHERE a >= %s ORDER BY a", (5,))
            assert [d.name for d in cur.description] == ["a", "b"]
            assert cur.fetchone() == (5, "5")
            assert cur.fetchmany(3) == [(6, "6"), (7, "7"), (8, "8")]
            assert [r[0] for r in cur] == list(range(9, 25))
        c.commit()
        with c.cursor(name="bin", binary=True) as cur:
            cur.execute(f"SELECT a FROM {table_name} WHERE a < 3 ORDER BY a")
            assert cur.fetchall() == [(0,), (1,), (2,)]
        c.commit()
        c.execute(f"INSERT INTO {table_name} VALUES (-1, 'mine')")  # seen before COMMIT
        with c.cursor(name="own") as cur:
            cur.execute(f"SELECT a, b FROM {table_name} WHERE a < 1 ORDER BY a")
            assert cur.fetchall() == [(-1, "mine"), (0, "0")]
        c.rollback()


def test_declare_fetch_subscribe(server, table_name: str) -> None:
    with server.connect() as c, server.connect() as writer:
        c.execute(f"CREATE TABLE {table_name} (k int, v text)")
        c.execute(f"INSERT INTO {table_name} VALUES (1, 'a')")
        cur = c.cursor()
        cur.execute("BEGIN")
        cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {table_name}")
        cur.execute("FETCH ALL c WITH (timeout = '5s')")
        assert [d.name for d in cur.description] == ["mz_timestamp", "mz_diff", "k", "v"]
        first = cur.fetchall()
        assert [r[1:] for r in first] == [(1, 1, "a")]
        writer.execute(f"INSERT INTO {table_name} VALUES (2, 'b')")
        writer.execute(f"DELETE FROM {table_name} WHERE k = 1")
        seen: list[tuple] = []
        deadline = time.monotonic() + 20
        while len(seen) < 2 and time.monotonic() < deadline:
            cur.execute("FETCH ALL FROM c WITH (timeout = '1s')")
            seen += cur.fetchall()
        assert sorted(r[1:] for r in seen) == [(-1, 1, "a"), (1, 2, "b")]
        assert all(r[0] >= first[0][0] for r in seen)
        start = time.monotonic()
        cur.execute("FETCH 1 c WITH (timeout = '300ms')")
        assert cur.fetchall() == [] and cur.statusmessage == "FETCH 0"
        assert time.monotonic() - start < 5
        cur.execute("CLOSE c")
        cur.execute("COMMIT")
        with pytest.raises(errors.InvalidCursorName):
            cur.execute("FETCH ALL c")


def test_copy_subscribe_to_stdout(server, table_name: str) -> None:
    """Rows stream as they happen; leaving the block early cancels the COPY cleanly."""
    with server.connect() as c, server.connect() as writer:
        c.execute(f"CREATE TABLE {table_name} (k int, v text)")
        c.execute(f"INSERT INTO {table_name} VALUES (1, 'a')")

        class Enough(Exception):
            pass

        rows = []
        with (
            pytest.raises(Enough),
            c.cursor().copy(f"COPY (SUBSCRIBE {table_name}) TO STDOUT") as copy,
        ):
            for row in copy.rows():
                rows.append(row)
                if len(rows) == 1:
                    writer.execute(f"INSERT INTO {table_name} VALUES (2, 'b')")
                else:
                    raise Enough
        assert [r[1:] for r in rows] == [("1", "1", "a"), ("1", "2", "b")]
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert c.execute(f"SELECT count(*) FROM {table_name}").fetchone() == (2,)
        ts = int(rows[1][0])
        with c.cursor().copy(
            f"COPY (SUBSCRIBE {table_name} AS OF {ts} UP TO {ts + 1}) TO STDOUT"
        ) as copy:
            snapshot = sorted(copy.rows())
        assert [r[2:] for r in snapshot] == [("1", "a"), ("2", "b")]


def test_copy_query_formats_and_copy_in(conn: psycopg.Connection, table_name: str) -> None:
    conn.execute(f"CREATE TABLE {table_name} (k int, v text, f double precision)")
    cur = conn.cursor()
    with cur.copy(f"COPY {table_name} (k, v, f) FROM STDIN") as copy:
        copy.write_row((1, "tab\there", 1.5))
        copy.write_row((2, None, None))
    assert cur.rowcount == 2 or cur.statusmessage == "COPY 2"
    order = f"(SELECT * FROM {table_name} ORDER BY k)"
    with cur.copy(f"COPY {order} TO STDOUT") as copy:
        assert b"".join(copy) == b"1\ttab\\there\t1.5\n2\t\\N\t\\N\n"
    with cur.copy(f"COPY {order} TO STDOUT WITH (FORMAT csv, HEADER)") as copy:
        assert b"".join(copy) == b"k,v,f\n1,tab\there,1.5\n2,,\n"
    with cur.copy(f"COPY {order} TO STDOUT (FORMAT binary)") as copy:
        copy.set_types(["int4", "text", "float8"])
        assert list(copy.rows()) == [(1, "tab\there", 1.5), (2, None, None)]
    with cur.copy(f"COPY {table_name} TO STDOUT") as copy:
        assert sorted(b"".join(copy).splitlines()) == [b"1\ttab\\there\t1.5", b"2\t\\N\t\\N"]


def test_alter_table_and_schemas_with_psycopg_defaults(server, table_name: str) -> None:
    """psycopg prepares a statement run five times; after ALTER TABLE the same text reads the
    new columns (as PostgreSQL replans), and qualified names work over the wire."""
    with server.connect() as conn:
        conn.execute(f"CREATE TABLE {table_name} (a int)")
        conn.execute(f"INSERT INTO {table_name} VALUES (%s)", (1,))
        query = f"SELECT * FROM {table_name} WHERE a = %s"
        for _ in range(6):
            assert conn.execute(query, (1,)).fetchall() == [(1,)]
        conn.execute(f"ALTER TABLE {table_name} ADD COLUMN b text DEFAULT 'x'")
        cur = conn.execute(query, (1,))
        assert [d.name for d in cur.description] == ["a", "b"]
        assert cur.fetchall() == [(1, "x")]
        conn.execute(f"ALTER TABLE {table_name} RENAME COLUMN b TO c")
        conn.execute(f"ALTER TABLE {table_name} DROP COLUMN a")
        assert conn.execute(f"SELECT * FROM {table_name}").fetchall() == [("x",)]
        with pytest.raises(errors.UndefinedColumn):
            conn.execute(f"ALTER TABLE {table_name} DROP COLUMN a")
        schema = f"s_{table_name}"
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.t (k int)")
        conn.execute(f"INSERT INTO {schema}.t VALUES (%s), (%s)", (1, 2))
        assert conn.execute(f"SELECT sum(k) FROM {schema}.t").fetchall() == [(3,)]
        with pytest.raises(errors.DependentObjectsStillExist):
            conn.execute(f"DROP SCHEMA {schema}")
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
        with pytest.raises(errors.UndefinedTable):
            conn.execute(f"SELECT * FROM {schema}.t")
