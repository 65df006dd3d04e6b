"""Writes as PostgreSQL 15 does them: PRIMARY KEY and UNIQUE enforced (23505), INSERT … ON
CONFLICT, UPDATE … FROM, DELETE … USING. The same statements run on both; each one's outcome
(its SQLSTATE, or its row count and RETURNING rows) and the tables and a materialized view over
them afterwards are compared."""

from __future__ import annotations

from pathlib import Path

import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE k (id int PRIMARY KEY, name text UNIQUE, n int, grp int)",
    "CREATE TABLE pair (a int, b int, v text, CONSTRAINT pair_ab UNIQUE (a, b))",
    "CREATE TABLE src (id int, n int)",
    "INSERT INTO k VALUES (1, 'a', 1, 1), (2, 'b', 2, 1), (3, 'c', 3, 2)",
    "INSERT INTO src VALUES (1, 10), (2, 20), (2, 25), (4, 40)",
]
STATEMENTS = [
    "INSERT INTO k VALUES (1, 'z', 0, 0)",
    "INSERT INTO k VALUES (4, 'a', 0, 0)",
    "INSERT INTO k VALUES (5, 'e', 5, 2), (5, 'f', 6, 2)",
    "INSERT INTO k VALUES (NULL, 'q', 1, 1)",
    "INSERT INTO k VALUES (6, NULL, 6, 3), (7, NULL, 7, 3)",
    "UPDATE k SET id = 2 WHERE id = 1",
    "UPDATE k SET id = id + 10",
    "INSERT INTO k VALUES (11, 'zz', 0, 0) ON CONFLICT DO NOTHING",
    "INSERT INTO k VALUES (12, 'b', 0, 0) ON CONFLICT (name) DO NOTHING RETURNING id",
    "INSERT INTO k VALUES (11, 'x', 100, 9), (30, 'y', 3, 3) ON CONFLICT (id) DO UPDATE "
    "SET n = k.n + EXCLUDED.n, grp = EXCLUDED.grp RETURNING id, name, n, grp",
    "INSERT INTO k AS t VALUES (12, 'w', 1, 1) ON CONFLICT ON CONSTRAINT k_pkey DO UPDATE "
    "SET n = t.n * 2 WHERE t.grp = 5",
    "INSERT INTO k VALUES (13, 'c', 7, 7) ON CONFLICT (name) DO UPDATE SET n = EXCLUDED.n",
    "INSERT INTO k VALUES (40, 'p', 1, 1), (40, 'p2', 2, 2) ON CONFLICT (id) DO UPDATE "
    "SET n = EXCLUDED.n",
    "INSERT INTO k VALUES (41, 'p', 1, 1) ON CONFLICT (n) DO NOTHING",
    "INSERT INTO k VALUES (41, 'p', 1, 1) ON CONFLICT DO UPDATE SET n = 1",
    "INSERT INTO pair VALUES (1, 1, 'x'), (1, 2, 'y'), (1, NULL, 'n'), (1, NULL, 'm')",
    "INSERT INTO pair VALUES (1, 1, 'dup')",
    "INSERT INTO pair VALUES (1, 1, 'new') ON CONFLICT (a, b) DO UPDATE SET v = EXCLUDED.v",
    "UPDATE k SET n = src.n FROM src WHERE k.id - 10 = src.id AND src.n <> 25",
    "UPDATE k SET n = k.n + s.n FROM src AS s WHERE s.id = 4 AND k.grp = 3 RETURNING k.id, k.n",
    "DELETE FROM k USING src WHERE k.n = src.n AND src.id > 1",
    "DELETE FROM pair USING k WHERE pair.a + 8 = k.grp RETURNING pair.v",
]
TABLES = ["SELECT * FROM k", "SELECT * FROM pair"]
VIEW = "SELECT grp, count(*) AS c, sum(n) AS total FROM k GROUP BY grp"


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted((tuple("NULL" if v is None else str(v) for v in r) for r in rows), key=str)


def _outcome(conn, sql: str, error: type[Exception]) -> tuple:
    try:
        cur = conn.execute(sql)
    except error as e:
        return ("error", e.sqlstate)
    rows = _sorted(cur.fetchall()) if cur.description else None
    return ("ok", cur.rowcount, rows)


def test_writes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    ours.autocommit = True
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS k, pair, src")
        try:
            for sql in SETUP:
                ours.execute(sql)
                pg.execute(sql)
            ours.execute(f"CREATE MATERIALIZED VIEW kv AS {VIEW}")
            for sql in STATEMENTS:
                mine = _outcome(ours, sql, DatabaseError)
                theirs = _outcome(pg, sql, psycopg.Error)
                assert mine == theirs, sql
                for table in TABLES:
                    assert _sorted(ours.execute(table).fetchall()) == _sorted(
                        pg.execute(table).fetchall()
                    ), (sql, table)
                want = _sorted(pg.execute(VIEW).fetchall())
                assert _sorted(ours.execute("SELECT * FROM kv").fetchall()) == want, sql
        finally:
            pg.execute("DROP TABLE IF EXISTS k, pair, src")
            ours.close()


def test_two_primary_keys_are_refused(tmp_path: Path) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    with pytest.raises(DatabaseError) as caught:
        conn.execute("CREATE TABLE bad (a int PRIMARY KEY, b int, PRIMARY KEY (b))")
    assert caught.value.sqlstate == "42P16"
    conn.close()


def test_two_transactions_inserting_one_key_cannot_both_commit(tmp_path: Path) -> None:
    """Each checks the key against the table it read; the second to commit finds the table
    written since and fails (40001), so the key is never in the table twice."""
    from changeflow.adapter.session import Session
    from changeflow.adapter.sql.statements import parse

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE u (id int PRIMARY KEY, who text)")
    a, b = Session(conn.env), Session(conn.env)
    for session, who in ((a, "a"), (b, "b")):
        session.run(parse("BEGIN"))
        session.run(parse(f"INSERT INTO u VALUES (1, '{who}')"))
    b.run(parse("COMMIT"))
    with pytest.raises(Exception) as caught:
        a.run(parse("COMMIT"))
    assert getattr(caught.value, "fields", {}).get("sqlstate") == "40001"
    assert conn.execute("SELECT * FROM u").fetchall() == [(1, "b")]
    conn.close()


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE k ADD CONSTRAINT c EXCLUDE USING gist (n WITH =)",
        "ALTER SCHEMA public RENAME TO p",
        "CREATE UNLOGGED TABLE u (a int)",
    ],
)
def test_statements_not_supported_say_so(tmp_path: Path, sql: str) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE k (id int, n int)")
    with pytest.raises(DatabaseError) as caught:
        conn.execute(sql)
    assert caught.value.sqlstate == "0A000" and "not supported" in str(caught.value)
    conn.close()


DEFAULTS = [
    "CREATE TABLE dflt (a int, b int NOT NULL DEFAULT 'x')",
    "CREATE TABLE dflt (a int DEFAULT now())",
    "CREATE TABLE dflt (a date DEFAULT 'today'::text)",
    "CREATE TABLE dflt (a int DEFAULT 'x'::int + 1)",
]


def test_a_default_the_column_cannot_take_is_refused_at_create(
    tmp_path: Path, postgres_url: str
) -> None:
    """CREATE TABLE checks each DEFAULT as PostgreSQL does (its type, its literals) and a
    refused one leaves no table behind; one that fails only when run (1/0) is accepted."""
    import psycopg

    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    ours.autocommit = True
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS dflt")
        for sql in DEFAULTS:
            theirs = _outcome(pg, sql, psycopg.Error)
            assert theirs[0] == "error", sql
            assert _outcome(ours, sql, DatabaseError) == theirs, sql
            assert _outcome(ours, "SELECT * FROM dflt", DatabaseError) == ("error", "42P01")
        accepted = "CREATE TABLE dflt (a int, b int DEFAULT 1 / 0, c timestamptz DEFAULT now())"
        for conn in (ours, pg):
            conn.execute(accepted)
        error = (DatabaseError, psycopg.Error)
        insert = "INSERT INTO dflt (a) VALUES (1)"
        assert _outcome(ours, insert, error) == _outcome(pg, insert, error) == ("error", "22012")
        pg.execute("DROP TABLE dflt")
    ours.close()


TRANSACTION = [  # one transaction's writes, each reading what those before it left
    "UPDATE own SET n = n + 1 WHERE grp = 1",
    "UPDATE own SET n = n * 10 WHERE grp = 1",
    "DELETE FROM own WHERE n = 20",
    "INSERT INTO own VALUES (4, 7, 2)",
    "UPDATE own SET n = (SELECT max(n) FROM own) + id WHERE grp = 2",
    "UPDATE own SET id = own.id + 100 FROM own_src AS s WHERE own.id = s.id",
]


def test_a_transaction_reads_its_own_writes_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """A later write of one transaction acts on the rows its earlier writes left (a second
    UPDATE of a row does not retract the row the first one replaced)."""
    import psycopg

    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    with psycopg.connect(postgres_url) as pg:
        pg.execute("DROP TABLE IF EXISTS own, own_src")
        pg.commit()
        try:
            got = []
            for c in (ours, pg):
                c.autocommit = True
                c.execute("CREATE TABLE own (id int, n int, grp int)")
                c.execute("CREATE TABLE own_src (id int, n int)")
                c.execute("INSERT INTO own VALUES (1, 1, 1), (2, 2, 1), (3, 3, 2)")
                c.execute("INSERT INTO own_src VALUES (3, 0)")
                c.autocommit = False
                for sql in TRANSACTION:
                    c.execute(sql)
                c.commit()
                got.append(sorted(c.execute("SELECT * FROM own").fetchall()))
                c.rollback()
        finally:
            pg.autocommit = True
            pg.execute("DROP TABLE IF EXISTS own, own_src")
            ours.close()
    assert got[0] == got[1]
