"""SQL functions through the server, compared with PostgreSQL 15: psql's ``\\df`` lists
them, and a call's column is named as the function."""

from __future__ import annotations

import psycopg
import pytest
from test_psql import _same_psql_output


@pytest.mark.postgres
def test_psql_lists_functions_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        "CREATE FUNCTION pgfn_add(a int, b int DEFAULT 1) RETURNS int LANGUAGE sql IMMUTABLE"
        " AS $$ SELECT a + b $$",
        "CREATE FUNCTION pgfn_hi(text) RETURNS text LANGUAGE sql STRICT RETURN 'hi ' || $1",
    ]
    teardown = ["DROP FUNCTION IF EXISTS pgfn_add", "DROP FUNCTION IF EXISTS pgfn_hi"]
    commands = ["\\df", "\\df pgfn_a*"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)


@pytest.mark.postgres
def test_a_call_as_postgres(server, postgres_url: str) -> None:
    name = "pgfn_twice"
    create = f"CREATE FUNCTION {name}(x numeric) RETURNS numeric LANGUAGE sql AS $$ SELECT x * 2 $$"
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(create)
        try:
            shown = []
            for conn in (ours, pg):
                cur = conn.execute(f"SELECT {name}(1.5), {name}(%s) AS named", (2,))
                shown.append(([(d.name, d.type_code) for d in cur.description], cur.fetchall()))
            assert shown[0] == shown[1]
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP FUNCTION {name}")
