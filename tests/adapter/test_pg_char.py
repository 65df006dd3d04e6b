"""char(n) as PostgreSQL 15's bpchar: values blank-padded to n when stored or cast (``char``
alone is char(1)), too long is 22001 unless the extra is blanks, comparisons, GROUP BY,
DISTINCT and joins ignore trailing blanks, as do ``length()``, ``||`` and ``::text``, while
LIKE, ``octet_length`` and ``concat`` see the padding; the catalogs show ``character(n)``.
Compared with PostgreSQL ad hoc and installed as materialized views kept through changes."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE ch (id int PRIMARY KEY, a char(4), b character(6), c char, v varchar(6))",
    "INSERT INTO ch VALUES (1, 'ab', 'ab', 'x', 'ab'), (2, 'ab  ', 'ab', 'y', 'ab  '),"
    " (3, 'abcd   ', 'abcd', 'z', 'abcd'), (4, NULL, ' a', ' ', NULL), (5, 'Ab', 'ab ', 'x', 'x ')",
]
STATEMENTS = [
    "SELECT * FROM ch ORDER BY id",
    "SELECT 'ab'::char(4), 'ab'::char, 'abc'::char(2), CAST('abcde' AS character(3)),"
    " 'ab'::character(3) || '|', 'ab '::char || '|', 'a'::char(3)::varchar(5) || '|'",
    "SELECT id, a || '|', a::text || '|', length(a), char_length(b), octet_length(a),"
    " octet_length(b), c || b FROM ch ORDER BY id",
    "SELECT id, a = b, a < b, a > b, a = 'ab', a = 'ab  ', a <> 'ab ', a IN ('ab   ', 'x'),"
    " a = 'ab  '::text, a::text = 'ab' FROM ch ORDER BY id",
    "SELECT id, a LIKE 'ab', a LIKE 'ab%', a LIKE 'ab  ', a ILIKE 'AB__', a NOT LIKE '%d',"
    " a SIMILAR TO 'ab', a ~ 'b $', b LIKE '% ' FROM ch ORDER BY id",
    "SELECT id, concat(a, '|'), concat_ws('-', a, c), format('[%s]', b), upper(a) || '|',"
    " replace(a, ' ', '.'), position(' ' in b) FROM ch ORDER BY id",
    "SELECT 'ab'::char(4) || 'x', ('ab'::char(4))::text || '|', length('ab'::char(4)),"
    " octet_length('ab'::char(4)), 'ab'::char(4) = 'ab'::char(6), 'ab'::char(4) LIKE 'ab'",
    "SELECT a, count(*) FROM ch GROUP BY a",
    "SELECT DISTINCT b FROM ch",
    "SELECT count(DISTINCT a), count(DISTINCT b), max(a), min(b) FROM ch",
    "SELECT x.id, y.id FROM ch x JOIN ch y ON x.a = y.b",
    "SELECT id, a::char(2), a::char(6), CASE WHEN id > 2 THEN a ELSE 'zz'::char(4) END,"
    " nullif(a, 'ab') FROM ch ORDER BY id",
    "SELECT a FROM ch UNION SELECT 'ab'::char(4)",
    "SELECT id FROM ch WHERE a = b ORDER BY id",
]
ERRORS = [
    "INSERT INTO ch VALUES (9, 'abcde', 'a', 'a', 'a')",
    "INSERT INTO ch (id, c) VALUES (9, 'xy')",
    "UPDATE ch SET b = 'abcdefg' WHERE id = 1",
]
ALTERS = [
    "ALTER TABLE ch ALTER COLUMN v TYPE char(5)",
    "ALTER TABLE ch ADD COLUMN w char(3)",
    "UPDATE ch SET w = 'z  ' WHERE id = 1",
    "SELECT id, v || '|', v, w, w = 'z' FROM ch ORDER BY id",
    "ALTER TABLE ch ALTER COLUMN v TYPE char(2)",
    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'ch'::regclass"
    " AND attnum > 0 ORDER BY attnum",
]
RETURNING = [
    "INSERT INTO ch VALUES (8, 'q', 'q  ', 'r', 'q') RETURNING *",
    "UPDATE ch SET a = a || 'z' WHERE id = 8 RETURNING a, b || '|', a::char(6), octet_length(b)",
    "DELETE FROM ch WHERE id = 8 RETURNING a, c",
]
MAINTAINED = [
    "SELECT id, a, b, c FROM ch",
    "SELECT a, count(*) AS n FROM ch GROUP BY a",
    "SELECT DISTINCT b FROM ch",
    "SELECT x.id, y.id AS yid, x.a FROM ch x JOIN ch y ON x.a = y.b",
    "SELECT id, a || '|' AS t, length(a) AS l, octet_length(a) AS o, a LIKE 'ab  ' AS lk,"
    " a::text AS s FROM ch",
    "SELECT id, a::char(2) AS c2, b FROM ch WHERE a = 'ab'",
]
CHANGES = [
    "INSERT INTO ch VALUES (6, 'ab', 'ab    ', 'q', 'ab'), (7, 'zz', 'zz', NULL, 'zz')",
    "UPDATE ch SET a = 'zz ' WHERE id = 1",
    "DELETE FROM ch WHERE id = 2",
    "UPDATE ch SET b = 'abcd  ', a = 'ab' WHERE id = 4",
    "DELETE FROM ch WHERE a = 'ab  '",
]
VIEW = "CREATE VIEW chv AS SELECT id, a, a::char(2) AS b, a || 'x' AS c, c AS d FROM ch"
CATALOG = [
    "SELECT table_name, column_name, data_type, character_maximum_length, udt_name"
    " FROM information_schema.columns WHERE table_name IN ('ch', 'chv')"
    " ORDER BY table_name, ordinal_position",
    "SELECT attrelid::regclass::text, attname, atttypid, atttypmod,"
    " format_type(atttypid, atttypmod) FROM pg_attribute"
    " WHERE attrelid IN ('ch'::regclass, 'chv'::regclass) AND attnum > 0 ORDER BY 1, attnum",
]


def rows(conn, sql: str) -> tuple:  # noqa: ANN001
    """``sql``'s outcome, rows sorted where the statement leaves their order open."""
    return outcome(conn, sql, sort=re.search(r"ORDER BY [^)]*$", sql) is None)


def test_char_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ch", *SETUP, VIEW) as (ours, pg):
        try:
            for sql in CATALOG:
                assert rows(ours, sql) == rows(pg, sql), sql
        finally:
            for conn in (ours, pg):
                conn.execute("DROP VIEW chv")
        for sql in STATEMENTS:
            assert rows(ours, sql) == rows(pg, sql), sql
        same_errors(ours, pg, ERRORS)
        for sql in RETURNING + ALTERS:
            assert rows(ours, sql) == rows(pg, sql), sql
        assert rows(ours, "SELECT * FROM ch ORDER BY id") == rows(
            pg, "SELECT * FROM ch ORDER BY id"
        )


def test_char_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ch", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, MAINTAINED, CHANGES)


@pytest.mark.spark
def test_char_maintained_on_the_cluster_tier_as_postgres(
    spark, tmp_path: Path, postgres_url: str
) -> None:
    """The same views kept on the cluster tier (char(n) casts, LIKE and octet_length of the
    padded value computed by Spark) give PostgreSQL's rows through the changes."""
    with beside_postgres(tmp_path / "home", postgres_url, "ch", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, MAINTAINED, CHANGES, options="CLUSTER = true")
        for i in range(len(MAINTAINED)):
            plan = ours.execute(f"EXPLAIN MATERIALIZED VIEW v{i}").fetchall()
            assert plan[0][0].startswith("Tier: cluster"), plan
