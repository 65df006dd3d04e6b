"""Domains through the server, compared with PostgreSQL 15: COPY and prepared INSERTs
(psycopg's executemany) into a column of a domain are refused as PostgreSQL refuses them,
writing nothing, the column's RowDescription names the base type, and psql's ``\\dD`` and
``\\d`` show the domain."""

from __future__ import annotations

import psycopg
import pytest
from test_checks_wire import _refusal, _rows
from test_psql import _same_psql_output

DOMAIN = "CREATE DOMAIN {d} AS integer CONSTRAINT {d}_pos CHECK (VALUE > 0) NOT NULL"


@pytest.mark.postgres
def test_copy_and_prepared_inserts_as_postgres(server, postgres_url: str, table_name: str) -> None:
    t, d = table_name, f"{table_name}_d"

    def copy(rows: list[tuple]):
        def run(conn: psycopg.Connection) -> None:
            with conn.cursor() as cur, cur.copy(f"COPY {t} FROM STDIN") as c:
                for row in rows:
                    c.write_row(row)

        return run

    def many(rows: list[tuple]):
        def run(conn: psycopg.Connection) -> None:
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", rows)

        return run

    writes = [
        copy([(1, 5), (2, 7)]),
        copy([(3, 5), (4, 0)]),
        copy([(5, None)]),
        many([(6, 7), (7, 8)]),
        many([(8, 7), (9, -9)]),
        many([(10, None)]),
    ]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(DOMAIN.format(d=d))
            conn.execute(f"CREATE TABLE {t} (id int, x {d})")
        try:
            for write in writes:
                assert _refusal(ours, write) == _refusal(pg, write)
                assert _rows(ours, t) == _rows(pg, t)
            described = [
                [(c.name, c.type_code) for c in conn.execute(f"SELECT * FROM {t}").description]
                for conn in (ours, pg)
            ]
            assert described[0] == described[1] == [("id", 23), ("x", 23)]
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {t}")
                conn.execute(f"DROP DOMAIN {d}")


@pytest.mark.postgres
def test_psql_describes_domains_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        DOMAIN.format(d="pgdom"),
        "CREATE DOMAIN pgdom_code varchar(8) DEFAULT 'A' CHECK (VALUE <> '')",
        "CREATE TABLE pgdomt (id pgdom, c pgdom_code, n numeric(6,2))",
    ]
    teardown = [
        "DROP TABLE IF EXISTS pgdomt",
        "DROP DOMAIN IF EXISTS pgdom",
        "DROP DOMAIN IF EXISTS pgdom_code",
    ]
    commands = ["\\dD", "\\dD pgdom*", "\\d pgdomt"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)
