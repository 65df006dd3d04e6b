"""Arrays of several dimensions on the wire, as PostgreSQL 15 sends and takes them: text
(``{{1,2},{3,4}}``) and binary results, and binary parameters, read by psycopg."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.postgres

SQL = (
    "SELECT ARRAY[[1,2],[3,4]] AS a, '{{a,NULL},{\"c d\",e}}'::text[] AS t,"
    " ARRAY[[[1.5]],[[2]]] AS n, ARRAY[ARRAY[]::int[]] AS e"
)


def test_several_dimensions_on_the_wire_as_postgres(server, postgres_url: str) -> None:
    expected = [([[1, 2], [3, 4]], [["a", None], ["c d", "e"]], [[[1.5]], [[2]]], [])]
    with server.connect() as ours, psycopg.connect(postgres_url) as pg:
        for binary in (False, True):
            mine = ours.cursor(binary=binary).execute(SQL)
            theirs = pg.cursor(binary=binary).execute(SQL)
            assert [d.type_code for d in mine.description] == [1007, 1009, 1231, 1007]
            assert [d.type_code for d in theirs.description] == [1007, 1009, 1231, 1007]
            rows = mine.fetchall()
            assert rows == theirs.fetchall()
            assert [[float(x[0][0]) for x in rows[0][2]]] == [[1.5, 2.0]]
            assert rows[0][:2] == expected[0][:2] and rows[0][3] == []
        for conn in (ours, pg):
            got = conn.execute(
                "SELECT %b::int[], %s::int[], array_dims(%b::int[])",
                [[[1, 2], [3, 4]], [[5], [6]], [[1, 2, 3]]],
            ).fetchall()
            assert got == [([[1, 2], [3, 4]], [[5], [6]], "[1:1][1:3]")]
