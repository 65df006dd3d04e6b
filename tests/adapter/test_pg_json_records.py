"""json_to_record, jsonb_to_record, json_to_recordset and jsonb_to_recordset in FROM with a
column definition list, and json[b]_populate_record[set](NULL::t, …) with a table's columns,
compared with PostgreSQL 15: fields read as their columns' types,
missing ones NULL, json and jsonb columns, the errors for a non-object, a non-array and a
missing definition list, LATERAL over a table's column, and in materialized views kept
through inserts, updates and deletes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE jrec (id int NOT NULL, j jsonb, t jsonb)"
ROW_TYPE = 'CREATE TABLE jrow (v numeric(6,2), n varchar(3), at timestamptz, "A" int)'
INSERT = (
    'INSERT INTO jrec VALUES (1, \'{"n": "x", "v": 3}\', \'[{"a": 1}, {"a": "2"}]\'),'
    ' (2, \'{"n": "y", "w": {"k": [1]}}\', \'[]\'), (3, NULL, NULL)'
)
AD_HOC = [
    'SELECT * FROM json_to_record(\'{"a":1,"b":"foo","c":"bar"}\') AS x(a int, b text, d text)',
    'SELECT a, b, c::text, e, f FROM jsonb_to_record(\'{"a":1,"b":[1,2,3],"c":{"d":"x"},'
    '"e":true}\') AS x(a int, b text, c jsonb, e boolean, f json)',
    'SELECT * FROM json_to_record(\'{"a": {"x":1}, "B": 2}\') AS x(a text, "B" int, b int)',
    'SELECT x.a + 1 FROM jsonb_to_recordset(\'[{"a":"1"},{"a":2}]\') x(a int) WHERE a > 1',
    'SELECT * FROM json_to_recordset(\'[{"a":1,"b":"foo"},{"a":2,"c":"bar"}]\')'
    " AS x(a int, b text, c text) ORDER BY a",
    "SELECT * FROM jsonb_to_record(NULL) x(a int)",
    "SELECT count(*) FROM jsonb_to_recordset(NULL) x(a int)",
    "SELECT id, r.n, r.v FROM jrec, jsonb_to_record(jrec.j) AS r(n text, v numeric) ORDER BY id",
    "SELECT id, r.* FROM jrec CROSS JOIN LATERAL jsonb_to_recordset(jrec.t) AS r(a int)"
    " ORDER BY id, a",
    'SELECT * FROM jsonb_populate_record(NULL::jrow, \'{"v": 1.255, "n": "ab", "A": 3, '
    '"at": "2024-01-02 03:04:05+02", "z": 1}\')',
    'SELECT * FROM json_populate_recordset(NULL::jrow, \'[{"v": 2}, {"n": "q"}]\') ORDER BY v',
    "SELECT id, p.v FROM jrec, jsonb_populate_record(NULL::jrow, jrec.j) p ORDER BY id",
    "SELECT id, p.* FROM jrec CROSS JOIN LATERAL jsonb_populate_recordset(NULL::jrow, jrec.t) p"
    " ORDER BY id",
]
ERRORS = [
    "SELECT * FROM json_to_record('{\"a\":43.2}') AS x(a int)",
    "SELECT * FROM json_to_record('{\"a\":1}')",
    *(
        f"SELECT * FROM {f}('{j}') x(a int)"
        for f in ("json_to_record", "jsonb_to_record", "json_to_recordset", "jsonb_to_recordset")
        for j in ("[1]", "1", "null", '{"a":1}', '"s"', "[null]")
        if not (f.endswith("record") and j in ('{"a":1}', "[null]"))
    ),
    "SELECT * FROM jrec, jsonb_to_recordset(jsonb_build_array(jrec.j)) AS r(v int)",
    'SELECT * FROM jsonb_populate_record(NULL::jrow, \'{"A": "x"}\')',
    "SELECT * FROM jsonb_populate_record(NULL::nope, '{}')",
    "SELECT * FROM jsonb_populate_recordset(NULL::jrow, '{}')",
]
QUERIES = [
    "SELECT id, r.n, r.v FROM jrec, jsonb_to_record(jrec.j) AS r(n text, v numeric)",
    "SELECT id, r.a FROM jrec CROSS JOIN LATERAL jsonb_to_recordset(jrec.t) AS r(a int)",
    "SELECT id, p.v, p.n FROM jrec, jsonb_populate_record(NULL::jrow, jrec.j) p",
]
CHANGES = [
    "INSERT INTO jrec VALUES (4, '{\"v\": 7.5}', '[{\"a\": 9}]')",
    'UPDATE jrec SET j = \'{"n": "z"}\', t = \'[{"b": 1}]\' WHERE id = 1',
    "DELETE FROM jrec WHERE id = 2",
]


def test_json_records_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    setup = ("DROP TABLE IF EXISTS jrow", ROW_TYPE, CREATE, INSERT)
    with beside_postgres(tmp_path / "home", postgres_url, "jrec", *setup) as (ours, pg):
        try:
            same_outcomes(ours, pg, AD_HOC)
            same_errors(ours, pg, ERRORS)
            maintained_as_postgres(ours, pg, QUERIES, CHANGES)
        finally:
            pg.execute("DROP TABLE jrow")
