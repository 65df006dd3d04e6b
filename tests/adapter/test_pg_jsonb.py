"""jsonb compared with PostgreSQL 15: normalized text (keys by length then bytes, the last of
duplicate keys, PostgreSQL's spacing), the operators and functions, casts, equality and order;
as a column, ad hoc and in views kept through inserts, updates, deletes and a restart; errors."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import changeflow
from changeflow.compute.jsonb import Jsonb

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, materialize, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

DOCUMENTS = [
    '{"b": 1, "aa": 2, "a": 3}',
    '{"a": 1, "a": 2}',
    '[1, 2.50, -0.0, 1e3, 1E-2, "x", true, false, null]',
    '{"k": {"z": [], "y": {}}, "é": "\\u00e9\\n\\t\\"q\\""}',
    '  "text"  ',
    "12345678901234567890.123",
    "null",
    "[[1, [2]], {}]",
]
EXPRESSIONS = [
    """'{"a": {"b": [5, 6]}}'::jsonb -> 'a'""",
    """'{"a": {"b": [5, 6]}}'::jsonb -> 'a' -> 'b' -> 1""",
    """'{"a": "s"}'::jsonb ->> 'a'""",
    """'[1, "two", null]'::jsonb ->> 1""",
    """'[1, "two", null]'::jsonb ->> 2""",
    """'[1, 2, 3]'::jsonb -> -1""",
    """'[1, 2, 3]'::jsonb -> 7""",
    """'{"a": 1}'::jsonb -> 'b'""",
    """'{"a": {"b": [5, 6]}}'::jsonb #> '{a,b,0}'""",
    """'{"a": {"b": [5, 6]}}'::jsonb #>> '{a,b}'""",
    """'{"a": {"b": [5, 6]}}'::jsonb #>> '{a,x}'""",
    """'{"a": 1, "b": 2}'::jsonb ? 'b'""",
    """'["a", "b"]'::jsonb ? 'a'""",
    """'{"a": 1, "b": [1, 2, {"c": 3}]}'::jsonb @> '{"b": [{"c": 3}]}'""",
    """'{"a": 1}'::jsonb @> '{"a": 2}'""",
    """'[1, 2, [3]]'::jsonb @> '[[3], 1]'""",
    """'[1, 2]'::jsonb @> '1'""",
    """'{"a": 1}'::jsonb <@ '{"a": 1, "b": null}'""",
    """'{"a": 1, "b": 2}'::jsonb ?| ARRAY['x', 'b'], '{"a": 1}'::jsonb ?& ARRAY['a', 'b']""",
    """'["a", "b"]'::jsonb ?& ARRAY['a', 'b'], '{"a": 1}'::jsonb ?| ARRAY[]::text[]""",
    """'{"a": 1, "b": 2}'::jsonb || '{"b": 3, "c": 4}'""",
    """'[1, 2]'::jsonb || '[3]', '[1]'::jsonb || '2', '1'::jsonb || '{"a": 1}'""",
    """'{"a": 1, "b": 2}'::jsonb - 'a', '["a", "b", "a", 1]'::jsonb - 'a'""",
    """'[1, 2, 3]'::jsonb - 1, '[1, 2, 3]'::jsonb - -1, '[1, 2, 3]'::jsonb - 5""",
    "jsonb_typeof('{}'), jsonb_typeof('[]'), jsonb_typeof('1.5'), jsonb_typeof('null')",
    "jsonb_typeof('\"s\"'), jsonb_typeof('false')",
    "jsonb_array_length('[1, [2, 3], null]')",
    "jsonb_build_object('b', 1, 'a', 'x', 'b', 2.50, 'c', NULL, 'd', true)",
    "jsonb_build_object()",
    "jsonb_build_array(1, 'a', NULL, 2.5::float8, date '2024-01-02', "
    "timestamp '2024-01-02 03:04:05.5', jsonb_build_array())",
    "to_jsonb('a\"b'::text), to_jsonb(3), to_jsonb(false), to_jsonb(ARRAY[1, 2])",
    """('12.50'::jsonb)::numeric, ('7'::jsonb)::int, ('true'::jsonb)::boolean""",
    """'{"a":1}'::jsonb = '{ "a" : 1 }'::jsonb, '1.0'::jsonb = '1'::jsonb""",
    """'{"a": 1}'::jsonb < '[1]'::jsonb, '[1, 2]'::jsonb > '[3]'::jsonb""",
    """'"b"'::jsonb > '"a"'::jsonb, 'null'::jsonb < '1'::jsonb""",
]


def plain(v: Any) -> Any:
    """A value as psycopg gives PostgreSQL's (jsonb parsed, numbers as floats, arrays as
    lists)."""
    if isinstance(v, tuple):  # an array (psycopg: a list)
        return [plain(x) for x in v]
    if isinstance(v, Jsonb):
        v = json.loads(v.text)
    if isinstance(v, Decimal | float) and not isinstance(v, bool):
        return float(v)
    return v


def rows(cursor: Any) -> list[tuple]:
    return sorted((tuple(plain(v) for v in r) for r in cursor.fetchall()), key=repr)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    create = "CREATE TABLE jt (id int NOT NULL, g int, j jsonb)"
    insert = (
        'INSERT INTO jt VALUES (1, 1, \'{"a": 1, "tags": ["x", "y"]}\'), '
        '(2, 1, \'[1, 2, 3]\'), (3, 2, NULL), (4, 2, \'{"a": "one", "n": {"m": 5}}\'), '
        '(5, NULL, \'"s"\'), (6, 1, \'{"a": 1, "tags": ["y", "x"]}\')'
    )
    with beside_postgres(tmp_path / "home", postgres_url, "jt", create, insert) as pair:
        yield pair


def test_jsonb_text_operators_and_functions_as_postgres(both) -> None:
    ours, pg = both
    for doc in DOCUMENTS:
        literal = "'" + doc.replace("'", "''") + "'"
        sql = f"SELECT {literal}::jsonb, ({literal}::jsonb)::text"
        assert rows(ours.execute(sql)) == rows(pg.execute(sql)), sql
    for e in EXPRESSIONS:
        sql = f"SELECT {e}"
        assert rows(ours.execute(sql)) == rows(pg.execute(sql)), sql


QUERIES = [
    "SELECT id, j, j::text, j -> 'a', j ->> 'a', j -> 0, j #>> '{n,m}' FROM jt",
    "SELECT id FROM jt WHERE j @> '{\"a\": 1}' OR j ? 's' OR j -> 'n' ->> 'm' = '5'",
    "SELECT j, count(*) FROM jt GROUP BY j",
    "SELECT id, jsonb_typeof(j), jsonb_build_object('id', id, 'j', j), to_jsonb(g) FROM jt",
    "SELECT a.id, b.id FROM jt a JOIN jt b ON a.j = b.j",
    "SELECT g, jsonb_agg(id ORDER BY id DESC), jsonb_agg(j ->> 'a' ORDER BY id) FROM jt "
    "WHERE g IS NOT NULL GROUP BY g",
    "SELECT g, jsonb_agg(j ORDER BY j), array_agg(j ORDER BY j) FROM jt WHERE g IS NOT NULL "
    "GROUP BY g",
    "SELECT jt.id, e.value FROM jt, jsonb_array_elements(jt.j -> 'tags') e",
    "SELECT id, t.v, t.n FROM jt, jsonb_array_elements_text(j -> 'tags') WITH ORDINALITY "
    "AS t(v, n)",
    "SELECT jt.id, e.key, e.value FROM jt, jsonb_each(CASE WHEN jsonb_typeof(j) = 'object' "
    "THEN j END) e",
    "SELECT id, k, v, o FROM jt CROSS JOIN LATERAL jsonb_each_text(CASE WHEN jsonb_typeof(j) = "
    "'object' THEN j END) WITH ORDINALITY AS q(k, v, o)",
    "SELECT id, x.value FROM jt CROSS JOIN LATERAL jsonb_array_elements(j -> 'tags') x",
    "SELECT g, jsonb_object_agg(id, j), jsonb_object_agg(id * 1.5, j -> 'a') FROM jt GROUP BY g",
    "SELECT jsonb_object_agg(id || coalesce(j ->> 'a', 'none'), id) FROM jt WHERE id <> 6",
    "SELECT g, jsonb_object_agg(id, j) FILTER (WHERE id > 2) FROM jt GROUP BY g",
    "SELECT jt.id, e.key, e.value FROM jt, jsonb_each(jt.j) e WHERE jsonb_typeof(jt.j) = 'object'",
    "SELECT id, e.value FROM jt CROSS JOIN LATERAL jsonb_array_elements(j) e"
    " WHERE jsonb_typeof(j) = 'array' AND e.value IS NOT NULL",
    "SELECT id, j['a'], j['tags'][g], j['n']['m'], j[-1], j['1'], j[id::text], j[NULL] FROM jt",
    "SELECT id FROM jt WHERE j['tags'][0] = '\"x\"' OR j['n']['m']::int = 5",
]
CHANGES = [
    'INSERT INTO jt VALUES (7, 3, \'{"n": {"m": 5}, "a": null}\')',
    "UPDATE jt SET j = '{\"s\": true}' WHERE id = 2",
    "DELETE FROM jt WHERE id = 1",
    "UPDATE jt SET g = 2, j = NULL WHERE id = 5",
]


def test_jsonb_columns_ad_hoc_and_maintained_as_postgres(tmp_path: Path, both) -> None:
    ours, pg = both
    for i, sql in enumerate(QUERIES):
        materialize(ours, pg, f"jv{i}", sql)
    ordered = "SELECT id, j::text FROM jt ORDER BY j, id"
    for n, change in enumerate([None, *CHANGES]):
        if change is not None:
            for c in (ours, pg):
                c.execute(change)
        if n == 2:  # the views' plans and stored columns are read back after a restart
            ours.close()
            ours = changeflow.connect(tmp_path / "home", host_seconds=0)
            ours.autocommit = True
        for i, sql in enumerate(QUERIES):
            want = rows(pg.execute(sql))
            assert rows(ours.execute(sql)) == want, (sql, change)
            assert rows(ours.execute(f"SELECT * FROM jv{i}")) == want, (sql, change)
        assert ours.execute(ordered).fetchall() == pg.execute(ordered).fetchall(), change
    ours.close()


REFUSED = [
    "SELECT jsonb_object_agg(j, id) FROM jt",
    "SELECT jsonb_object_agg(j ->> 'a', id) FROM jt",
    "SELECT jsonb_object_agg(id, j, g) FROM jt",
    "SELECT * FROM jt, jsonb_each(jt.j)",
    "SELECT * FROM jt CROSS JOIN LATERAL jsonb_array_elements(j) x",
    "SELECT '{\"a\": }'::jsonb",
    "SELECT 'NaN'::jsonb",
    "SELECT jsonb_array_length('{}')",
    "SELECT jsonb_array_length('1')",
    "SELECT ('\"x\"'::jsonb)::int",
    "SELECT jsonb_build_object('a')",
    "SELECT jsonb_build_object(NULL, 1)",
    "SELECT j + 1 FROM jt",
    "SELECT '1'::jsonb - 'a'",
    "SELECT '{\"a\": 1}'::jsonb - 0",
    "SELECT j['a':'b'] FROM jt",
    "SELECT j[1.5] FROM jt",
    "SELECT j[id::bigint] FROM jt",
    "SELECT j[true] FROM jt",
    "SELECT (j::json)['a'] FROM jt",
]


def test_jsonb_errors_as_postgres_gives_them(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)


TABLE_FUNCTIONS = [
    'SELECT * FROM jsonb_array_elements(\'[1, "a", null, {"b": 2}, [3]]\')',
    "SELECT * FROM jsonb_array_elements_text('[1, \"a\", null]') WITH ORDINALITY AS e(v, n)",
    'SELECT key, value FROM jsonb_each(\'{"b": 1, "a": [2], "c": null}\')',
    'SELECT * FROM jsonb_each_text(\'{"b": 1, "a": "x", "c": null}\')',
    "SELECT jt.id, e.value FROM jt, jsonb_array_elements('[1, 2]') e WHERE jt.id = (e.value)::int",
]


def test_jsonb_table_functions_of_constants_as_postgres(both) -> None:
    ours, pg = both
    for sql in TABLE_FUNCTIONS:
        assert rows(ours.execute(sql)) == rows(pg.execute(sql)), sql
    ours.execute(f"CREATE MATERIALIZED VIEW each_joined AS {TABLE_FUNCTIONS[-1]}")
    for c in (ours, pg):
        c.execute("DELETE FROM jt WHERE id = 1")
    want = rows(pg.execute(TABLE_FUNCTIONS[-1]))
    assert rows(ours.execute("SELECT * FROM each_joined")) == want
    same_errors(
        ours,
        pg,
        ["SELECT * FROM jsonb_each('[1]')", "SELECT * FROM jsonb_array_elements('{}')"],
    )
