"""Array containment and overlap (``@>``, ``<@``, ``&&``) and slices (``a[lo:hi]``, ``a[:hi]``,
``a[lo:]``) compared with PostgreSQL 15: NULL elements match nothing, NULL arrays and bounds
give NULL, subscripts from 1, out of range is ``{}``; ad hoc, over stored array columns, and
in materialized views kept through inserts, updates and deletes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE arrs (id int PRIMARY KEY, a int[], b int[], t text[])",
    "INSERT INTO arrs VALUES (1, ARRAY[1,2,3], ARRAY[2,3], ARRAY['x','y']),"
    " (2, ARRAY[1,NULL,4], ARRAY[NULL]::int[], ARRAY['y',NULL]), (3, NULL, ARRAY[5], NULL),"
    " (4, '{}', '{}', '{}'), (5, ARRAY[7,7,8], ARRAY[8,7], ARRAY['z'])",
]
STATEMENTS = [
    "SELECT id, a @> b, b <@ a, a && b, a @> '{1}', '{4,1}' <@ a, a && ARRAY[4,9],"
    " t @> ARRAY['y'], t && '{z,q}', b @> '{}' FROM arrs",
    "SELECT id, a[1:2], a[:2], a[2:], a[2:2], a[3:1], a[5:9], a[0:1], a[-1:1], a[:],"
    " t[2:], a[NULL:2], a[1:id] FROM arrs",
    "SELECT ARRAY[[1,2],[3,4]] @> ARRAY[4], ARRAY[[1,2],[3,4]] && ARRAY[[9,3]],"
    " ('{{1,2},{3,4}}'::int[])[2:2], ('{{1,2},{3,4}}'::int[])[1:], ARRAY[1,2] @> NULL,"
    " ARRAY[NULL::int] @> ARRAY[NULL::int], ARRAY[1.5, 2] @> ARRAY[2.0]",
    "SELECT id FROM arrs WHERE a @> ARRAY[1] ORDER BY id",
    "SELECT id, cardinality(a[2:]), array_length(b[:1], 1) FROM arrs",
]
ERRORS = [
    "SELECT ARRAY[1] @> ARRAY[1::bigint]",
    "SELECT t && a FROM arrs",
    "SELECT id[1:2] FROM arrs",
]
MAINTAINED = [
    "SELECT id, a @> b AS c, b <@ a AS d, a && b AS o, t && '{y}' AS y FROM arrs",
    "SELECT id, a[2:] AS tail, a[:1] AS head, t[1:1] AS first FROM arrs",
    "SELECT id FROM arrs WHERE a && ARRAY[1, 8]",
]
CHANGES = [
    "INSERT INTO arrs VALUES (6, ARRAY[8], ARRAY[8,8], ARRAY['y'])",
    "UPDATE arrs SET a = ARRAY[2,3,1], t = ARRAY[NULL, 'y'] WHERE id = 3",
    "UPDATE arrs SET b = NULL WHERE id = 1",
    "DELETE FROM arrs WHERE id = 5",
]


def _lists(value: Any) -> Any:
    return [_lists(v) for v in value] if isinstance(value, tuple | list) else value


def unordered(conn: Any, sql: str) -> list:
    """``sql``'s rows sorted, arrays of any dimensions as lists (as psycopg gives them)."""
    return sorted((tuple(_lists(v) for v in r) for r in conn.execute(sql).fetchall()), key=str)


def test_array_sets_and_slices_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "arrs", *SETUP) as (ours, pg):
        for sql in STATEMENTS:
            assert unordered(ours, sql) == unordered(pg, sql), sql
        same_errors(ours, pg, ERRORS)
        maintained_as_postgres(ours, pg, MAINTAINED, CHANGES, rows=unordered)
