"""CREATE TABLE … (LIKE source) compared with PostgreSQL 15: the copied columns' names, types,
NOT NULL and (INCLUDING DEFAULTS) defaults; the forms not taken here (INHERITS, PARTITION OF,
INCLUDING INDEXES …) refused with 0A000 instead of read as a table without columns."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SOURCE = (
    "CREATE TABLE like_src (id int PRIMARY KEY, name varchar(5) NOT NULL DEFAULT 'x',"
    " price numeric(10,2) DEFAULT 1.5, note text CHECK (note <> ''), UNIQUE (price))"
)
COLUMNS = (
    "SELECT column_name, data_type, character_maximum_length, numeric_precision,"
    " numeric_scale, is_nullable, column_default FROM information_schema.columns"
    " WHERE table_name = '{}' ORDER BY ordinal_position"
)


def test_like_copies_columns_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "like_src", SOURCE) as (ours, pg):
        pg.execute("DROP TABLE IF EXISTS like_plain, like_defaults")
        try:
            same_outcomes(
                ours,
                pg,
                [
                    "CREATE TABLE like_plain (LIKE like_src)",
                    "CREATE TABLE like_defaults (extra int, LIKE like_src INCLUDING DEFAULTS)",
                    COLUMNS.format("like_plain"),
                    COLUMNS.format("like_defaults"),
                    "INSERT INTO like_defaults (id, note) VALUES (1, 'n')",
                    "INSERT INTO like_plain (id, note) VALUES (1, 'n')",  # name is NOT NULL
                    "INSERT INTO like_plain VALUES (1, 'toolong', 2, 'n')",
                    "INSERT INTO like_plain VALUES (1, 'ab', 2.345, '')",  # no CHECK copied
                    "INSERT INTO like_plain VALUES (1, 'cd', 2.345, 'n')",  # no UNIQUE, no key
                    "SELECT * FROM like_defaults",
                    "SELECT * FROM like_plain ORDER BY name",
                ],
            )
            same_errors(ours, pg, ["CREATE TABLE like_none (LIKE no_such_table)"])
        finally:
            pg.execute("DROP TABLE IF EXISTS like_plain, like_defaults")


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE child () INHERITS (like_src)",
        "CREATE TABLE child (extra int) INHERITS (like_src)",
        "CREATE TABLE child PARTITION OF like_src FOR VALUES IN (1)",
        "CREATE TABLE child (LIKE like_src INCLUDING ALL)",
        "CREATE TABLE child (LIKE like_src INCLUDING INDEXES)",
    ],
)
def test_forms_not_taken_are_refused(tmp_path: Path, sql: str) -> None:
    import changeflow

    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        ours.execute(SOURCE)
        with pytest.raises(DatabaseError) as caught:
            ours.execute(sql)
        assert caught.value.sqlstate == "0A000", str(caught.value)
        assert ours.execute("SELECT count(*) FROM pg_class WHERE relname = 'child'").fetchall() == [
            (0,)
        ]
    finally:
        ours.close()
