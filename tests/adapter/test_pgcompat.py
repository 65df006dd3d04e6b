"""PostgreSQL compatibility of the adapter: plans that store and reload, errors as PostgreSQL
words them, DROP with indexes, numeric scale."""

from __future__ import annotations

from pathlib import Path

import changeflow
from changeflow.adapter.connection import Connection
from changeflow.compute.functions import FUNCTIONS


def open_home(home: Path) -> Connection:
    return changeflow.connect(home, host_seconds=0)


# One call of every function of the table, over t(id int, name text, x numeric(12,2), f float8,
# d date, ts timestamptz).
CALLS = {
    "lower": "lower(name)",
    "upper": "upper(name)",
    "length": "length(name)",
    "char_length": "char_length(name)",
    "substr": "substr(name, 2)",
    "substring": "substring(name, 2, 1)",
    "btrim": "btrim(name, 'a')",
    "trim": "trim(name)",
    "ltrim": "ltrim(name)",
    "rtrim": "rtrim(name)",
    "replace": "replace(name, 'a', 'b')",
    "strpos": "strpos(name, 'b')",
    "position": "position('b' IN name)",
    "left": "left(name, 2)",
    "right": "right(name, 2)",
    "starts_with": "starts_with(name, 'a')",
    "reverse": "reverse(name)",
    "repeat": "repeat(name, 2)",
    "concat": "concat(name, id, x)",
    "textcat": "name || '!'",
    "abs": "abs(x)",
    "round": "round(x, 1)",
    "trunc": "trunc(x)",
    "floor": "floor(f)",
    "ceil": "ceil(x)",
    "ceiling": "ceiling(f)",
    "sign": "sign(x)",
    "sqrt": "sqrt(f)",
    "ln": "ln(f)",
    "exp": "exp(f)",
    "power": "power(f, 2)",
    "pow": "pow(x, 2)",
    "greatest": "greatest(id, 2)",
    "least": "least(x, 2)",
    "date_part": "date_part('month', d)",
    "extract": "extract(year FROM ts)",
    "date_trunc": "date_trunc('month', ts)",
    "make_date": "make_date(2020, 1, id)",
    "to_timestamp": "to_timestamp(f)",
    "epoch_ms": "epoch_ms(ts)",
}


def test_every_function_in_a_materialized_view_survives_a_restart(tmp_path: Path) -> None:
    missing = set(FUNCTIONS) - set(CALLS)
    assert not missing, f"add a call of {sorted(missing)} to CALLS"
    select = ", ".join(f"{call} AS {name}" for name, call in CALLS.items())
    conn = open_home(tmp_path / "home")
    conn.execute(
        "CREATE TABLE t (id int, name text, x numeric(12,2), f float8, d date, ts timestamptz)"
    )
    conn.execute(
        "INSERT INTO t VALUES (1, 'abc', -3.25, 2.5, '2024-03-05', '2024-03-05 10:00:00+00'),"
        " (2, 'ba ', 7.25, 0.5, '2023-12-31', '2023-12-31 23:59:59+00')"
    )
    expected = conn.execute(f"SELECT id, {select} FROM t ORDER BY id").fetchall()
    conn.execute(f"CREATE MATERIALIZED VIEW v AS SELECT id, {select} FROM t")
    conn.execute("CREATE MATERIALIZED VIEW recent AS SELECT id FROM t WHERE ts <= mz_now()")
    conn.execute(f"CREATE VIEW plain AS SELECT id, {select} FROM t")
    assert conn.execute("SELECT * FROM v ORDER BY id").fetchall() == expected
    conn.close()
    conn = open_home(tmp_path / "home")
    try:
        assert conn.execute("SELECT * FROM v ORDER BY id").fetchall() == expected
        assert conn.execute("SELECT * FROM plain ORDER BY id").fetchall() == expected
        assert conn.execute("SELECT id FROM recent ORDER BY id").fetchall() == [(1,), (2,)]
    finally:
        conn.close()
