"""PostgreSQL compatibility of the adapter: plans that store and reload, errors as PostgreSQL
words them, DROP with indexes, numeric scale."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import Connection, DatabaseError
from changeflow.compute.functions import FUNCTIONS

sys.path.insert(0, str(Path(__file__).parent))
from function_calls import CALLS, ROWS_ONLY  # noqa: E402


def open_home(home: Path) -> Connection:
    return changeflow.connect(home, host_seconds=0)


def test_every_function_has_its_backends() -> None:
    """Each function of the table has its meaning on Python values and its Spark form."""
    lacking = [n for n, f in FUNCTIONS.items() if f.impl is None or f.spark is None]
    assert not lacking, f"no Python or Spark form: {lacking}"
    missing = set(FUNCTIONS) - set(CALLS)
    assert not missing, f"add a call of {sorted(missing)} to CALLS"


TABLE = "CREATE TABLE t (id int, name text, x numeric(12,2), f float8, d date, ts timestamptz)"
ROWS = (
    "INSERT INTO t VALUES (1, 'abc', -3.25, 2.5, '2024-03-05', '2024-03-05 10:00:00+00'),"
    " (2, 'ba ', 7.25, 0.5, '2023-12-31', '2023-12-31 23:59:59+00')"
)


@pytest.mark.spark
def test_every_function_in_a_cluster_tier_view(tmp_path: Path, spark) -> None:
    """Every function's Spark form, in a materialized view on the cluster tier, gives what
    the process tier gives (Spark refuses numeric as text: concat's call leaves it out;
    functions of intervals are left out)."""
    calls = {n: c for n, c in CALLS.items() if n not in ROWS_ONLY}
    calls["concat"] = "concat(name, id, d)"
    select = ", ".join(f"{call} AS {name}" for name, call in calls.items())
    conn = open_home(tmp_path / "home")
    try:
        conn.execute(TABLE)
        conn.execute(ROWS)
        expected = conn.execute(f"SELECT id, {select} FROM t ORDER BY id").fetchall()
        conn.execute(
            f"CREATE MATERIALIZED VIEW vc WITH (CLUSTER = true) AS SELECT id, {select} FROM t"
        )
        assert conn.execute("SELECT * FROM vc ORDER BY id").fetchall() == expected
    finally:
        conn.close()


def test_every_function_in_a_materialized_view_survives_a_restart(tmp_path: Path) -> None:
    missing = set(FUNCTIONS) - set(CALLS)
    assert not missing, f"add a call of {sorted(missing)} to CALLS"
    select = ", ".join(f"{call} AS {name}" for name, call in CALLS.items())
    conn = open_home(tmp_path / "home")
    conn.execute(
        "CREATE TABLE t (id int, name text, x numeric(12,2), f float8, d date, ts timestamptz)"
    )
    conn.execute(
        "INSERT INTO t VALUES (1, 'abc', -3.25, 2.5, '2024-03-05', '2024-03-05 10:00:00+00'),"
        " (2, 'ba ', 7.25, 0.5, '2023-12-31', '2023-12-31 23:59:59+00')"
    )
    expected = conn.execute(f"SELECT id, {select} FROM t ORDER BY id").fetchall()
    conn.execute(f"CREATE MATERIALIZED VIEW v AS SELECT id, {select} FROM t")
    conn.execute("CREATE MATERIALIZED VIEW recent AS SELECT id FROM t WHERE ts <= mz_now()")
    conn.execute(f"CREATE VIEW plain AS SELECT id, {select} FROM t")
    assert conn.execute("SELECT * FROM v ORDER BY id").fetchall() == expected
    conn.close()
    conn = open_home(tmp_path / "home")
    try:
        assert conn.execute("SELECT * FROM v ORDER BY id").fetchall() == expected
        assert conn.execute("SELECT * FROM plain ORDER BY id").fetchall() == expected
        assert conn.execute("SELECT id FROM recent ORDER BY id").fetchall() == [(1,), (2,)]
    finally:
        conn.close()


# Statements PostgreSQL refuses, with the SQLSTATE both give and words our message must have.
REFUSED = [
    ("SELECT id FROM t WHERE", "42601", "syntax error at end of input"),
    ("SELECT id FROM t WHERE id = = 2", "42601", 'syntax error at or near "="'),
    ("SELECT upper('a', 'b')", "42883", "function upper(text, text) does not exist"),
    ("SELECT nofunc(id, name) FROM t", "42883", "function nofunc(integer, text) does not exist"),
    ("SELECT id FROM t WHERE id = $1", "42P02", "there is no parameter $1"),
]


def _postgres_error(cur, sql: str) -> str:
    import psycopg

    try:
        cur.execute(sql)
    except psycopg.Error as e:
        cur.connection.rollback()
        return e.sqlstate
    raise AssertionError(f"PostgreSQL accepted {sql}")


@pytest.mark.postgres
def test_errors_as_postgres_gives_them(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    with psycopg.connect(postgres_url) as pg, pg.cursor() as cur:
        for c in (conn, cur):
            c.execute("CREATE TABLE t (id int, x int, name text)")
        pg.commit()
        for sql, sqlstate, words in REFUSED:
            with pytest.raises(DatabaseError) as caught:
                conn.execute(sql)
            assert caught.value.sqlstate == sqlstate == _postgres_error(cur, sql), sql
            assert words in str(caught.value) and "sqlglot" not in str(caught.value), sql
        cur.execute("DROP TABLE t")
        pg.commit()
    conn.close()


def test_as_of_before_order_by_and_limit(tmp_path: Path) -> None:
    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    conn.execute("CREATE TABLE t (id int)")
    conn.execute("INSERT INTO t VALUES (2), (1), (3)")
    ts = conn.env.oracle("EpochMilliseconds").read_ts()
    conn.execute("INSERT INTO t VALUES (0)")
    got = conn.execute(f"SELECT id FROM t AS OF {ts} ORDER BY id LIMIT 2").fetchall()
    assert got == [(1,), (2,)]
    conn.close()


def test_drop_table_drops_its_own_indexes(tmp_path: Path) -> None:
    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    conn.execute("CREATE TABLE t (id int)")
    conn.execute("CREATE INDEX t_id ON t (id)")
    conn.execute("CREATE VIEW v AS SELECT id FROM t")
    conn.execute("CREATE INDEX v_id ON v (id)")
    with pytest.raises(DatabaseError) as caught:  # a view still depends on t
        conn.execute("DROP TABLE t")
    assert caught.value.sqlstate == "2BP01" and '"v"' in str(caught.value)
    conn.execute("DROP VIEW v")
    assert conn.execute("SHOW INDEXES").fetchall() == [("t_id", "t", "id")]
    conn.execute("DROP TABLE t")
    assert conn.execute("SHOW INDEXES").fetchall() == []
    assert conn.execute("SHOW TABLES").fetchall() == []
    conn.close()


def test_session_statements_drivers_send(tmp_path: Path) -> None:
    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    assert conn.execute("SHOW TRANSACTION ISOLATION LEVEL").fetchall() == [("serializable",)]
    conn.execute("SET TIME ZONE 'UTC'")
    conn.execute("SET TIME ZONE UTC")
    assert conn.execute("SHOW timezone").fetchall() == [("UTC",)]
    with pytest.raises(DatabaseError) as caught:
        conn.execute("SET TIME ZONE 'Europe/Berlin'")
    assert caught.value.sqlstate == "0A000"
    settings = dict((n, v) for n, v, _ in conn.execute("SHOW ALL").fetchall())
    assert settings["TimeZone"] == "UTC" and settings["server_version"] == "15.0"
    conn.close()


STRING_CALLS = [
    "quote_ident(s)",
    "quote_literal(s)",
    "quote_nullable(s)",
    "bit_length(s)",
    "sign(length(s) - 3)",
    "format('%s/%L/%1$s/[%-4s]/%4$I', s, s, left(s, 2), coalesce(s, 'n'))",
    "s SIMILAR TO '%(b|o)%'",
    "s SIMILAR TO 'a_%'",
    "s NOT SIMILAR TO '[a-c]%'",
    "s SIMILAR TO '%#%%' ESCAPE '#'",
    "s SIMILAR TO '%.%'",
    "substring(s from '[a-z]+')",
    "substring(s from 'l(o+)')",
    "substring(s, ',(.),')",
    "substring(s from 2 for 3)",
    "split_part(s, ',', 2)",
    "split_part(s, ',', -1)",
    "split_part(s, '', 1)",
    "lpad(s, 6, 'xy')",
    "lpad(s, 2)",
    "rpad(s, 7, '-')",
    "rpad(s, 0)",
    "initcap(s)",
    "md5(s)",
    "regexp_replace(s, '[aeiou]', '_')",
    "regexp_replace(s, '([a-z])([a-z])', '\\2\\1', 'g')",
    "regexp_replace(s, 'B', '<\\&>', 'gi')",
    "left(s, 2)",
    "right(s, -1)",
    "reverse(s)",
]


@pytest.mark.postgres
def test_string_functions_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    values = ["a,b,c", "hello wORLD-foo bar1x", "", "abba", None, "x,,y", 'it\'s "q"']
    values += ["a\\b", "1%.x"]
    select = ", ".join(STRING_CALLS)
    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        for c in (conn, pg):
            c.execute("CREATE TABLE strs (id int, s text)")
            for i, v in enumerate(values):
                c.execute("INSERT INTO strs VALUES (%s, %s)", (i, v))
        try:
            sql = f"SELECT id, {select} FROM strs ORDER BY id"
            assert conn.execute(sql).fetchall() == [tuple(r) for r in pg.execute(sql).fetchall()]
        finally:
            pg.execute("DROP TABLE strs")
    conn.close()


DML = [
    "INSERT INTO w VALUES (1, 'a', 1.5), (2, 'b', NULL) RETURNING *",
    "INSERT INTO w (id, name) VALUES (3, 'c') RETURNING id * 10 AS ten, upper(name), price",
    "UPDATE w SET price = 9.25 WHERE id >= 2 RETURNING id, price",
    "DELETE FROM w WHERE id = 1 RETURNING name, w.id",
    "UPDATE w SET name = 'none' WHERE id = 99 RETURNING id",
]


@pytest.mark.postgres
def test_returning_and_truncate_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        for c in (conn, pg):
            c.execute("CREATE TABLE w (id int NOT NULL, name text, price numeric(10,2))")
            c.execute("CREATE TABLE w2 (id int)")
            c.execute("INSERT INTO w2 VALUES (1)")
        try:
            for sql in DML:
                ours, theirs = conn.cursor(), pg.cursor()
                ours.execute(sql)
                theirs.execute(sql)
                assert ours.statusmessage == theirs.statusmessage, sql
                assert [d[0] for d in ours.description] == [d.name for d in theirs.description]
                got = sorted(ours.fetchall())
                assert got == sorted(tuple(r) for r in theirs.fetchall()), sql
            for c in (conn, pg):
                assert c.execute("TRUNCATE w, w2").statusmessage == "TRUNCATE TABLE"
                assert c.execute("SELECT count(*) FROM w").fetchall() == [(0,)]
                assert c.execute("SELECT count(*) FROM w2").fetchall() == [(0,)]
        finally:
            pg.execute("DROP TABLE w, w2")
    conn.close()


def test_now_and_current_date(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    before = datetime.now(UTC)
    ((now, today, stamp),) = conn.execute(
        "SELECT now(), current_date, current_timestamp"
    ).fetchall()
    assert before <= now <= datetime.now(UTC) and stamp == now  # one value a statement
    assert today == now.date()
    conn.execute("CREATE TABLE ev (at timestamptz)")
    conn.execute("BEGIN")
    first = conn.execute("SELECT now()").fetchall()
    assert conn.execute("SELECT now()").fetchall() == first  # the transaction's start
    conn.execute("COMMIT")
    assert conn.execute("SELECT now()").fetchall() != first
    conn.execute("INSERT INTO ev VALUES (now())")
    assert conn.execute("SELECT count(*) FROM ev WHERE at <= now()").fetchall() == [(1,)]
    for sql in (
        "CREATE VIEW v AS SELECT now()",
        "CREATE MATERIALIZED VIEW v AS SELECT current_date",
    ):
        with pytest.raises(DatabaseError) as caught:
            conn.execute(sql)
        assert caught.value.sqlstate == "0A000"
    conn.close()


@pytest.mark.postgres
def test_numeric_division_scale_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    # quotients whose PostgreSQL scale is at least 10 (below that changeflow keeps 10: a view
    # stores numerics at 10 decimals, and Spark's hydration of it computes at least as many)
    pairs = [("1", "3"), ("2950.20", "2"), ("10", "4"), ("0.001", "7"), ("12345", "0.003")]
    pairs += [("-7.5", "2.25"), ("0", "9"), ("1", "10000"), ("99999", "0.5"), ("1e-5", "3")]
    exprs = ", ".join(f"{a}::numeric / {b}::numeric" for a, b in pairs)
    sql = f"SELECT {exprs}, 7 / 2.0, 1.00 / 3"
    conn = open_home(tmp_path / "home")
    with psycopg.connect(postgres_url) as pg:
        theirs = [str(v) for v in pg.execute(sql).fetchone()]
    ours = [str(v) for v in conn.execute(sql).fetchone()]
    assert ours == theirs
    conn.close()


@pytest.mark.postgres
def test_avg_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    create = "CREATE TABLE a (g int, i int, x numeric(12,2), f double precision)"
    insert = (
        "INSERT INTO a VALUES (1, 1, 1470.10, 0.5), (1, 2, 5, 1.5), (1, 2, NULL, NULL),"
        " (2, 7, 0.01, 2), (2, NULL, 287.5, NULL), (3, NULL, NULL, NULL)"
    )
    sql = (
        "SELECT g, avg(i), avg(x), avg(f), avg(DISTINCT i), sum(x) / count(x), count(*)"
        " FROM a GROUP BY g ORDER BY g"
    )
    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        for c in (conn, pg):
            c.execute(create)
            c.execute(insert)
        try:
            theirs = [tuple(map(str, r)) for r in pg.execute(sql).fetchall()]
            whole = "SELECT avg(x), avg(i) FROM a"
            theirs_whole = [tuple(map(str, r)) for r in pg.execute(whole).fetchall()]
        finally:
            pg.execute("DROP TABLE a")
    assert [tuple(map(str, r)) for r in conn.execute(sql).fetchall()] == theirs
    assert [tuple(map(str, r)) for r in conn.execute(whole).fetchall()] == theirs_whole
    # a view stores numerics at 18 places: PostgreSQL's 16 kept whole
    conn.execute("CREATE MATERIALIZED VIEW av AS SELECT g, avg(i) AS ai FROM a GROUP BY g")
    got = dict(conn.execute("SELECT g, ai FROM av").fetchall())
    assert str(got[1]) == theirs[0][1] == "1.6666666666666667" and got[3] is None
    conn.close()


@pytest.mark.postgres
def test_settings_drivers_read_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    names = ["search_path", "integer_datetimes", "max_identifier_length", "intervalstyle"]
    names += ["standard_conforming_strings", "client_encoding", "datestyle"]
    conn = open_home(tmp_path / "home")
    with psycopg.connect(postgres_url) as pg:
        for name in names:
            ours = conn.execute(f"SHOW {name}").fetchall()
            assert ours == [tuple(r) for r in pg.execute(f"SHOW {name}").fetchall()], name
        for name in ("timezone", "DateStyle", "intervalstyle"):  # SHOW names its column so
            shown = conn.execute(f"SHOW {name}").description[0][0]
            assert shown == pg.execute(f"SHOW {name}").description[0].name, name
        for c in (conn, pg):  # RESET and SET … TO DEFAULT give the setting's default back
            c.execute("SET intervalstyle = 'iso_8601'")
            c.execute("RESET intervalstyle")
            c.execute("SET datestyle = 'ISO, DMY'")
            c.execute("SET datestyle TO DEFAULT")
        for name in ("intervalstyle", "datestyle"):
            assert conn.execute(f"SHOW {name}").fetchall() == pg.execute(f"SHOW {name}").fetchall()
        # pg_settings spells them as PostgreSQL does (TimeZone, DateStyle)
        listed = "SELECT name FROM pg_settings WHERE name IN ('TimeZone', 'DateStyle', 'jit')"
        assert sorted(conn.execute(listed).fetchall()) == sorted(pg.execute(listed).fetchall())
    assert conn.execute("SHOW server_version_num").fetchall()[0][0].startswith("15")
    conn.close()


def test_system_catalogs_embedded(tmp_path: Path) -> None:
    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    conn.execute("CREATE TABLE t (id int NOT NULL, name text)")
    conn.execute("CREATE VIEW v AS SELECT id FROM t")
    got = conn.execute(
        "SELECT table_name, table_type FROM information_schema.tables ORDER BY table_name"
    ).fetchall()
    assert got == [("t", "BASE TABLE"), ("v", "VIEW")]
    got = conn.execute(
        "SELECT a.attname, a.attnotnull FROM pg_catalog.pg_attribute a"
        " JOIN pg_catalog.pg_class c ON c.oid = a.attrelid WHERE c.relname = 't' ORDER BY a.attnum"
    ).fetchall()
    assert got == [("id", True), ("name", False)]
    conn.close()


@pytest.mark.postgres
def test_parenthesized_unknown_literals_take_the_column_type(
    tmp_path: Path, postgres_url: str
) -> None:
    """``(('3'))`` is still an unknown-typed literal: an INSERT, an UPDATE and a comparison
    read it as the column's type, as PostgreSQL does."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from sqlhelp import beside_postgres

    with beside_postgres(
        tmp_path / "home", postgres_url, "lit", "CREATE TABLE lit (id bigint, d date)"
    ) as (ours, pg):
        for c in (ours, pg):
            c.execute("INSERT INTO lit (id, d) VALUES (('3'), ('2024-01-02')), ((('4')), NULL)")
            c.execute("UPDATE lit SET d = (('2020-02-29')) WHERE id = ('4')")
        sql = "SELECT id, d FROM lit WHERE id >= (('3')) ORDER BY id"
        assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall() != []


SETTING_CALLS = [
    "SELECT current_setting('search_path'), current_setting('integer_datetimes')",
    "SELECT set_config('application_name', 'cf', false), current_setting('application_name')",
    "SELECT current_setting('application_name')",
    "SELECT current_setting('no_such_setting', true)",
    "SELECT current_setting('no_such_setting')",
    "SELECT current_setting('datestyle') AS ds, set_config('application_name', 'b', true) AS new",
]


@pytest.mark.postgres
def test_current_setting_and_set_config_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """current_setting reads the session's settings and set_config changes them, as asyncpg's
    first query (``current_setting('jit')``, ``set_config('jit', 'off', false)``) needs."""
    import psycopg

    conn = open_home(tmp_path / "home")
    conn.autocommit = True
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        for sql in SETTING_CALLS:
            try:
                want: object = pg.execute(sql).fetchall()
            except psycopg.Error as e:
                want = e.sqlstate
            try:
                got: object = conn.execute(sql).fetchall()
            except DatabaseError as e:
                got = e.sqlstate
            assert got == want, sql
    jit = "SELECT current_setting('jit') AS cur, set_config('jit', 'off', false) AS new"
    assert conn.execute(jit).fetchall() == [("off", "off")]
    conn.close()
