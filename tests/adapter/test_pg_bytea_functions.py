"""The functions and operators of bytea compared with PostgreSQL 15: md5, substr/substring,
position, the trims, octet_length/bit_length, ``||``, ``[NOT] LIKE``, get_byte/set_byte/
get_bit/set_bit and convert_from/convert_to, with their errors, ad hoc and as materialized
views kept through inserts, updates and deletes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE bf (id int NOT NULL, b bytea, t text)"
INSERT = (
    "INSERT INTO bf VALUES (1, '\\x0102ff', 'abc'), (2, '\\x', 'é'), (3, NULL, NULL),"
    " (4, '\\x00deadbeef00', 'x y')"
)
AD_HOC = [
    "SELECT md5('abc'::bytea), md5(''::bytea), md5(NULL::bytea), octet_length('\\x0102'::bytea),"
    " bit_length('\\x0102'::bytea), length('\\x0102'::bytea)",
    "SELECT substring('\\x01020304'::bytea from 2 for 2), substring('\\x01020304'::bytea from 3),"
    " substr('\\x0102'::bytea, -1, 2), substr('\\x0102'::bytea, 5), substr('\\x0102'::bytea, 0)",
    "SELECT position('\\x02'::bytea in '\\x010203'::bytea),"
    " position('\\x05'::bytea in '\\x01'::bytea)",
    "SELECT btrim('\\x0001020000'::bytea, '\\x00'::bytea),"
    " ltrim('\\x000100'::bytea, '\\x00'::bytea), rtrim('\\x000100'::bytea, '\\x00'::bytea),"
    " trim('\\x00'::bytea from '\\x000100'::bytea)",
    "SELECT '\\x01'::bytea || '\\x02'::bytea, '\\x01' || '\\x02'::bytea, '\\x01'::bytea || NULL,"
    " pg_typeof('\\x01'::bytea || '\\x02'), pg_typeof(substr('\\x0102'::bytea, 1))",
    "SELECT get_byte('\\x0102'::bytea, 1), set_byte('\\x0102'::bytea, 0, 255),"
    " set_byte('\\x0102'::bytea, 1, 300), get_bit('\\x0102'::bytea, 9),"
    " get_bit('\\x0102'::bytea, 0), set_bit('\\x0102'::bytea, 15, 1),"
    " set_bit('\\x03'::bytea, 0, 0)",
    "SELECT convert_from('\\xe9'::bytea, 'LATIN1'), convert_to('é', 'latin1'),"
    " convert_from('abc'::bytea, 'UTF8'), convert_to('ab', 'utf-8'), convert_to('Ж', 'WIN1251')",
    "SELECT 'abc'::bytea LIKE '_b_'::bytea, 'abc'::bytea LIKE 'a%', 'abc'::bytea NOT LIKE '%c',"
    " '\\x00ff'::bytea LIKE '\\x0025'::bytea, 'a%c'::bytea LIKE 'a\\\\%c',"
    " 'abc'::bytea LIKE 'a\\\\%c', NULL::bytea LIKE 'a%'",
]
ERRORS = [
    "SELECT get_byte('\\x0102'::bytea, 2)",
    "SELECT get_byte('\\x0102'::bytea, -1)",
    "SELECT get_bit('\\x0102'::bytea, 16)",
    "SELECT set_bit('\\x0102'::bytea, 3, 2)",
    "SELECT substr('\\x0102'::bytea, 1, -1)",
    "SELECT convert_from('\\xff'::bytea, 'UTF8')",
    "SELECT convert_to('€', 'LATIN1')",
    "SELECT convert_from('abc'::bytea, 'foo')",
    "SELECT convert_to('abc', 'foo')",
    "SELECT get_byte('abc', 0, 1)",
    "SELECT strpos('abc'::bytea, 'b'::bytea)",
    "SELECT 'abc'::bytea ILIKE 'a%'",
    "SELECT 'abc'::bytea LIKE 'a%'::text",
    "SELECT 'abc'::text LIKE 'a%'::bytea",
]
QUERIES = [
    "SELECT id, md5(b), substr(b, 2, 2), b || '\\xff'::bytea, octet_length(b),"
    " position('\\xad'::bytea in b), btrim(b, '\\x00'::bytea), b LIKE '%\\255%'::bytea,"
    " b NOT LIKE '\\000%'::bytea FROM bf",
    "SELECT id, convert_to(t, 'UTF8'), convert_from(convert_to(t, 'LATIN1'), 'LATIN1'),"
    " get_bit(b || '\\x01'::bytea, 0), set_byte(b || '\\x01'::bytea, 0, id) FROM bf",
]
CHANGES = [
    "INSERT INTO bf VALUES (5, '\\xad', 'ad')",
    "UPDATE bf SET b = '\\x00ad00', t = 'ü' WHERE id = 1",
    "DELETE FROM bf WHERE id = 4",
]


def test_bytea_functions_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "bf", CREATE, INSERT) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        same_errors(ours, pg, ERRORS)
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
