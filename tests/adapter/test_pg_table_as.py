"""CREATE TABLE … AS and SELECT … INTO as PostgreSQL 15 runs them: the new table's columns
(names, types and modifiers as information_schema shows them), its rows, the command tags,
and the errors of a taken name, too many column names and a repeated one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

TABLES = "tas_src, tas1, tas2, tas3, tas4, tas5, tas6, tas7, tas_t, tas_w, tas_u, tas_j"
SETUP = [
    "CREATE TABLE tas_src (id int PRIMARY KEY, name text, price numeric(10,2), "
    "v varchar(5), at timestamp)",
    "INSERT INTO tas_src VALUES (1, 'a', 1.5, 'x', '2020-01-01'), (2, 'b', 2.25, 'y', NULL), "
    "(3, NULL, NULL, NULL, NULL)",
]
COLUMNS = (
    "SELECT table_name, column_name, data_type, character_maximum_length, numeric_precision, "
    "numeric_scale, is_nullable, column_default FROM information_schema.columns "
    "WHERE table_name LIKE 'tas_%' AND table_name <> 'tas_src' ORDER BY 1, ordinal_position"
)
STATEMENTS = [
    "CREATE TABLE tas1 AS SELECT * FROM tas_src WHERE id < 3",
    "SELECT * FROM tas1 ORDER BY id",
    "CREATE TABLE tas2 (a, b) AS SELECT id, name FROM tas_src",
    "SELECT * FROM tas2 ORDER BY a",
    "CREATE TABLE tas3 AS SELECT id, count(*) AS n, sum(price), 1 + 1, upper(name) "
    "FROM tas_src GROUP BY id, name WITH NO DATA",
    "SELECT * FROM tas3",
    "CREATE TABLE IF NOT EXISTS tas1 AS SELECT 1",
    "CREATE TABLE tas1 AS SELECT 1",
    "SELECT id, name INTO tas4 FROM tas_src WHERE id = 1",
    "SELECT * FROM tas4",
    "SELECT id INTO TABLE tas5 FROM tas_src",
    "SELECT count(*) FROM tas5",
    "CREATE TABLE tas6 AS VALUES (1, 'a'), (2, 'b')",
    "SELECT * FROM tas6 ORDER BY 1",
    "CREATE TABLE tas7 AS (SELECT 'x' AS t, NULL AS n, 1.5 AS d, v FROM tas_src) WITH DATA",
    "INSERT INTO tas1 VALUES (9, 'z', 3, 'q', NULL)",
    "SELECT count(*), sum(price) FROM tas1",
    "CREATE TABLE tas8 (a, b, c) AS SELECT id, name FROM tas_src",
    "CREATE TABLE tas8 AS SELECT id, id FROM tas_src",
    "CREATE TABLE tas8 AS SELECT 1 / 0 AS x",
    "CREATE TABLE tas_t AS TABLE tas_src",
    "SELECT * FROM tas_t ORDER BY id",
    "CREATE TABLE tas_w AS WITH w AS (SELECT id FROM tas_src WHERE id > 1) "
    "SELECT id * 10 AS x FROM w ORDER BY x DESC LIMIT 1",
    "SELECT * FROM tas_w",
    "CREATE TABLE tas_u AS SELECT id, name FROM tas_src UNION ALL SELECT 9, 'z'",
    "SELECT * FROM tas_u ORDER BY id",
    "CREATE TABLE tas_j AS SELECT ARRAY[1, 2] AS a, '{\"a\": 1}'::jsonb AS j, true AS b, "
    "DATE '2024-01-02' AS d, 1.5::float8 AS f, INTERVAL '1 day' AS i",
    "SELECT a::text, j::text, b, d, f, i::text FROM tas_j",
    "SELECT * FROM tas8",
    COLUMNS,
]


def test_create_table_as_and_select_into_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path, postgres_url, TABLES, *SETUP) as (ours, pg):
        for sql in STATEMENTS:
            assert outcome(ours, sql) == outcome(pg, sql), sql
        mine, theirs = ours.cursor(), pg.cursor()
        tagged = [
            "CREATE TABLE tas9 AS SELECT id FROM tas_src",
            "SELECT id INTO tas10 FROM tas1",
            "CREATE TABLE tas11 AS SELECT id FROM tas_src WITH NO DATA",
            "CREATE TABLE IF NOT EXISTS tas11 AS SELECT id FROM tas_src",
        ]
        for sql in tagged:
            for c in (mine, theirs):
                c.execute(sql)
            assert mine.statusmessage == theirs.statusmessage, sql
        for c in (ours, pg):
            c.execute("DROP TABLE tas9, tas10, tas11")


def test_create_table_as_in_a_transaction_block(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path, postgres_url, "tas_src, tas1", *SETUP) as (ours, pg):
        for conn in (ours, pg):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO tas_src VALUES (4, 'd', 4, 'w', NULL)")
            conn.execute("CREATE TABLE tas1 AS SELECT id, price FROM tas_src")
            conn.execute("COMMIT")
        sql = "SELECT * FROM tas1 ORDER BY id"
        assert outcome(ours, sql) == outcome(pg, sql)
        for conn in (ours, pg):  # a rolled back block takes its new table with it
            conn.execute("BEGIN")
            conn.execute("SELECT id INTO tas2 FROM tas_src")
            conn.execute("ROLLBACK")
        assert outcome(ours, "SELECT * FROM tas2") == outcome(pg, "SELECT * FROM tas2")
