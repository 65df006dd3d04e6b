"""Small differences from PostgreSQL 15, each compared with it: ``make_time`` up to 24:00:00,
``(a, b) IN (SELECT * …)`` and a row IN of a UNION or of a FROM-less SELECT (correlated too),
``overlaps(a, b, c, d)`` called as a function; ``to_char`` of a number with the signs ``S``,
``MI``, ``PL``, ``SG``, ``PR``, ``L``, Roman numerals (``RN``), ordinals (``TH``), ``V``
and ``EEEE``;
``width_bucket(x, thresholds)``; ``array_agg`` and ``string_agg`` as window functions;
jsonpath arithmetic and ``.keyvalue()``; pg_index.indcollation of a COLLATE "C" key;
information_schema.check_constraints and the constraint views; a unary ``+`` and ``IS
UNKNOWN`` kept in deparsed text;
the same outcomes ad hoc, and the same rows in views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE sf (id int PRIMARY KEY, a int, b int, h int, s text)",
    "INSERT INTO sf VALUES (1, 1, 2, 24, 'a'), (2, 3, 4, 23, 'b'), (3, NULL, 5, 0, NULL),"
    " (4, 5, NULL, 1, 'c')",
]
TIMES = [  # psycopg reads no 24:00:00 time, so the times are compared as text
    "SELECT make_time(24, 0, 0)::text, make_time(23, 59, 60)::text, make_time(1, 59, 60)::text,"
    " make_time(1, 1, 60.0000001)::text",
    "SELECT make_time(24, 0, 0.5)",
    "SELECT make_time(24, 1, 0)",
    "SELECT make_time(1, 1, 60.5)",
    "SELECT id, make_time(h, 0, 0)::text FROM sf ORDER BY id",
    "SELECT make_time(24, 0, 0) > make_time(23, 59, 59.9), make_time(24, 0, 0) = '24:00'::time,"
    " '24:00'::time::text, '24:00:00'::time = make_time(24, 0, 0)",
    "SELECT '24:00:01'::time",
]
ROW_IN = [
    "SELECT id FROM sf WHERE (a, b) IN (SELECT * FROM sq) ORDER BY id",
    "SELECT id FROM sf WHERE (a, b) NOT IN (SELECT * FROM sq) ORDER BY id",
    "SELECT id, (a, b) IN (SELECT * FROM sq), (b, a) NOT IN (SELECT sq.* FROM sq) FROM sf"
    " ORDER BY id",
    "SELECT id FROM sf WHERE (a, b, h) IN (SELECT * FROM sq) ORDER BY id",
    "SELECT id FROM sf WHERE (a, b) IN (SELECT * FROM sf) ORDER BY id",
    "SELECT id FROM sf WHERE (a, b) IN (SELECT p, q FROM sq UNION SELECT 3, 4) ORDER BY id",
    "SELECT id, (a, b) IN (SELECT p, q FROM sq UNION SELECT 1) FROM sf ORDER BY id",
    "SELECT id FROM sf WHERE (sf.a, sf.b) IN (SELECT p, q FROM sq WHERE p = sf.a UNION SELECT 3,"
    " sf.b) ORDER BY id",
    "SELECT id, (sf.a, sf.b) IN (SELECT p, q FROM sq WHERE q > sf.id UNION ALL SELECT 3, 4)"
    " FROM sf ORDER BY id",
    "SELECT id, (sf.a, sf.b) NOT IN (SELECT p, q FROM sq WHERE q > sf.id UNION ALL SELECT 3, 4"
    " UNION SELECT 5, NULL) FROM sf ORDER BY id",
    "SELECT id, (sf.a, sf.b) IN (SELECT DISTINCT p, q FROM sq WHERE p <> sf.id) FROM sf"
    " ORDER BY id",
    "SELECT id, (a, b) IN (SELECT 1, 2), (a, b) NOT IN (SELECT 5, NULL) FROM sf ORDER BY id",
    "SELECT id, (a, b) NOT IN (SELECT 5, NULL::int), (a, b) IN (SELECT 1, NULL UNION SELECT 3, 4)"
    " FROM sf ORDER BY id",
]
OVERLAPS = [
    "SELECT overlaps(DATE '2001-02-16', DATE '2001-12-21', DATE '2001-10-30', DATE '2002-10-30')",
    "SELECT overlaps(TIMESTAMP '2001-02-16', INTERVAL '100 days', TIMESTAMP '2001-10-30',"
    " TIMESTAMP '2002-10-30'), \"overlaps\"(TIME '01:00', TIME '02:00', TIME '01:30',"
    " TIME '03:00')",
    "SELECT id, overlaps(make_time(a, 0, 0), make_time(b, 0, 0), TIME '02:00', TIME '03:00') AS o"
    " FROM sf ORDER BY id",
    "SELECT (TIME '01:00', TIME '02:00') OVERLAPS (TIME '01:30', INTERVAL '1 hour'), (TIME"
    " '23:00', INTERVAL '2 hours') OVERLAPS (TIME '00:30', TIME '03:00')",
    "SELECT (TIME '01:00', NULL::time) OVERLAPS (TIME '01:30', INTERVAL '1 hour'), (TIME '05:00',"
    " TIME '02:00') OVERLAPS (TIME '01:30', TIME '24:00')",
    "SELECT (TIME '01:00', DATE '2020-01-01') OVERLAPS (TIME '01:30', INTERVAL '1 hour')",
    "SELECT pg_catalog.overlaps(TIME '01:00', TIME '02:00', TIME '01:30', TIME '03:00')",
    "SELECT overlaps(1, 2, 3, 4)",
    "SELECT overlaps(DATE '2001-02-16', DATE '2001-12-21', DATE '2001-10-30')",
    "SELECT overlaps()",
    "SELECT 1 AS overlaps",
]
_TEMPLATES = [
    "S999",
    "999S",
    "999MI",
    "999PL",
    "SG999",
    "MI9999",
    "S9.99",
    "FMS999",
    "FM999MI",
    "FM999PL",
    "L99.99",
    "FML999",
    "RN",
    "rn",
    "FMRN",
    "9th",
    "99TH",
    "FM99th",
    "999D99S",
    "S0000",
    "FM9990.99PL",
    "99G999S",
    "9,999.9",
    "FM9,999.90",
    "99V9",
    "FM9.099",
    '"n="99',
    ".99",
]
_VALUES = ", ".join(
    f"({i}, {v})"
    for i, v in enumerate(
        [
            "12",
            "-12",
            "0",
            "3",
            "22",
            "13",
            "111",
            "-0.5",
            "1994",
            "3999",
            "4000",
            "12.5",
            "1234.567",
            "0.25",
            "-0.4",
        ]
    )
)
TO_CHAR = [
    *(
        f"SELECT to_char(v, '{t}') FROM (VALUES {_VALUES}) AS x(i, v) ORDER BY i"
        for t in _TEMPLATES
    ),
    "SELECT to_char(-0.5::float8, 'FM9999PL'), to_char(2.5::float8, 'RN'), to_char(12::int2, 'rn'),"
    " to_char(-3::int8, '99V99'), to_char(11::int4, 'FM99th')",
    "SELECT to_char(1.5, '9V9.9')",
    "SELECT to_char(v, '999PR'), to_char(v, 'FM999PR'), to_char(v, '9.99EEEE'), to_char(v,"
    " '0.0EEEE'), to_char(v::float8, '9.99EEEE') FROM (VALUES (1, 12), (2, -12), (3, 0),"
    " (4, 9.995), (5, -0.5), (6, 12345678901), (7, 0.000123)) AS x(i, v) ORDER BY i",
    "SELECT to_char(1.5, 'FM9.99EEEE')",
    "SELECT to_char(12345678901, 'RN')",
    # a double shows 15 significant digits at most; a point with no place after it, none
    "SELECT to_char(v::float8, '999999.9999999999999'), to_char(v::float8, 'FM9.9999999999999'),"
    " to_char(v::float8, '999999999999999999.99PR') FROM (VALUES (1, 0.1), (2, -123456.789),"
    " (3, 12345678901234567), (4, 0.000001234), (5, 0)) AS x(i, v) ORDER BY i",
    # a real, 6 (it showed a double's 15: ' 123.456001'); a NULL template is a NULL
    "SELECT to_char(v::real, '999999999.9999999'), to_char(v::real, 'FM9.99999999'),"
    " to_char(v::real, '9.9999999EEEE'), to_char(v::real, NULL) FROM (VALUES (1, 1.5),"
    " (2, 123.456), (3, 1234567.8), (4, -0.000123), (5, 3.14159)) AS x(i, v) ORDER BY i",
    "SELECT to_char(5, 'S9PR')",
    "SELECT to_char(55, '9.'), to_char(55, '9.PR'), to_char(-55, 'FM9.PR')",
    "SELECT to_char(5, '9.'), to_char(-5, '9.PR'), to_char(5, '9.MI'), to_char(5.5, 'FM9.')",
]
BUCKETS_AND_WINDOWS = [
    "SELECT width_bucket(5, ARRAY[1, 3, 6, 9]), width_bucket(0, ARRAY[1, 3]), width_bucket(10,"
    " ARRAY[1.0, 3.5]), width_bucket(3, ARRAY[1, 3, 3, 9]), width_bucket(5.5, ARRAY[1, 3, 6]),"
    " width_bucket(5, ARRAY[1.5::float8, 3])",
    "SELECT id, width_bucket(a, ARRAY[0, 3, 5]), width_bucket(s, ARRAY['a', 'b', 'c']),"
    " width_bucket(make_date(2024, 1, h + 1), ARRAY[DATE '2024-01-02', DATE '2024-01-24'])"
    " FROM sf ORDER BY id",
    "SELECT width_bucket(5, ARRAY[1, NULL])",
    "SELECT width_bucket(5, ARRAY[[1, 2], [3, 4]])",
    "SELECT width_bucket(5, '{}'::int[]), width_bucket(NULL::int, ARRAY[1]), width_bucket(5,"
    " NULL::int[])",
    "SELECT width_bucket(5, ARRAY['a'])",
    "SELECT id, (array_agg(id) OVER (ORDER BY id))::text, string_agg(s, ',') OVER (ORDER BY id)"
    " FROM sf ORDER BY id",
    "SELECT id, (array_agg(b) OVER (PARTITION BY a IS NULL ORDER BY id DESC))::text,"
    " string_agg(s, '-') OVER (PARTITION BY h > 1 ORDER BY id) FROM sf ORDER BY id",
    "SELECT id, (array_agg(s) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING))::text,"
    " string_agg(s, s) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"
    " FROM sf ORDER BY id",
    "SELECT id, (array_agg(b) OVER (ORDER BY id ROWS BETWEEN 3 FOLLOWING AND 4 FOLLOWING))::text"
    " FROM sf ORDER BY id",
    "SELECT id, string_agg(b, ',') OVER () FROM sf",
]
JSONPATH = [
    "SELECT jsonb_path_query_first('{\"a\": 2}', '$.a + 1')::text, jsonb_path_query_first("
    "'{\"x\": 2}', '- $.x')::text, jsonb_path_query_first('{\"a\": 7}', '$.a * 2')::text,"
    " jsonb_path_query_first('{\"a\": 7}', '$.a / 2')::text, jsonb_path_query_first("
    "'{\"a\": 7}', '$.a % 3')::text",
    "SELECT jsonb_path_query('{\"a\":7}', '$.a / 3')::text, jsonb_path_query('{\"a\":7.5}',"
    " '$.a % 2')::text, jsonb_path_query('{\"a\":2}', '$.a * 2.50')::text, jsonb_path_query("
    "'{\"a\":2}', '1 + 2 * $.a')::text, jsonb_path_query('{\"a\":2}', '(1 + 2) * $.a')::text",
    "SELECT jsonb_path_query('{\"a\":[1,2]}', '- $.a')::text",
    "SELECT jsonb_path_query('{\"a\":[1,2]}', '$.a + 1')",
    "SELECT jsonb_path_query('{\"a\":\"x\"}', '$.a + 1')",
    "SELECT jsonb_path_query('{\"a\":1}', '$.a / 0')",
    "SELECT jsonb_path_query('{\"a\":\"x\"}', '-$.a')",
    "SELECT jsonb_path_query('{\"a\":[1,2,3]}', '$.a[*] ? (@ * 2 > 3)')::text",
    "SELECT jsonb_path_query('{\"a\":[1,2,3]}', '$.a[1] + $.a[2]')::text",
    "SELECT jsonb_path_exists('{\"a\":1}', '$.a + 1 == 2'), jsonb_path_query('{\"x\":-2}',"
    " '+ $.x')::text, jsonb_path_query('{}', '1 - -2')::text",
    "SELECT jsonb_path_query('{\"a\":1}', '$.b + 1')",
    "SELECT jsonb_path_query('{\"a\":1}', 'strict $.b + 1')",
    'SELECT jsonb_path_query_array(\'{"a": 1, "bb": {"c": 2}, "b": null}\','
    " '$.keyvalue()')::text",
    "SELECT jsonb_path_query_array('[1]', '$.keyvalue()')::text",
    "SELECT jsonb_path_match('{\"a\": 3}', '$.a * 2 > 5'), jsonb_path_query('{\"a\": 3}',"
    " '$.a ? (@ + $x > 5)', '{\"x\": 3}')::text",
    "SELECT jsonb_path_query('{\"a\": 3}', '($.a + 1) == 4')::text, jsonb_path_query("
    "'{\"a\":[1,2,3]}', '$.a[*] ? ((@ > 1) && (@ < 3))')::text",
    "SELECT jsonb_path_query('{}', '1.5e2 + 0.5')::text, jsonb_path_query('{}', '\"x\"')::text,"
    " jsonb_path_query('{\"a\":1}', '$.a - 1.00')::text",
    "SELECT id, jsonb_path_query_first(jsonb_build_object('a', a, 'b', b), '$.a * 10 + $.b')::text"
    " FROM sf ORDER BY id",
]
QUERIES = [
    "SELECT id, make_time(h, 0, 0)::text AS t FROM sf",
    "SELECT id FROM sf WHERE (a, b) NOT IN (SELECT * FROM sq)",
    "SELECT id, (a, b) IN (SELECT p, q FROM sq UNION SELECT 3, 4) AS i FROM sf",
    "SELECT id, (sf.a, sf.b) IN (SELECT p, q FROM sq WHERE q > sf.id UNION ALL SELECT 3, sf.b)"
    " AS i FROM sf",
    "SELECT id, overlaps(make_time(a, 0, 0), make_time(b, 0, 0), TIME '02:00', TIME '03:00')"
    " AS o FROM sf",
    "SELECT id, to_char(a, 'S999') AS s, to_char(b, 'FMRN') AS r, to_char(h, '99th') AS t,"
    " to_char(a - b, '999MI') AS m FROM sf",
    "SELECT id, width_bucket(a, ARRAY[0, 3, 5]) AS w, array_agg(b) OVER (ORDER BY id) AS a,"
    " string_agg(s, ',') OVER (ORDER BY h, id) AS s FROM sf",
    "SELECT id, jsonb_path_query_first(jsonb_build_object('a', a, 'b', b), '$.a * 10 - $.b')::text"
    " AS j FROM sf WHERE a IS NOT NULL AND b IS NOT NULL",
    "SELECT id, (a > 2) IS UNKNOWN AS u, (a > 2) IS NOT UNKNOWN AS k, +b AS p FROM sf",
]
CHANGES = [
    "INSERT INTO sf VALUES (5, 3, 4, 24, 'd'), (6, 1, 2, 2, NULL)",
    "INSERT INTO sq VALUES (3, 4), (NULL, NULL)",
    "UPDATE sf SET a = 5, b = 6, h = 24 WHERE id = 2",
    "DELETE FROM sq WHERE p = 1",
    "DELETE FROM sf WHERE id = 1",
]


@pytest.fixture
def pair(tmp_path: Path, postgres_url: str):  # type: ignore[no-untyped-def]
    with beside_postgres(tmp_path / "home", postgres_url, "sf", *SETUP) as (ours, pg):
        pg.execute("DROP TABLE IF EXISTS sq")
        for c in (ours, pg):
            c.execute("CREATE TABLE sq (p int, q int)")
            c.execute("INSERT INTO sq VALUES (1, 2), (5, 6), (NULL, 4)")
        try:
            yield ours, pg
        finally:
            pg.execute("DROP TABLE sq")


def test_make_time_as_postgres(pair: tuple) -> None:
    same_outcomes(*pair, TIMES)


def test_row_in_as_postgres(pair: tuple) -> None:
    same_outcomes(*pair, ROW_IN)


def test_overlaps_call_as_postgres(pair: tuple) -> None:
    same_outcomes(*pair, OVERLAPS)


def test_to_char_signs_numerals_and_ordinals_as_postgres(pair: tuple) -> None:
    same_outcomes(*pair, TO_CHAR)


def test_width_bucket_of_an_array_and_collecting_windows_as_postgres(pair: tuple) -> None:
    same_outcomes(*pair, BUCKETS_AND_WINDOWS)


def test_jsonpath_arithmetic_and_keyvalue_as_postgres(pair: tuple) -> None:
    same_outcomes(*pair, JSONPATH)


def test_index_collations_as_postgres(pair: tuple) -> None:
    """pg_index.indcollation names each key's collation: C (950), POSIX (951), the default
    (100) for text, 0 for another type."""
    same_outcomes(
        *pair,
        [
            "ALTER TABLE sf ADD COLUMN v varchar(5)",
            'CREATE INDEX sf_c ON sf (s COLLATE "C", v COLLATE "POSIX", a, v, s COLLATE "default")',
            "SELECT i.indcollation::text, i.indkey::text FROM pg_index i JOIN pg_class c"
            " ON c.oid = i.indexrelid WHERE c.relname = 'sf_c'",
            "SELECT pg_get_indexdef('sf_c'::regclass)",
        ],
    )


_NOT_NULL = "CASE WHEN constraint_name LIKE '%\\_not\\_null' THEN 'n' ELSE constraint_name END AS n"
CONSTRAINT_VIEWS = [
    "CREATE TABLE cc2 (k int NOT NULL REFERENCES sf (id), w numeric CHECK (w > 1 OR -w > 1),"
    " c text CONSTRAINT cc CHECK (c <> '' AND k < 10) UNIQUE)",
    f"SELECT constraint_schema, {_NOT_NULL}, check_clause FROM information_schema.check_constraints"
    " WHERE constraint_schema = 'public' ORDER BY check_clause",
    "SELECT constraint_name = (SELECT n.oid || '_' || c.oid || '_1_not_null' FROM pg_class c"
    " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'cc2')"
    " FROM information_schema.check_constraints WHERE check_clause = 'k IS NOT NULL'",
    f"SELECT constraint_schema, {_NOT_NULL}, table_schema, table_name, constraint_type,"
    " is_deferrable, initially_deferred, enforced, nulls_distinct FROM"
    " information_schema.table_constraints WHERE table_schema = 'public'"
    " ORDER BY table_name, constraint_type, n",
    "SELECT constraint_schema, constraint_name, table_schema, table_name, column_name,"
    " ordinal_position, position_in_unique_constraint FROM information_schema.key_column_usage"
    " WHERE table_schema = 'public' ORDER BY table_name, constraint_name, ordinal_position",
    "SELECT constraint_schema, constraint_name, unique_constraint_schema, unique_constraint_name,"
    " match_option, update_rule, delete_rule FROM information_schema.referential_constraints"
    " WHERE constraint_schema = 'public' ORDER BY constraint_name",
    "SELECT table_schema, table_name, column_name, constraint_schema, constraint_name FROM"
    " information_schema.constraint_column_usage WHERE table_schema = 'public'"
    " ORDER BY table_name, column_name, constraint_name",
]


def test_constraint_views_as_postgres(pair: tuple) -> None:
    """information_schema's check_constraints (NOT NULL columns too, as PostgreSQL 15 lists
    them), table_constraints (with nulls_distinct), key_column_usage, referential_constraints
    and constraint_column_usage."""
    ours, pg = pair
    pg.execute("DROP TABLE IF EXISTS cc2")
    try:
        same_outcomes(ours, pg, CONSTRAINT_VIEWS)
    finally:
        pg.execute("DROP TABLE IF EXISTS cc2")


DEPARSED = [
    "CREATE TABLE cc3 (id int PRIMARY KEY, w numeric CHECK (w > 1 OR +w > 1), b bool CHECK"
    " (b IS NOT UNKNOWN), c bool CHECK (c IS UNKNOWN OR NOT c), d int DEFAULT +1, e numeric"
    " DEFAULT -(+2), f int DEFAULT -1)",
    "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'cc3'::regclass"
    " ORDER BY adnum",
    "SELECT check_clause FROM information_schema.check_constraints WHERE constraint_name LIKE"
    " 'cc3_%_check' ORDER BY 1",
    "SELECT pg_get_constraintdef(oid), pg_get_constraintdef(oid, true) FROM pg_constraint"
    " WHERE conname LIKE 'cc3_%_check' ORDER BY 1",
    "INSERT INTO cc3 VALUES (1, 2, NULL, NULL), (2, 3, false, false)",
    "INSERT INTO cc3 VALUES (3, 2, true, true)",
    "SELECT id, b IS UNKNOWN, b IS NOT UNKNOWN, NOT (b IS UNKNOWN), NULL IS UNKNOWN, +w, - + w,"
    " + - w, +(w + 1), +1 FROM cc3 ORDER BY id",
    "SELECT w IS UNKNOWN FROM cc3",
]


def test_unary_plus_and_is_unknown_as_postgres(pair: tuple) -> None:
    """A unary + and IS [NOT] UNKNOWN: shown as written in a CHECK's or DEFAULT's text, an
    operator's ``?column?``, and IS UNKNOWN of a boolean alone."""
    ours, pg = pair
    pg.execute("DROP TABLE IF EXISTS cc3")
    try:
        same_outcomes(ours, pg, DEPARSED)
    finally:
        pg.execute("DROP TABLE IF EXISTS cc3")


def test_maintained_as_postgres(pair: tuple) -> None:
    maintained_as_postgres(*pair, QUERIES, CHANGES)
