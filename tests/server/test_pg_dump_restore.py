"""A PostgreSQL 15 database dumped with pg_dump and restored into ``changeflow serve`` with
psql, stopping at the first error, statement by statement and in one transaction (``psql
-1``: COPY's rows, then the keys and foreign keys checked against them before COMMIT):
serial and bigserial columns (CREATE SEQUENCE … AS, NO MINVALUE, CACHE; ALTER SEQUENCE …
OWNED BY; SET DEFAULT nextval), OWNER TO, an empty search_path with every name qualified,
COPY FROM stdin, constraints added after the data, indexes with an operator class and a sort
order, a view and a comment. The restored tables, sequences and keys then behave as
PostgreSQL's."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from serve_clients import PSQL, psql

pytestmark = pytest.mark.postgres

SCHEMA = """
CREATE TABLE {p}authors (id serial PRIMARY KEY, name varchar(100) NOT NULL UNIQUE, born date,
  bio text DEFAULT '');
CREATE TABLE {p}books (id bigserial PRIMARY KEY,
  author_id int NOT NULL REFERENCES {p}authors(id) ON DELETE CASCADE,
  title text NOT NULL, price numeric(8,2) CHECK (price >= 0), tags text[], published timestamptz,
  meta jsonb);
CREATE INDEX {p}books_author ON {p}books (author_id DESC NULLS LAST);
CREATE INDEX {p}authors_name_like ON {p}authors (name varchar_pattern_ops);
CREATE TABLE {p}reviews (book_id bigint REFERENCES {p}books, stars smallint NOT NULL, body text,
  PRIMARY KEY (book_id, stars));
CREATE VIEW {p}cheap AS SELECT id, title, price FROM {p}books WHERE price < 10;
CREATE SEQUENCE {p}tickets START 100;
INSERT INTO {p}authors (name, born) VALUES ('Ann', '1970-01-02'), ('Bob', NULL), ('O''Hara', NULL);
INSERT INTO {p}books (author_id, title, price, tags, published, meta) VALUES
  (1, 'Alpha', 9.99, '{{a,b}}', '2020-01-01 10:00+00', '{{"pages": 100}}'),
  (1, 'Beta', 25.00, NULL, '2021-06-01 12:30+02', NULL),
  (2, E'Gamma\\tTab', 0, '{{}}', NULL, '{{"x": [1, 2]}}');
INSERT INTO {p}reviews VALUES (1, 5, 'great'), (1, 3, NULL), (3, 1, E'two\\nlines');
COMMENT ON TABLE {p}books IS 'all the books';
"""
CHECKS = [
    "SELECT * FROM {p}authors ORDER BY id",
    "SELECT * FROM {p}books ORDER BY id",
    "SELECT * FROM {p}reviews ORDER BY book_id, stars",
    "SELECT * FROM {p}cheap ORDER BY id",
    "SELECT nextval('{p}authors_id_seq'), nextval('{p}tickets')",
    "INSERT INTO {p}books (author_id, title) VALUES (3, 'Delta') RETURNING id",
    "INSERT INTO {p}authors (id, name) VALUES (1, 'Dup')",
    "INSERT INTO {p}books (author_id, title, price) VALUES (1, 'Neg', -1)",
    "INSERT INTO {p}reviews VALUES (99, 1, 'none')",
    "DELETE FROM {p}authors WHERE id = 2",
    "SELECT count(*) FROM {p}books",
    "SELECT obj_description('{p}books'::regclass)",
    "SELECT indexname FROM pg_indexes WHERE tablename LIKE '{p}%' ORDER BY 1",
]


@pytest.mark.parametrize("single", [False, True], ids=["statements", "one transaction"])
def test_pg_dump_restored_by_psql(server, postgres_url: str, table_name: str, single: bool) -> None:
    bindir = Path(subprocess.check_output(["pg_config", "--bindir"], text=True).strip())
    database = f"restore_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    source = postgres_url.rsplit("/", 1)[0] + f"/{database}"
    try:
        with psycopg.connect(source, autocommit=True) as pg:
            pg.execute(SCHEMA.format(p=table_name))
        dump = subprocess.run(
            [str(bindir / "pg_dump"), source], capture_output=True, text=True, timeout=60
        )
        assert dump.returncode == 0, dump.stderr
        flags = ["-v", "ON_ERROR_STOP=1", *(["--single-transaction"] if single else [])]
        restored = psql(server, *flags, user="postgres", input=dump.stdout)
        assert restored.returncode == 0, restored.stderr
        for check in CHECKS:
            sql = check.format(p=table_name)
            theirs = subprocess.run(
                [PSQL, "-X", "-w", "-A", "-v", "VERBOSITY=sqlstate", source, "-c", sql],
                capture_output=True,
                text=True,
                timeout=60,
            )
            ours = psql(server, "-A", "-v", "VERBOSITY=sqlstate", "-c", sql)
            assert (ours.stdout, ours.stderr) == (theirs.stdout, theirs.stderr), sql
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {database}")


ACCESS = """
CREATE SCHEMA {s} AUTHORIZATION {r};
COMMENT ON SCHEMA {s} IS 'app schema';
CREATE TABLE {s}.items (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE {s}.secret (v text);
INSERT INTO {s}.items (name) VALUES ('a'), ('b');
CREATE TYPE {s}.mood AS ENUM ('ok', 'bad');
COMMENT ON TYPE {s}.mood IS 'moods';
CREATE FUNCTION {s}.twice(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x * 2';
COMMENT ON FUNCTION {s}.twice(int) IS 'doubles';
REVOKE EXECUTE ON FUNCTION {s}.twice(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {s}.twice(int) TO {r};
GRANT SELECT ON {s}.items TO {r};
GRANT USAGE ON SEQUENCE {s}.items_id_seq TO {r};
ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT SELECT ON TABLES TO {r};
"""


@pytest.mark.parametrize("single", [False, True], ids=["statements", "one transaction"])
def test_a_dump_with_owners_grants_and_comments(server, postgres_url: str, single: bool) -> None:
    """Owners, GRANTs, REVOKEs, default privileges and comments of a dump restore as they
    were: psql shows them as PostgreSQL does, and the role may do what it was granted."""
    bindir = Path(subprocess.check_output(["pg_config", "--bindir"], text=True).strip())
    tag = uuid.uuid4().hex[:8]
    database, role, schema = f"restore_{tag}", f"dump_role_{tag}", f"dump_{tag}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
        admin.execute(f"CREATE ROLE {role} LOGIN")
    source = postgres_url.rsplit("/", 1)[0] + f"/{database}"
    try:
        with psycopg.connect(source, autocommit=True) as pg:
            pg.execute(ACCESS.format(s=schema, r=role))
        dump = subprocess.run(
            [str(bindir / "pg_dump"), source], capture_output=True, text=True, timeout=60
        )
        assert dump.returncode == 0, dump.stderr
        assert psql(server, "-c", f"CREATE ROLE {role} LOGIN", user="postgres").returncode == 0
        flags = ["-v", "ON_ERROR_STOP=1", *(["--single-transaction"] if single else [])]
        restored = psql(server, *flags, user="postgres", input=dump.stdout)
        assert restored.returncode == 0, restored.stderr
        for command in (f"\\dp {schema}.*", "\\ddp", f"\\dn+ {schema}", f"\\dT+ {schema}.*"):
            theirs = subprocess.run(
                [PSQL, "-X", "-w", "-A", source, "-c", command],
                capture_output=True,
                text=True,
                timeout=60,
            )
            ours = psql(server, "-A", "-c", command, user="postgres")
            assert ours.stdout == theirs.stdout, command
        as_role = [
            f"SELECT name FROM {schema}.items ORDER BY id",
            f"SELECT {schema}.twice(2)",
            f"SELECT nextval('{schema}.items_id_seq')",
            f"SELECT * FROM {schema}.secret",
            f"INSERT INTO {schema}.items (name) VALUES ('c')",
        ]
        for sql in as_role:
            theirs = subprocess.run(
                [
                    PSQL,
                    "-X",
                    "-w",
                    "-A",
                    "-v",
                    "VERBOSITY=sqlstate",
                    make_conninfo(source, user=role),
                ]
                + ["-c", sql],
                capture_output=True,
                text=True,
                timeout=60,
            )
            ours = psql(server, "-A", "-v", "VERBOSITY=sqlstate", "-c", sql, user=role)
            assert (ours.stdout, ours.stderr) == (theirs.stdout, theirs.stderr), sql
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {database}")
            admin.execute(f"DROP ROLE {role}")
        for sql in (f"DROP SCHEMA IF EXISTS {schema} CASCADE", f"DROP OWNED BY {role}"):
            psql(server, "-c", sql, user="postgres")
        psql(server, "-c", f"DROP ROLE IF EXISTS {role}", user="postgres")
