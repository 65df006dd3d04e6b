"""Everyday PostgreSQL statements (string, date and math functions, CASE, COALESCE, casts,
LIKE/ILIKE and regular expressions, subqueries, CTEs (recursive too), window functions,
GROUP BY ROLLUP/CUBE/GROUPING SETS, DISTINCT ON, set operations, INSERT … ON CONFLICT,
UPDATE … FROM, DELETE … USING, RETURNING, TRUNCATE, ``op ANY|ALL (subquery)``, bitwise
operators) run in order here and on PostgreSQL 15: the same rows or the same SQLSTATE for
each; a selection of the queries also as materialized views, kept right through changes."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE emp (id int PRIMARY KEY, name text NOT NULL, dept text, salary "
    "numeric(10,2), hired date, manager int, email varchar(50))",
    "INSERT INTO emp VALUES (1, 'Alice', 'eng', 120000.00, '2019-03-15', NULL, "
    "'alice@x.com'), (2, 'Bob', 'eng', 95000.50, '2020-07-01', 1, 'BOB@x.com'), (3, 'Carol', "
    "'sales', 70000, '2018-01-20', 1, NULL), (4, 'dave', 'sales', 65000, '2021-11-30', 3, "
    "'dave@y.org'), (5, 'Eve', NULL, 50000, '2022-02-28', 1, 'eve@x.com'), (6, 'Frank "
    "O''Neil', 'ops', 80000, '2017-06-10', NULL, 'frank@z.net')",
    "CREATE TABLE orders (oid int PRIMARY KEY, emp_id int, amount numeric(8,2), placed "
    "timestamp, status text)",
    "INSERT INTO orders VALUES (10, 1, 250.00, '2024-01-05 10:30:00', 'shipped'), (11, 2, "
    "99.99, '2024-01-06 14:00:00', 'pending'), (12, 2, 10.50, '2024-02-10 09:15:00', "
    "'shipped'), (13, 4, 500.00, '2024-02-11 18:45:30', 'cancelled'), (14, NULL, 42.00, "
    "'2024-03-01 00:00:00', 'pending'), (15, 3, 75.25, '2024-03-15 12:00:00', 'shipped')",
]
STATEMENTS = [
    "SELECT transaction_timestamp() = now(), pg_typeof(transaction_timestamp())",
    "SELECT transaction_timestamp(1)",
    "SELECT sha224('abc'::bytea), sha256('abc'::bytea), sha384(''::bytea),"
    " sha512('\\x00ff'::bytea)",
    "SELECT encode(sha256('a'::bytea), 'hex'), sha256(NULL), pg_typeof(sha256('a'))",
    "SELECT sha256('a'::text)",
    "SELECT name FROM emp WHERE salary > ALL (SELECT salary FROM emp WHERE dept = 'sales')"
    " ORDER BY 1",
    "SELECT name, salary >= ANY (SELECT amount * 1000 FROM orders), salary < ALL (SELECT"
    " amount * 1000 FROM orders WHERE emp_id IS NULL), manager <= ALL (SELECT emp_id FROM orders)"
    " FROM emp ORDER BY id",
    "SELECT name FROM emp e WHERE e.salary < ANY (SELECT m.salary FROM emp m"
    " WHERE m.id = e.manager) ORDER BY 1",
    "SELECT id, id > ANY (SELECT emp_id FROM orders GROUP BY emp_id HAVING count(*) > 1),"
    " id <> ALL (SELECT 1 UNION SELECT 2) FROM emp ORDER BY id",
    "SELECT 7 & 3, 7 | 8, 5 # 1, ~1, 1::bigint << 40, 1 << 40, -16 >> 2, 1::int2 << 15,"
    " 1::int2 << 17",
    "SELECT 6::int2 & 3, pg_typeof(6::int2 & 3), pg_typeof(1::int2 << 2), pg_typeof(1 & 2::bigint),"
    " ~0::int2",
    "SELECT 1 << -1, 1::bigint << 65, -1 >> 40, NULL & 1, 5 & NULL, ~NULL::int, '5' & 3",
    "SELECT 2.5 & 1",
    "SELECT 'a'::text & 1",
    "SELECT 1 << 2.5",
    "SELECT upper(name), lower(name), initcap(lower(name)), length(name) FROM emp ORDER BY id",
    "SELECT name, substr(name, 2, 3), left(name, 2), right(name, 2), reverse(name) FROM emp "
    "ORDER BY id",
    "SELECT trim('  hi  '), ltrim('xxhixx', 'x'), rtrim('xxhixx', 'x'), btrim('  a b  ')",
    "SELECT replace(email, '@', ' at '), position('@' IN email), strpos(email, '.') FROM emp "
    "ORDER BY id",
    "SELECT split_part(email, '@', 2), split_part('a,b,c', ',', -1) FROM emp ORDER BY id",
    "SELECT concat(name, '-', dept), concat_ws('/', name, dept, email), name || '/' || dept "
    "FROM emp ORDER BY id",
    "SELECT lpad(id::text, 5, '0'), rpad(name, 8, '.'), repeat('ab', 3) FROM emp ORDER BY id",
    "SELECT format('%s earns %s', name, salary), format('%I.%L', 'my tab', 'it''s') FROM emp "
    "ORDER BY id",
    "SELECT name FROM emp WHERE name LIKE 'A%' OR name ILIKE 'd%' ORDER BY 1",
    "SELECT name FROM emp WHERE email NOT LIKE '%@x.com' ORDER BY 1",
    "SELECT name FROM emp WHERE name ~ '^[A-C]' ORDER BY 1",
    "SELECT name FROM emp WHERE name ~* 'e$' ORDER BY 1",
    "SELECT regexp_replace(email, '@.*$', ''), regexp_match(email, '([a-z]+)@([a-z]+)')::text "
    "FROM emp ORDER BY id",
    "SELECT md5(name), char_length(name), octet_length(name) FROM emp ORDER BY id",
    "SELECT to_char(hired, 'YYYY-MM-DD'), to_char(hired, 'Mon DD, YYYY'), to_char(salary, "
    "'FM999,999.00') FROM emp ORDER BY id",
    "SELECT extract(year FROM hired), extract(month FROM hired), date_part('dow', hired) FROM "
    "emp ORDER BY id",
    "SELECT date_trunc('month', placed), date_trunc('year', placed)::date FROM orders ORDER BY oid",
    "SELECT hired + 30, hired - interval '1 month', hired + interval '1 year 2 days' FROM emp "
    "ORDER BY id",
    "SELECT age(date '2024-01-01', hired)::text FROM emp ORDER BY id",
    "SELECT '2024-03-01'::date - '2024-01-01'::date, make_date(2024, 2, 29), date "
    "'2024-02-29' + 365",
    "SELECT placed::date, placed::time, extract(epoch FROM placed) FROM orders ORDER BY oid",
    "SELECT to_timestamp(0) AT TIME ZONE 'UTC', to_date('05 Mar 2024', 'DD Mon YYYY'), "
    "timezone('UTC', to_timestamp(0))",
    "SELECT abs(-7), ceil(4.2), floor(-4.2), round(2.5), round(3.14159, 2), trunc(9.99), sign(-3)",
    "SELECT @ -5, @ 2.5, @(-3), @ -2 + 1, @ -2 * 3, 1 + @ -2, @ -2::int, @ -2 - 3",
    "SELECT current_schemas(false)::text, current_schemas(true)::text, current_schema()",
    "SELECT to_regclass('emp'), to_regclass('nope'), to_regtype('integer'), to_regtype('nope')",
    "SELECT name FROM emp WHERE @ (salary - 80000) < 16000 ORDER BY name",
    "SELECT 7 / 2, 7 % 3, 7.0 / 2, 2 ^ 10, sqrt(16), power(2, 0.5), cbrt(27), mod(-7, 3)",
    "SELECT greatest(1, 5, 3), least('b', 'a', 'c'), greatest(NULL, 2)",
    "SELECT round(salary / 12, 2), salary * 1.1, salary::int FROM emp ORDER BY id",
    "SELECT ln(10), log(100), log(2, 8), exp(1), pi()",
    "SELECT random() < 1, floor(random() * 0)",
    # a WITH query of random values (or nextval) read twice is run once, as PostgreSQL runs it
    "WITH r AS (SELECT random() AS x FROM generate_series(1, 5)) SELECT count(*) FROM"
    " (SELECT x FROM r UNION SELECT x FROM r) s",
    "WITH r AS (SELECT random() AS x) SELECT a.x = b.x FROM r a, r b",
    "SELECT count(*) FROM (WITH u AS (SELECT gen_random_uuid() AS u) SELECT u FROM u"
    " UNION SELECT u FROM u) s",
    "SELECT 10::numeric / 3, 1 / 3.0, 2::float8 / 3, 1e3::int, '12.5'::numeric::int",
    "SELECT name, CASE WHEN salary > 100000 THEN 'high' WHEN salary > 70000 THEN 'mid' ELSE "
    "'low' END FROM emp ORDER BY id",
    "SELECT name, CASE dept WHEN 'eng' THEN 1 WHEN 'sales' THEN 2 END FROM emp ORDER BY id",
    "SELECT COALESCE(dept, 'none'), COALESCE(email, dept, 'n/a'), NULLIF(dept, 'eng') FROM "
    "emp ORDER BY id",
    "SELECT '42'::int + 1, CAST('3.5' AS numeric), 1::text || 'x', '2024-01-01'::timestamp, "
    "'t'::boolean",
    "SELECT CAST(salary AS int), salary::text, hired::text, id::float8 / 4 FROM emp ORDER BY id",
    "SELECT name FROM emp WHERE salary BETWEEN 60000 AND 90000 ORDER BY 1",
    "SELECT name FROM emp WHERE dept IN ('eng', 'ops') AND manager IS NOT NULL ORDER BY 1",
    "SELECT name FROM emp WHERE dept IS DISTINCT FROM 'eng' ORDER BY 1",
    "SELECT name FROM emp e WHERE salary > (SELECT avg(salary) FROM emp) ORDER BY 1",
    "SELECT name FROM emp e WHERE EXISTS (SELECT 1 FROM orders o WHERE o.emp_id = e.id) ORDER BY 1",
    "SELECT name FROM emp WHERE id NOT IN (SELECT emp_id FROM orders WHERE emp_id IS NOT "
    "NULL) ORDER BY 1",
    "SELECT name, (SELECT count(*) FROM orders o WHERE o.emp_id = e.id) AS n FROM emp e"
    " ORDER BY id",
    "SELECT d, total FROM (SELECT dept AS d, sum(salary) AS total FROM emp GROUP BY dept) s "
    "WHERE total > 100000 ORDER BY 1",
    "SELECT e.name, m.name AS manager FROM emp e LEFT JOIN emp m ON e.manager = m.id ORDER BY e.id",
    "SELECT e.name, o.amount FROM emp e JOIN orders o ON o.emp_id = e.id WHERE o.status = "
    "'shipped' ORDER BY o.oid",
    "SELECT e.name, count(o.oid), coalesce(sum(o.amount), 0) FROM emp e LEFT JOIN orders o ON "
    "o.emp_id = e.id GROUP BY e.name ORDER BY 1",
    "SELECT o.oid, e.name FROM orders o FULL OUTER JOIN emp e ON e.id = o.emp_id ORDER BY 1, 2",
    "SELECT a.name, b.name FROM emp a CROSS JOIN emp b WHERE a.id < b.id AND a.dept = b.dept "
    "ORDER BY 1, 2",
    "SELECT dept, count(*), avg(salary), min(hired), max(hired) FROM emp GROUP BY dept ORDER "
    "BY dept NULLS FIRST",
    "SELECT dept, count(*) FROM emp GROUP BY dept HAVING count(*) > 1 ORDER BY 1",
    "SELECT dept, string_agg(name, ', ' ORDER BY name), array_agg(id ORDER BY id)::text FROM "
    "emp GROUP BY dept ORDER BY 1",
    "SELECT count(DISTINCT dept), count(dept), count(*) FROM emp",
    "SELECT sum(amount) FILTER (WHERE status = 'shipped'), count(*) FILTER (WHERE status = "
    "'pending') FROM orders",
    "SELECT bool_and(salary > 40000), bool_or(dept = 'ops'), every(id > 0) FROM emp",
    "WITH big AS (SELECT * FROM emp WHERE salary > 70000) SELECT name FROM big ORDER BY 1",
    "WITH d AS (SELECT dept, avg(salary) a FROM emp GROUP BY dept) SELECT e.name, "
    "round(e.salary - d.a, 2) FROM emp e JOIN d ON d.dept = e.dept ORDER BY e.id",
    "WITH RECURSIVE chain(id, name, depth) AS (SELECT id, name, 0 FROM emp WHERE manager IS "
    "NULL UNION ALL SELECT e.id, e.name, c.depth + 1 FROM emp e JOIN chain c ON e.manager = "
    "c.id) SELECT * FROM chain ORDER BY depth, id",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT "
    "sum(i) FROM n",
    "SELECT name, dept, salary, rank() OVER (PARTITION BY dept ORDER BY salary DESC) FROM emp "
    "ORDER BY id",
    "SELECT name, row_number() OVER (ORDER BY hired), dense_rank() OVER (ORDER BY dept) FROM "
    "emp ORDER BY id",
    "SELECT name, sum(salary) OVER (PARTITION BY dept), avg(salary) OVER () FROM emp ORDER BY id",
    "SELECT oid, amount, sum(amount) OVER (ORDER BY placed ROWS BETWEEN UNBOUNDED PRECEDING "
    "AND CURRENT ROW) FROM orders ORDER BY oid",
    "SELECT oid, lag(amount) OVER (ORDER BY oid), lead(amount, 1, 0) OVER (ORDER BY oid) FROM "
    "orders ORDER BY oid",
    "SELECT name, first_value(name) OVER (PARTITION BY dept ORDER BY salary DESC), ntile(2) "
    "OVER (ORDER BY id) FROM emp ORDER BY id",
    "SELECT name, percent_rank() OVER (ORDER BY salary), cume_dist() OVER (ORDER BY salary) "
    "FROM emp ORDER BY id",
    "SELECT dept, sum(salary) FROM emp GROUP BY ROLLUP (dept) ORDER BY 2",
    "SELECT dept, manager, count(*) FROM emp GROUP BY CUBE (dept, manager) ORDER BY 1, 2, 3",
    "SELECT dept, manager, count(*), grouping(dept) FROM emp GROUP BY GROUPING SETS ((dept), "
    "(manager), ()) ORDER BY 1, 2, 3",
    "SELECT DISTINCT ON (dept) dept, name, salary FROM emp ORDER BY dept, salary DESC",
    "SELECT DISTINCT dept FROM emp ORDER BY 1",
    "SELECT name FROM emp ORDER BY salary DESC LIMIT 3 OFFSET 1",
    "SELECT name FROM emp ORDER BY salary DESC FETCH FIRST 2 ROWS ONLY",
    "SELECT dept FROM emp UNION SELECT status FROM orders ORDER BY 1",
    "SELECT emp_id FROM orders INTERSECT SELECT id FROM emp ORDER BY 1",
    "SELECT id FROM emp EXCEPT SELECT emp_id FROM orders ORDER BY 1",
    "SELECT * FROM generate_series(1, 3) AS g(n)",
    "SELECT unnest(ARRAY['a', 'b']), generate_series(1, 2)",
    "SELECT now() IS NOT NULL, current_date IS NOT NULL, current_timestamp > '2020-01-01'",
    "SELECT current_user IS NOT NULL, version() LIKE 'PostgreSQL%'",
    "SELECT count(*) FROM emp WHERE hired >= CURRENT_DATE - INTERVAL '100 years'",
    "INSERT INTO emp (id, name, dept, salary) VALUES (7, 'Gina', 'ops', 55000) RETURNING id, "
    "name, salary",
    "INSERT INTO emp (id, name) VALUES (7, 'Dup')",
    "INSERT INTO emp (id, name) VALUES (7, 'Dup') ON CONFLICT (id) DO NOTHING",
    "INSERT INTO emp (id, name, salary) VALUES (7, 'Gina2', 56000) ON CONFLICT (id) DO UPDATE "
    "SET name = EXCLUDED.name, salary = emp.salary + EXCLUDED.salary RETURNING *",
    "INSERT INTO emp (id, name) VALUES (8, 'Hal'), (9, 'Ivy') RETURNING id",
    "UPDATE emp SET salary = salary * 1.05 WHERE dept = 'eng' RETURNING name, salary",
    "UPDATE orders o SET status = 'vip' FROM emp e WHERE e.id = o.emp_id AND e.salary > "
    "100000 RETURNING o.oid, o.status",
    "UPDATE emp SET dept = 'ops', manager = 6 WHERE id IN (8, 9)",
    "DELETE FROM orders WHERE status = 'cancelled' RETURNING oid, amount",
    "DELETE FROM orders o USING emp e WHERE o.emp_id = e.id AND e.name = 'Bob' RETURNING o.oid",
    "SELECT * FROM emp ORDER BY id",
    "SELECT * FROM orders ORDER BY oid",
    "INSERT INTO orders SELECT 20 + id, id, salary / 1000, timestamp '2024-05-01', 'bulk' "
    "FROM emp WHERE id < 3",
    "SELECT count(*), sum(amount) FROM orders",
    "SELECT name, salary FROM emp WHERE salary IS NULL ORDER BY id",
    "TRUNCATE orders",
    "SELECT count(*) FROM orders",
    "SELECT 'a' || NULL, NULL::int + 1, NULL = NULL, NULL IS NULL",
    "SELECT 1 = 1 AND NULL, 1 = 2 AND NULL, NOT (1 > 2), true OR NULL",
    "SELECT array_length(ARRAY[1,2,3], 1), (ARRAY[1,2] || 3)::text, 2 = ANY(ARRAY[1,2]), "
    "cardinality(ARRAY[3, 4])",
    "SELECT length('héllo'), upper('straße'), 'abc' < 'abd', 'B' < 'a', upper('é'), "
    "lower('ÉÀ'), initcap('élan ßa'), lower('İx')",
    "SELECT to_char(1234567.891, '9,999,999.99'), to_char(0.5, '0.00'), to_char(-12, '999')",
    "SELECT 5 BETWEEN 1 AND 10, 'x' IN ('a', 'x'), 3 NOT BETWEEN 4 AND 5",
    "SELECT name, salary FROM emp ORDER BY salary DESC NULLS LAST, name LIMIT 4",
    "SELECT string_agg(DISTINCT dept, ',') FROM emp",
    "SELECT justify_days(interval '40 days')::text, (interval '1 day' * 3)::text, (interval "
    "'2 hours' / 2)::text",
    "SELECT (DATE '2024-01-31' + INTERVAL '1 month')::date, date_trunc('week', DATE '2024-03-14')",
    "SELECT 'abc'::varchar(2), 'abcdef'::varchar(3)::text, CAST('abcd' AS character "
    "varying(2)), 12345::varchar(2), 'ab'::char(1)",
    "SELECT substring('hello world' FROM 7), substring('hello' FROM 2 FOR 3), overlay('hello' "
    "PLACING 'XX' FROM 2)",
    "SELECT translate('hello', 'el', 'ip'), ascii('A'), chr(66), to_hex(255)",
    "SELECT count(*) OVER (), name FROM emp ORDER BY id LIMIT 2",
    "SELECT overlay('hello' PLACING 'XX' FROM 2), overlay('hello' PLACING 'XX' FROM 2 FOR 3)",
    "SELECT overlay('hello' PLACING '' FROM 1 FOR 10), overlay('hi' PLACING 'abc' FROM 5), "
    "overlay(NULL PLACING 'X' FROM 1)",
    "SELECT overlay('hello' PLACING 'X' FROM 0)",
    "CREATE TABLE vc (id int, v varchar(3))",
    "INSERT INTO vc VALUES (1, 'abcd')",
    "INSERT INTO vc VALUES (2, 'abc   ')",
    "INSERT INTO vc VALUES (3, 'ab'), (4, 'x    '), (5, NULL)",
    "INSERT INTO vc VALUES (6, 'ab  c')",
    "UPDATE vc SET v = 'zz      ' WHERE id = 3",
    "UPDATE vc SET v = 'zzzz' WHERE id = 3",
    "INSERT INTO vc SELECT 7, 'qq    '",
    "SELECT id, v, length(v) FROM vc ORDER BY id",
]
MAINTAINED = [
    "SELECT name FROM emp e WHERE e.salary >= ALL (SELECT m.salary FROM emp m"
    " WHERE m.dept = e.dept)",
    "SELECT id, upper(name), initcap(lower(name)), split_part(email, '@', 2),"
    " lpad(id::text, 3, '0') FROM emp",
    "SELECT id, CASE WHEN salary > 90000 THEN 'high' ELSE 'low' END, COALESCE(dept, 'none'),"
    " salary::int, extract(year FROM hired) FROM emp",
    "SELECT name FROM emp WHERE name ILIKE '%a%' OR email LIKE '%.org'",
    "SELECT id, @ (salary - 80000) FROM emp WHERE @ (salary - 80000) < 16000",
    "SELECT e.name, m.name FROM emp e LEFT JOIN emp m ON e.manager = m.id",
    "SELECT dept, count(*), sum(salary), min(hired) FROM emp GROUP BY dept HAVING count(*) > 0",
    "SELECT name, rank() OVER (PARTITION BY dept ORDER BY salary DESC) FROM emp",
    "SELECT DISTINCT ON (dept) dept, name FROM emp ORDER BY dept, salary DESC, name",
    "SELECT dept, sum(salary) FROM emp GROUP BY ROLLUP (dept)",
    "SELECT name FROM emp e WHERE EXISTS (SELECT 1 FROM emp r WHERE r.manager = e.id)",
    "WITH d AS (SELECT dept, max(salary) AS top FROM emp GROUP BY dept)"
    " SELECT e.name FROM emp e JOIN d ON d.dept = e.dept AND d.top = e.salary",
]
CHANGES = [
    "INSERT INTO emp VALUES (10, 'zoe', 'eng', 130000, '2023-05-05', 2, 'zoe@q.org')",
    "UPDATE emp SET salary = salary + 1000, dept = 'ops' WHERE id = 3",
    "DELETE FROM emp WHERE id = 1",
    "INSERT INTO emp (id, name, salary) VALUES (10, 'Zed', 1) ON CONFLICT (id) DO UPDATE"
    " SET name = EXCLUDED.name",
]


def rows(conn, sql: str) -> tuple:  # noqa: ANN001
    """``sql``'s outcome; rows sorted where the statement leaves their order open (no ORDER BY
    of its own, past the last parenthesis; RETURNING)."""
    ordered = re.search(r"ORDER BY [^)]*$", sql) is not None and "RETURNING" not in sql
    return outcome(conn, sql, sort=not ordered)


def unordered_rows(conn, sql: str) -> tuple:  # noqa: ANN001
    return outcome(conn, sql, sort=True)


def test_everyday_statements_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "emp", *SETUP) as (ours, pg):
        try:
            for sql in STATEMENTS:
                assert rows(ours, sql) == rows(pg, sql), sql
        finally:
            pg.execute("DROP TABLE IF EXISTS orders, vc")


def test_everyday_queries_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "emp", *SETUP[:2]) as (ours, pg):
        maintained_as_postgres(ours, pg, MAINTAINED, CHANGES, rows=unordered_rows)


@pytest.mark.spark
def test_case_mapping_in_a_cluster_tier_view(tmp_path: Path, spark) -> None:
    """upper, lower and initcap in Spark map character by character, as in the process and
    in PostgreSQL (``ß`` stays, ``İ`` lowers to ``i``)."""
    import changeflow

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        conn.execute("CREATE TABLE cm (id int, s text)")
        conn.execute("INSERT INTO cm VALUES (1, 'straße'), (2, 'İx ÉÀ'), (3, 'élan ßa'), (4, NULL)")
        select = "SELECT id, upper(s) AS u, lower(s) AS l, initcap(s) AS i FROM cm"
        conn.execute(f"CREATE MATERIALIZED VIEW cmv WITH (CLUSTER = true) AS {select}")
        expected = [
            (1, "STRAßE", "straße", "Straße"),
            (2, "İX ÉÀ", "ix éà", "İx Éà"),
            (3, "ÉLAN ßA", "élan ßa", "Élan ßa"),
            (4, None, None, None),
        ]
        assert conn.execute(f"{select} ORDER BY id").fetchall() == expected
        assert conn.execute("SELECT * FROM cmv ORDER BY id").fetchall() == expected
    finally:
        conn.close()
