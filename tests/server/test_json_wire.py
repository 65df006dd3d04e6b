"""to_json's column is json (OID 114) on the wire, as PostgreSQL 15's: psycopg reads the same
values from both, in text and in binary."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.postgres

SQL = (
    "SELECT to_json(ARRAY['a', NULL]) AS j, to_json(1.5) AS n, to_json(true) AS b,"
    " to_json('{\"k\": [1, 2]}'::jsonb) AS o"
)


def test_to_json_on_the_wire_as_postgres(server, postgres_url: str) -> None:
    with server.connect() as ours, psycopg.connect(postgres_url) as pg:
        for binary in (False, True):
            mine = ours.cursor(binary=binary).execute(SQL)
            theirs = pg.cursor(binary=binary).execute(SQL)
            assert [d.type_code for d in mine.description] == [114] * 4
            assert [d.type_code for d in theirs.description] == [114] * 4
            assert mine.fetchall() == theirs.fetchall() == [(["a", None], 1.5, True, {"k": [1, 2]})]
