"""INSERT, UPDATE and DELETE plans: their rows evaluated over the table, against DuckDB running
the same statement, and PostgreSQL's assignment rules and errors; CREATE TABLE column types."""

from __future__ import annotations

import sys
from collections import Counter
from datetime import date
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings

from changeflow.adapter.relations import Relation
from changeflow.adapter.sql.dml import check_not_null, plan_delete, plan_insert, plan_update
from changeflow.adapter.sql.types import column_type
from changeflow.compute import plan as P
from changeflow.compute.evaluate import evaluate
from changeflow.compute.types import (
    ARRAYS,
    BOOL,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    JSON,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
)
from changeflow.errors import EvalError, PlanError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import TABLES, Resolver, load, norm, parse, r_rows, s_rows, version  # noqa: E402

U = [(1, True, date(2024, 1, 1), "x"), (2, None, None, None)]


def _rows(plan: P.Plan, data: dict[str, list[tuple]]) -> Counter:
    out = evaluate(plan, {n: version(r) for n, r in data.items()}, 0)
    return Counter({tuple(norm(v) for v in row): c for row, c in out.items()})


def _after(table: str, data: dict[str, list[tuple]], minus: P.Plan | None, plus: P.Plan | None):
    """The table's rows once ``minus`` is retracted and ``plus`` inserted."""
    rows = Counter(tuple(norm(v) for v in row) for row in data[table])
    if minus is not None:
        rows.subtract(_rows(minus, data))
    if plus is not None:
        rows.update(_rows(plus, data))
    assert all(c >= 0 for c in rows.values())
    return +rows


def _duck_after(sql: str, table: str, data: dict[str, list[tuple]]) -> Counter:
    con = load(data)
    con.execute(sql)
    return Counter(
        tuple(norm(v) for v in row) for row in con.execute(f"SELECT * FROM {table}").fetchall()
    )


UPDATES = [
    "UPDATE r SET v = v + 1",
    "UPDATE r SET v = k, k = v WHERE s IS NOT NULL",
    "UPDATE r SET s = s || '!' WHERE k IN (SELECT k FROM s)",
    "UPDATE r AS x SET v = NULL WHERE x.v > 0 OR x.k IS NULL",
    "UPDATE r SET v = (SELECT max(w) FROM s WHERE s.k = r.k)",
    "DELETE FROM r WHERE v > 0",
    "DELETE FROM r",
    "DELETE FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.k = r.k)",
    "INSERT INTO r SELECT k, w, 'n' FROM s WHERE w IS NOT NULL",
    "INSERT INTO r (s, k) SELECT 'z', k FROM s",
    "INSERT INTO r VALUES (1, 2, 'c'), (NULL, NULL, NULL), (3, -1, 'c')",
    "INSERT INTO r (k) VALUES (5)",
]


@pytest.mark.parametrize("sql", UPDATES)
@settings(max_examples=10, deadline=None)
@given(r=r_rows, s=s_rows)
def test_agrees_with_duckdb(sql: str, r: list[tuple], s: list[tuple]) -> None:
    data = {"r": r, "s": s}
    node = parse(sql)
    if sql.startswith("UPDATE"):
        p = plan_update(node, Resolver())
        got = _after(p.table, data, p.old, p.new)
    elif sql.startswith("DELETE"):
        d = plan_delete(node, Resolver())
        got = _after(d.table, data, d.rows, None)
    else:
        i = plan_insert(node, Resolver())
        got = _after(i.table, data, None, i.rows)
    assert got == _duck_after(sql, "r", data)


def _insert(sql: str) -> list[tuple]:
    plan = plan_insert(parse(sql), Resolver())
    return sorted(evaluate(plan.rows, {}, 0), key=repr)


def test_insert_defaults_and_assignment_casts() -> None:
    # u: id int NOT NULL, b boolean DEFAULT true, d date, t text DEFAULT 'none'
    assert _insert("INSERT INTO u (id) VALUES (1)") == [(1, True, None, "none")]
    assert _insert("INSERT INTO u VALUES (2, DEFAULT, '2024-02-03', 5)") == [
        (2, True, date(2024, 2, 3), "5")
    ]
    assert _insert("INSERT INTO u (t, id) VALUES ('a', 2.5), ('b', 3.5)") == [
        (3, True, None, "a"),
        (4, True, None, "b"),
    ]
    # a double into an integer column rounds half to even, as PostgreSQL's float8 -> int4
    assert _insert("INSERT INTO u (id) VALUES (2.5::float8), (3.5::float8)") == [
        (2, True, None, "none"),
        (4, True, None, "none"),
    ]
    assert _insert("INSERT INTO u DEFAULT VALUES") == [(None, True, None, "none")]
    plan = plan_insert(parse("INSERT INTO u (id) VALUES (1)"), Resolver())
    assert plan.schema == TABLES["u"].schema and not plan.schema[0].nullable
    n = plan_insert(parse("INSERT INTO s VALUES (1, 2)"), Resolver())
    assert n.rows.schema[1].type == INT8


def test_not_null_is_the_adapters_to_check() -> None:
    plan = plan_insert(parse("INSERT INTO u (b) VALUES (false)"), Resolver())
    (row,) = evaluate(plan.rows, {}, 0)
    with pytest.raises(EvalError, match='null value in column "id" of relation "u"') as e:
        check_not_null(row, plan.schema, plan.table)
    assert e.value.sqlstate == "23502"


def test_dml_says_what_it_reads() -> None:
    i = plan_insert(parse("INSERT INTO r SELECT k, w, 'x' FROM s"), Resolver())
    assert i.reads == {"s"} and i.timelines == {"EpochMilliseconds"}
    d = plan_delete(parse("DELETE FROM r WHERE k IN (SELECT k FROM s)"), Resolver())
    assert d.reads == {"r", "s"}
    u = plan_update(parse("UPDATE r SET v = 1"), Resolver())
    assert u.reads == {"r"} and u.timelines == {"EpochMilliseconds"}


def test_update_and_delete_plans() -> None:
    data = {"u": U}
    p = plan_update(parse("UPDATE u SET t = DEFAULT, d = '2020-01-01' WHERE id = 2"), Resolver())
    assert _rows(p.old, data) == Counter({(2, None, None, None): 1})
    assert _rows(p.new, data) == Counter({(2, None, "2020-01-01", "none"): 1})
    d = plan_delete(parse("DELETE FROM u WHERE b"), Resolver())
    assert d.table == "u" and _rows(d.rows, data) == Counter({(1, True, "2024-01-01", "x"): 1})


VIEW = Relation("v", "view", P.Get("s", TABLES["s"].schema), "EpochMilliseconds")
SOURCE = Relation("src", "source", P.Get("src", TABLES["s"].schema), "EpochMilliseconds")

DML_ERRORS = [
    ("INSERT INTO r VALUES (1, 2, 'a', 4)", "42601", "INSERT has more expressions than target"),
    ("INSERT INTO r (k, v) VALUES (1)", "42601", "INSERT has more target columns than"),
    ("INSERT INTO r (k) SELECT k, w FROM s", "42601", "more expressions than target columns"),
    ("INSERT INTO r (nope) VALUES (1)", "42703", 'column "nope" of relation "r" does not exist'),
    ("INSERT INTO r (k, k) VALUES (1, 2)", "42701", 'column "k" specified more than once'),
    ("INSERT INTO r (k) VALUES ('x')", "22P02", 'invalid input syntax for type integer: "x"'),
    ("INSERT INTO r (k) SELECT s FROM r", "42804", 'column "k" is of type integer but'),
    ("INSERT INTO u (b) VALUES (1)", "42804", 'column "b" is of type boolean but expression'),
    ("INSERT INTO nope VALUES (1)", "42P01", 'relation "nope" does not exist'),
    ("INSERT INTO v VALUES (1, 2)", "42809", 'cannot insert into view "v"'),
    ("UPDATE src SET k = 1", "42809", 'cannot update source "src"'),
    ("DELETE FROM v", "42809", 'cannot delete from view "v"'),
    ("UPDATE r SET nope = 1", "42703", 'column "nope" of relation "r" does not exist'),
    ("UPDATE r SET k = 1, k = 2", "42601", 'multiple assignments to same column "k"'),
    ("UPDATE r SET k = s", "42804", 'column "k" is of type integer but expression is of type'),
    ("UPDATE r SET k = 1 WHERE nope", "42703", 'column "nope" does not exist'),
    ("DELETE FROM r WHERE k", "42804", "argument of WHERE must be type boolean"),
    ("DELETE FROM r WHERE mz_now() > k", "0A000", "mz_now()"),
    ("INSERT INTO r VALUES (1, 2, 'a') ON CONFLICT (k) DO NOTHING", "42P10", "no unique"),
]


@pytest.mark.parametrize(("sql", "sqlstate", "message"), DML_ERRORS)
def test_errors(sql: str, sqlstate: str, message: str) -> None:
    node = parse(sql)
    plan = {"INSERT": plan_insert, "UPDATE": plan_update, "DELETE": plan_delete}[sql.split()[0]]
    with pytest.raises(PlanError) as e:
        plan(node, Resolver({"v": VIEW, "src": SOURCE}))  # type: ignore[operator]
    assert e.value.sqlstate == sqlstate, e.value.message
    assert message in e.value.message


COLUMN_TYPES = [
    ("boolean", BOOL, pa.bool_()),
    ("smallint", INT2, pa.int16()),
    ("int", INT4, pa.int32()),
    ("integer", INT4, pa.int32()),
    ("bigint", INT8, pa.int64()),
    ("real", FLOAT4, pa.float32()),
    ("float4", FLOAT4, pa.float32()),
    ("double precision", FLOAT8, pa.float64()),
    ("float8", FLOAT8, pa.float64()),
    ("numeric(10, 2)", NUMERIC, pa.decimal128(10, 2)),
    ("decimal(5)", NUMERIC, pa.decimal128(5, 0)),
    ("numeric", NUMERIC, pa.decimal128(38, 18)),
    ("text", TEXT, pa.string()),
    ("varchar(3)", TEXT, pa.string()),
    ("char(2)", TEXT, pa.string()),
    ("date", DATE, pa.date32()),
    ("timestamp", TIMESTAMP, pa.timestamp("us")),
    ("timestamptz", TIMESTAMPTZ, pa.timestamp("us", tz="UTC")),
    ("timestamp with time zone", TIMESTAMPTZ, pa.timestamp("us", tz="UTC")),
    ("uuid", UUID, pa.binary(16)),
    ("bytea", BYTEA, pa.binary()),
    ("int[]", ARRAYS[INT4], pa.list_(pa.int32())),
    ("text[]", ARRAYS[TEXT], pa.list_(pa.string())),
]


@pytest.mark.parametrize(("name", "sql_type", "arrow"), COLUMN_TYPES)
def test_column_types(name: str, sql_type: object, arrow: pa.DataType) -> None:
    create = parse(f"CREATE TABLE x (c {name})")
    dt = create.this.expressions[0].args["kind"]
    assert column_type(dt) == (sql_type, arrow)


@pytest.mark.parametrize("name", ["xml", "mytype", "numeric(50, 2)"])
def test_unknown_column_types(name: str) -> None:
    dt = parse(f"CREATE TABLE x (c {name})").this.expressions[0].args["kind"]
    with pytest.raises(PlanError) as e:
        column_type(dt)
    assert e.value.sqlstate in ("42704", "22023")
    assert name.split("(")[0] in e.value.message.lower()


def test_json_columns_hold_json_text() -> None:
    dt = parse("CREATE TABLE x (c json)").this.expressions[0].args["kind"]
    assert column_type(dt) == (JSON, JSON.arrow)
