"""Enum types (``CREATE TYPE … AS ENUM``) and arrays of them: values checked against the
labels, compared and sorted by the labels' order (ORDER BY, comparisons, min/max,
greatest/least, window and aggregate ORDER BY, set operations), labels added before or after
others, and the type's DDL in transactions and across a restart. Here and on PostgreSQL 15,
ad hoc and in views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import (  # noqa: E402
    beside_postgres,
    maintained_as_postgres,
    outcome,
    same_errors,
    same_outcomes,
)

import changeflow  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "DROP TYPE IF EXISTS feeling",
    "CREATE TYPE feeling AS ENUM ('sad', 'ok', 'happy')",
    "CREATE TABLE en (id int PRIMARY KEY, f feeling, g feeling NOT NULL DEFAULT 'ok', s text)",
    "INSERT INTO en VALUES (1, 'happy', 'sad', 'ok'), (2, 'sad', 'ok', 'x'),"
    " (3, 'ok', 'happy', 'sad'), (4, NULL, 'ok', NULL)",
    "INSERT INTO en (id, f) VALUES (5, 'ok')",
]
AD_HOC = [
    "SELECT * FROM en ORDER BY f, id",
    "SELECT * FROM en ORDER BY f DESC NULLS LAST, id",
    "SELECT id FROM en WHERE f > 'sad' ORDER BY id",
    "SELECT id FROM en WHERE f BETWEEN 'ok' AND 'happy' ORDER BY id",
    "SELECT id FROM en WHERE f IN ('ok', 'sad') ORDER BY id",
    "SELECT id FROM en WHERE f < g ORDER BY id",
    "SELECT min(f), max(f), min(g), max(g), count(DISTINCT f) FROM en",
    "SELECT f, count(*) FROM en GROUP BY f ORDER BY f",
    "SELECT DISTINCT f FROM en ORDER BY f",
    "SELECT DISTINCT ON (f) f, id FROM en ORDER BY f DESC, id",
    "SELECT id, greatest(f, g), least(f, g) FROM en ORDER BY id",
    "SELECT id, rank() OVER (ORDER BY f), max(f) OVER (ORDER BY id) FROM en ORDER BY id",
    "SELECT string_agg(id::text, ',' ORDER BY f DESC, id) FROM en",
    "SELECT f FROM en UNION SELECT g FROM en ORDER BY 1",
    "SELECT f FROM en UNION ALL SELECT 'ok' ORDER BY 1 LIMIT 3",
    "SELECT id, COALESCE(f, 'ok'), CASE WHEN id > 2 THEN f ELSE 'sad' END FROM en ORDER BY id",
    "SELECT a.id, b.id FROM en a JOIN en b ON a.f = b.g ORDER BY 1, 2",
    "SELECT f::text, upper(f::text), 'ok'::feeling, 'happy'::feeling > 'sad'::feeling"
    " FROM en ORDER BY f::text",
    "SELECT id, s::feeling FROM en WHERE id IN (1, 3)",
    "SELECT enum_first(NULL::feeling), enum_last('ok'::feeling)",
    "SELECT id, f || 'x', 'x' || g FROM en ORDER BY id",
    "SELECT id FROM en WHERE f = ANY(ARRAY['ok', 'sad']::feeling[]) ORDER BY id",
    "SELECT id FROM en WHERE g <> ALL('{ok}'::feeling[]) ORDER BY id",
    "SELECT array_agg(f ORDER BY f, id)::text, (ARRAY['ok', 'sad']::feeling[])[2] FROM en",
]
ERRORS = [
    "INSERT INTO en VALUES (9, 'glad')",
    "UPDATE en SET f = 'Happy' WHERE id = 1",
    "SELECT id FROM en WHERE f = 'meh'",
    "SELECT id FROM en WHERE f = s",
    "SELECT id, s::feeling FROM en",
    "SELECT length(f) FROM en",
    "SELECT ARRAY['ok', 'glad']::feeling[]",
    "CREATE TYPE feeling AS ENUM ('a')",
    "DROP TYPE feeling",
    "DROP TYPE nosuch",
    "ALTER TYPE feeling ADD VALUE 'ok'",
    "ALTER TYPE feeling ADD VALUE 'meh' BEFORE 'nosuch'",
    "ALTER TYPE nosuch ADD VALUE 'a'",
]
QUERIES = [
    "SELECT f, count(*) AS n, min(id) AS first FROM en WHERE f >= 'ok' GROUP BY f",
    "SELECT max(f) AS top, min(g) AS bottom FROM en",
    "SELECT id, f FROM en ORDER BY f DESC, id LIMIT 2",
    "SELECT array_agg(g ORDER BY g, id)::text AS gs FROM en",
]
CHANGES = [
    "INSERT INTO en VALUES (6, 'happy', 'happy', NULL), (7, 'sad', 'sad', NULL)",
    "UPDATE en SET f = 'sad' WHERE id = 1",
    "DELETE FROM en WHERE f = 'happy'",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    import psycopg

    with beside_postgres(tmp_path / "home", postgres_url, "en", *SETUP) as (ours, pg):
        yield ours, pg
    with psycopg.connect(postgres_url, autocommit=True) as pg:  # (the shared server's)
        pg.execute("DROP TYPE IF EXISTS feeling")


def test_enums_as_postgres(both) -> None:
    ours, pg = both
    same_outcomes(ours, pg, AD_HOC)
    same_errors(ours, pg, ERRORS)


def test_enums_maintained_as_postgres(both) -> None:
    ours, pg = both
    maintained_as_postgres(ours, pg, QUERIES, CHANGES)


def test_labels_added_sort_in_their_place(both) -> None:
    ours, pg = both
    same_outcomes(
        ours,
        pg,
        [
            "ALTER TYPE feeling ADD VALUE 'meh' BEFORE 'ok'",
            "ALTER TYPE feeling ADD VALUE 'ecstatic' AFTER 'happy'",
            "ALTER TYPE feeling ADD VALUE 'numb'",
            "ALTER TYPE feeling ADD VALUE IF NOT EXISTS 'meh'",
            "INSERT INTO en (id, f) VALUES (10, 'meh'), (11, 'ecstatic'), (12, 'numb')",
            "SELECT id, f FROM en ORDER BY f, id",
            "SELECT max(f), min(f) FROM en WHERE f > 'ok'",
        ],
    )


def test_a_label_is_not_added_under_a_view_that_orders_it(both) -> None:
    ours, _ = both
    ours.execute("CREATE MATERIALIZED VIEW top AS SELECT max(f) AS m FROM en")
    with pytest.raises(changeflow.NotSupportedError, match="drop the view"):
        ours.execute("ALTER TYPE feeling ADD VALUE 'meh'")
    ours.execute("DROP MATERIALIZED VIEW top")
    ours.execute("ALTER TYPE feeling ADD VALUE 'meh'")


def test_enum_ddl_in_transactions_and_after_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    for sql in [
        "BEGIN",
        "CREATE TYPE st AS ENUM ('new', 'done')",
        "CREATE TABLE j (id int, s st)",
        "INSERT INTO j VALUES (1, 'done')",
        "ROLLBACK",
    ]:
        conn.execute(sql)
    assert outcome(conn, "SELECT 'new'::st") == ("error", "42704")
    for sql in [
        "BEGIN",
        "CREATE TYPE st AS ENUM ('new', 'done')",
        "CREATE TABLE j (id int, s st)",
        "INSERT INTO j VALUES (1, 'done'), (2, 'new')",
        "COMMIT",
        "CREATE MATERIALIZED VIEW firsts AS SELECT id, s FROM j WHERE s < 'done'",
        "BEGIN",
        "DROP TABLE j CASCADE",
        "DROP TYPE st",
        "ROLLBACK",
    ]:
        conn.execute(sql)
    conn.close()
    again = changeflow.connect(home, host_seconds=0)
    again.autocommit = True
    assert again.execute("SELECT * FROM j ORDER BY s DESC").fetchall() == [(1, "done"), (2, "new")]
    again.execute("INSERT INTO j VALUES (3, 'new')")
    assert again.execute("SELECT * FROM firsts ORDER BY id").fetchall() == [(2, "new"), (3, "new")]
    assert outcome(again, "INSERT INTO j VALUES (4, 'late')") == ("error", "22P02")
    again.execute("""CREATE TYPE "Odd Case" AS ENUM ('y', 'x')""")  # a name that keeps its case
    again.execute("""CREATE TABLE oc (v "Odd Case")""")
    again.execute("INSERT INTO oc VALUES ('x'), ('y')")
    assert again.execute("SELECT v FROM oc ORDER BY v").fetchall() == [("y",), ("x",)]
    again.close()


def test_a_schema_whose_type_a_column_elsewhere_uses_is_not_dropped(tmp_path: Path) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    for sql in [
        "CREATE SCHEMA s",
        "CREATE TYPE s.e AS ENUM ('a', 'b')",
        "CREATE TABLE s.inside (v s.e)",
        "CREATE TABLE outside (id int, v s.e)",
        "INSERT INTO outside VALUES (1, 'b'), (2, 'a')",
    ]:
        conn.execute(sql)
    with pytest.raises(changeflow.NotSupportedError, match="column v of table outside"):
        conn.execute("DROP SCHEMA s CASCADE")
    assert conn.execute("SELECT id FROM outside ORDER BY v").fetchall() == [(2,), (1,)]
    conn.execute("DROP TABLE outside")
    conn.execute("DROP SCHEMA s CASCADE")
    assert outcome(conn, "SELECT 'a'::s.e") == ("error", "42704")
    conn.close()


def test_composite_types_as_row_types_of_populate_record(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    setup = ["DROP TYPE IF EXISTS jrow", "CREATE TYPE jrow AS (a text, b int, c timestamp)"]
    statements = [
        """SELECT * FROM json_populate_record(NULL::jrow, '{"a": "x", "z": 4.5}') q""",
        """SELECT * FROM jsonb_populate_record(NULL::jrow, '{"b": 3, "c": "2012-01-20 10:42"}')""",
        "SELECT * FROM jsonb_populate_recordset(NULL::jrow, "
        """'[{"a": "x"}, {"b": 3, "c": "2012-01-20 10:42:53"}]') q ORDER BY b NULLS FIRST""",
        "CREATE TYPE jrow AS (z int)",
        "DROP TYPE jrow",
        """SELECT * FROM json_populate_record(NULL::jrow, '{"a": "x"}') q""",
    ]
    try:
        with beside_postgres(tmp_path / "home", postgres_url, "en", *SETUP, *setup) as (ours, pg):
            same_outcomes(ours, pg, statements[:3])
            for refused in ["CREATE TABLE jt (r jrow)", "SELECT NULL::jrow"]:
                assert outcome(ours, refused) == ("error", "0A000")
            same_outcomes(ours, pg, statements[3:])
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as pg:  # (the shared server's)
            pg.execute("DROP TYPE IF EXISTS jrow")
            pg.execute("DROP TYPE IF EXISTS feeling")
