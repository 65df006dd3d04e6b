"""numeric keeps its scale on the way out, as PostgreSQL 15 prints it (the oracle: the same
statements on a throwaway PostgreSQL server)."""

from __future__ import annotations

import psycopg
import pytest

QUERIES = [
    "SELECT id, x FROM {t} ORDER BY id",
    "SELECT id, x * 2, x + 1, -x FROM {t} ORDER BY id",
    "SELECT id, round(x, 1), x::numeric(10,3), abs(x) FROM {t} ORDER BY id",
    "SELECT sum(x), min(x), max(x) FROM {t}",
    "SELECT id, x FROM {t} WHERE x > 0 ORDER BY id",
    "SELECT id, x * 0, ceil(x / 10), scale(x), min_scale(x), trim_scale(x) FROM {t} ORDER BY id",
]


def _texts(cur, sql: str) -> list[tuple]:
    cur.execute(sql)
    return [tuple(None if v is None else str(v) for v in row) for row in cur.fetchall()]


@pytest.mark.postgres
def test_numeric_scale_as_postgres_prints_it(server, postgres_url: str, table_name: str) -> None:
    create = f"CREATE TABLE {table_name} (id int, x numeric(12,2))"
    insert = f"INSERT INTO {table_name} VALUES (1, 1470.1), (2, 5), (3, -0.5), (4, 287.5)"
    with (
        server.connect() as ours,
        psycopg.connect(postgres_url, autocommit=True) as pg,
    ):
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(insert)
        try:
            for binary in (False, True):
                for query in QUERIES:
                    sql = query.format(t=table_name)
                    with ours.cursor(binary=binary) as a, pg.cursor(binary=binary) as b:
                        assert _texts(a, sql) == _texts(b, sql), (sql, binary)
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {table_name}")


# Views whose numeric columns PostgreSQL prints at one scale; compared after every change.
VIEWS = [
    "SELECT id, x, x * 2 AS y, x + 1 AS z, -x AS n, round(x, 1) AS r FROM {t}",
    "SELECT g, sum(x) AS s, min(x) AS lo, max(x) AS hi, count(*) AS c FROM {t} GROUP BY g",
    "SELECT id, x * x AS sq, abs(x) AS a, x::numeric(10,3) AS w FROM {t} WHERE x > 0",
    "SELECT id, x FROM {t} UNION ALL SELECT id, x + 0.5 FROM {t}",
]
CHANGES = [
    "INSERT INTO {t} VALUES (5, 2, 10), (6, 1, 0.01)",
    "UPDATE {t} SET x = x + 0.1 WHERE id % 2 = 0",
    "DELETE FROM {t} WHERE id = 1",
]


@pytest.mark.postgres
def test_numeric_scale_in_materialized_views(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    create = f"CREATE TABLE {t} (id int, g int, x numeric(12,2))"
    insert = f"INSERT INTO {t} VALUES (1, 1, 1470.1), (2, 1, 5), (3, 2, -0.5), (4, 2, 287.5)"
    views = [f"{t}_v{i}" for i in range(len(VIEWS))]
    with (
        server.connect(autocommit=True) as ours,
        psycopg.connect(postgres_url, autocommit=True) as pg,
    ):
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(insert)
        for name, query in zip(views, VIEWS, strict=True):
            ours.execute(f"CREATE MATERIALIZED VIEW {name} AS {query.format(t=t)}")
        try:
            for change in [None, *CHANGES]:
                if change is not None:
                    for conn in (ours, pg):
                        conn.execute(change.format(t=t))
                for name, query in zip(views, VIEWS, strict=True):
                    with ours.cursor() as a, pg.cursor() as b:
                        got = sorted(_texts(a, f"SELECT * FROM {name}"))
                        want = sorted(_texts(b, query.format(t=t)))
                        assert got == want, (query, change)
        finally:
            for name in views:
                ours.execute(f"DROP MATERIALIZED VIEW {name}")
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {t}")


@pytest.mark.postgres
def test_numeric_scale_in_a_sink(tmp_path, postgres_url: str) -> None:
    from postgres_server import database_for_test

    import changeflow

    target = database_for_test(postgres_url, "numeric_sink")
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        conn.execute("CREATE TABLE t (id int NOT NULL, g int, x numeric(12,2))")
        conn.execute("INSERT INTO t VALUES (1, 1, 1470.1), (2, 1, 5), (3, 2, 287.5)")
        conn.execute("CREATE MATERIALIZED VIEW v AS SELECT g, sum(x) AS s FROM t GROUP BY g")
        conn.execute(f"CREATE SINK v_out FROM v INTO '{target}' KEY (g)")
        conn.execute("INSERT INTO t VALUES (4, 2, 0.25)")
        conn.commit()
        conn.env.tick()
        with psycopg.connect(target) as pg:
            got = pg.execute("SELECT g, s::text FROM v_out ORDER BY g").fetchall()
        assert got == [(1, "1475.10"), (2, "287.75")]
    finally:
        conn.close()
