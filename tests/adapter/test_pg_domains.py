"""Domains (``CREATE DOMAIN``): columns of one checked against its NOT NULL and CHECK
constraints on every write (INSERT, UPDATE; COPY in tests/server/test_domains_wire.py), its
DEFAULT where the column has none,
``ALTER DOMAIN`` (constraints added after the values are checked, dropped, renamed; the
default set and dropped), ``DROP DOMAIN`` while used, and the catalogs (pg_type,
pg_constraint, pg_attribute, information_schema.columns) and errors as PostgreSQL 15's, side
by side; the domain's DDL in transactions and across a restart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_errors, same_outcomes  # noqa: E402

import changeflow  # noqa: E402

pytestmark = pytest.mark.postgres

DOMAINS = ("posint", "price", "code")
SETUP = [
    "DROP TABLE IF EXISTS dt",
    *(f"DROP DOMAIN IF EXISTS {d}" for d in DOMAINS),
    "CREATE DOMAIN posint AS integer CHECK (VALUE > 0)",
    "CREATE DOMAIN price numeric(10,2) CONSTRAINT nonneg CHECK (VALUE >= 0) NOT NULL DEFAULT 0",
    "CREATE DOMAIN code AS varchar(5) CHECK (VALUE ~ '^[A-Z]+$') CHECK (length(VALUE) > 1)",
    "CREATE TABLE dt (id posint PRIMARY KEY, p price, c code)",
    "INSERT INTO dt VALUES (1, 2.5, 'AB'), (2, 10, 'XYZ')",
    "INSERT INTO dt (id, c) VALUES (3, 'QQ')",
]
AD_HOC = [
    "SELECT * FROM dt ORDER BY id",
    "SELECT id + 1, p * 2, c || '!' FROM dt ORDER BY id",
    "SELECT typname, typtype, typbasetype::regtype, typtypmod, typnotnull, typdefault"
    " FROM pg_type WHERE typname IN ('posint', 'price', 'code') ORDER BY 1",
    "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute"
    " WHERE attrelid = 'dt'::regclass AND attnum > 0 ORDER BY attnum",
    "SELECT column_name, data_type, udt_name, domain_name, character_maximum_length,"
    " numeric_precision, numeric_scale FROM information_schema.columns"
    " WHERE table_name = 'dt' ORDER BY ordinal_position",
    "SELECT conname, pg_get_constraintdef(oid), contypid::regtype FROM pg_constraint"
    " WHERE contypid IN ('posint'::regtype, 'price'::regtype, 'code'::regtype) ORDER BY 1",
    "SELECT 'posint'::regtype, to_regtype('code')::oid = 'code'::regtype::oid",
    "SELECT 5::posint, CAST('7' AS posint), NULL::posint, 'AB'::code, 2.555::price",
    "SELECT id::posint, (id * 2)::posint FROM dt ORDER BY 1",
]
ERRORS = [
    "INSERT INTO dt VALUES (0, 1, 'AB')",
    "INSERT INTO dt VALUES (4, NULL, 'AB')",
    "INSERT INTO dt VALUES (4, -1, 'AB')",
    "INSERT INTO dt VALUES (4, 1, 'A')",
    "INSERT INTO dt VALUES (4, 1, 'ab')",
    "INSERT INTO dt VALUES (4, 1, 'ABCDEFG')",
    "UPDATE dt SET id = -1 WHERE id = 1",
    "UPDATE dt SET p = NULL WHERE id = 2",
    "SELECT (-5)::posint",
    "SELECT NULL::price",
    "SELECT 'abc'::code",
    "SELECT (id - 2)::posint FROM dt",
    "CREATE DOMAIN posint AS bigint",
    "CREATE DOMAIN nope AS nosuchtype",
    "CREATE DOMAIN nope AS integer CHECK (VALUE + 1)",
    "CREATE DOMAIN nope AS integer CHECK (nosuch > 0)",
    "DROP DOMAIN posint",
    "DROP DOMAIN nosuch",
    "ALTER DOMAIN price DROP CONSTRAINT nosuch",
    "ALTER DOMAIN price ADD CONSTRAINT small CHECK (VALUE < 5)",
    "ALTER DOMAIN code ADD CHECK (VALUE <> 'QQ')",
    "ALTER DOMAIN nosuch SET DEFAULT 1",
]
QUERIES = ["SELECT id, p, c FROM dt WHERE p > 1", "SELECT sum(p) AS total, max(c) AS top FROM dt"]
CHANGES = [
    "INSERT INTO dt VALUES (5, 99.999, 'ZZ')",
    "UPDATE dt SET p = p + 1 WHERE id = 1",
    "DELETE FROM dt WHERE c = 'XYZ'",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    import psycopg

    with beside_postgres(tmp_path / "home", postgres_url, "dt", *SETUP) as (ours, pg):
        yield ours, pg
    with psycopg.connect(postgres_url, autocommit=True) as pg:  # (the shared server's)
        pg.execute("DROP TABLE IF EXISTS dt")
        pg.execute("DROP TABLE IF EXISTS dt2")
        for d in DOMAINS:
            pg.execute(f"DROP DOMAIN IF EXISTS {d}")


def test_domains_as_postgres(both) -> None:
    ours, pg = both
    same_outcomes(ours, pg, AD_HOC)
    same_errors(ours, pg, ERRORS)
    same_outcomes(ours, pg, ["SELECT * FROM dt ORDER BY id"])  # the errors wrote nothing


def test_domain_columns_maintained_as_postgres(both) -> None:
    ours, pg = both
    maintained_as_postgres(ours, pg, QUERIES, CHANGES)


def test_alter_domain_as_postgres(both) -> None:
    ours, pg = both
    same_outcomes(
        ours,
        pg,
        [
            "ALTER DOMAIN price DROP CONSTRAINT nonneg",
            "INSERT INTO dt VALUES (7, -1, 'QQ')",
            "ALTER DOMAIN price ADD CONSTRAINT small CHECK (VALUE < 100)",
            "ALTER DOMAIN price SET DEFAULT 7",
            "INSERT INTO dt (id, c) VALUES (8, 'ZZ')",
            "INSERT INTO dt VALUES (9, 100, 'ZZ')",
            "ALTER DOMAIN price RENAME CONSTRAINT small TO smaller",
            "INSERT INTO dt VALUES (9, 100, 'ZZ')",
            "ALTER DOMAIN price DROP NOT NULL",
            "ALTER DOMAIN price DROP DEFAULT",
            "INSERT INTO dt (id, c) VALUES (10, 'ZZ')",
            "ALTER DOMAIN price SET NOT NULL",
            "INSERT INTO dt VALUES (12, 1, NULL)",
            "ALTER DOMAIN code SET NOT NULL",
            "ALTER DOMAIN code ADD CONSTRAINT notqq CHECK (VALUE <> 'QQ') NOT VALID",
            "INSERT INTO dt VALUES (11, 1, 'QQ')",
            "ALTER DOMAIN price DROP CONSTRAINT IF EXISTS nosuch",
            "ALTER DOMAIN code RENAME TO code2",
            "INSERT INTO dt VALUES (13, 1, 'a')",
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'dt'::regclass AND attname = 'c'",
            "ALTER DOMAIN code2 RENAME TO code",
            "SELECT * FROM dt ORDER BY id",
            "SELECT typnotnull, typdefault FROM pg_type WHERE typname = 'price'",
            "DROP DOMAIN IF EXISTS nosuch",
        ],
    )


def test_columns_made_of_a_domain_as_postgres(both) -> None:
    """ALTER COLUMN … TYPE domain and ADD COLUMN of a domain check the values the rows get."""
    ours, pg = both
    same_outcomes(
        ours,
        pg,
        [
            "CREATE TABLE dt2 (a int)",
            "INSERT INTO dt2 VALUES (1), (-2)",
            "ALTER TABLE dt2 ALTER COLUMN a TYPE posint",
            "DELETE FROM dt2 WHERE a < 0",
            "ALTER TABLE dt2 ALTER COLUMN a TYPE posint",
            "ALTER TABLE dt2 ADD COLUMN b posint DEFAULT -1",
            "ALTER TABLE dt2 ADD COLUMN c posint DEFAULT 3",
            "ALTER TABLE dt2 ADD COLUMN p price",
            "ALTER TABLE dt2 ADD COLUMN p price DEFAULT 1.5",
            "SELECT * FROM dt2",
            "DROP TABLE dt2",
        ],
    )


def test_domain_ddl_in_transactions_and_after_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    for sql in ["BEGIN", "CREATE DOMAIN pos AS bigint CHECK (VALUE > 0)", "ROLLBACK"]:
        conn.execute(sql)
    assert outcome(conn, "CREATE TABLE j (v pos)") == ("error", "42704")
    for sql in [
        "CREATE DOMAIN pos AS bigint CHECK (VALUE > 0)",
        "CREATE TABLE j (id int, v pos)",
        "INSERT INTO j VALUES (1, 5)",
        "BEGIN",
        "ALTER DOMAIN pos ADD CONSTRAINT small CHECK (VALUE < 10)",
        "ROLLBACK",
        "INSERT INTO j VALUES (2, 50)",
        "BEGIN",
        "ALTER DOMAIN pos RENAME TO pos2",
        "ROLLBACK",
        "BEGIN",
        "DROP TABLE j",
        "DROP DOMAIN pos",
        "ROLLBACK",
    ]:
        conn.execute(sql)
    conn.close()
    again = changeflow.connect(home, host_seconds=0)
    again.autocommit = True
    assert again.execute("SELECT * FROM j ORDER BY id").fetchall() == [(1, 5), (2, 50)]
    assert outcome(again, "INSERT INTO j VALUES (3, 0)") == ("error", "23514")
    assert outcome(again, "DROP DOMAIN pos") == ("error", "2BP01")
    assert outcome(again, "DROP TYPE pos") == ("error", "2BP01")
    again.execute("DROP TABLE j")
    again.execute("CREATE TYPE mood AS ENUM ('a')")
    assert outcome(again, "DROP DOMAIN pos, mood") == ("error", "42809")
    again.execute("DROP DOMAIN pos")
    assert outcome(again, "CREATE TABLE k (v pos)") == ("error", "42704")
    again.close()
