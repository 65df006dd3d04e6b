"""real over the wire as PostgreSQL 15 sends it (the oracle: the same statements on a throwaway
PostgreSQL server): type oid 700 in RowDescription, float4's shortest text (0.1, 3.4028235e+38)
in the text format, 4 bytes in the binary format, the same in COPY TO, parameters rounded to
float32, and psql's ``\\d`` naming the type."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.types.string import TextLoader
from serve_clients import PSQL, psql

CREATE = "CREATE TABLE {t} (id int, r real, d double precision)"
INSERT = (
    "INSERT INTO {t} VALUES (1, 0.1, 0.1), (2, 1.1, 1e15), (3, 3.4028235e+38, 1e-5),"
    " (4, 'NaN', '-Infinity'), (5, NULL, NULL), (6, 1234567, 123456.7), (7, 1e-45, -0.5)"
)
QUERIES = [
    "SELECT id, r, d FROM {t} ORDER BY id",
    "SELECT id, r + r, r * 2, r::text, -r, abs(r) FROM {t} WHERE id <> 3 ORDER BY id",
    "SELECT sum(r), avg(r), min(r), max(r) FROM {t} WHERE id IN (1, 2, 6)",
    "SELECT 0.1::real, '1e-45'::real, 100000::real, 1e6::real",
]


def _rows(conn: psycopg.Connection, sql: str, binary: bool) -> tuple[list, list]:
    """The rows with every value as the text the server sent (text format) or as psycopg
    decodes the binary format, and each column's type oid."""
    with conn.cursor(binary=binary) as cur:
        cur.execute(sql)
        kinds = [d.type_code for d in cur.description or ()]
        return [tuple(map(str, r)) for r in cur.fetchall()], kinds


@pytest.mark.postgres
def test_real_on_the_wire_as_postgres(server, postgres_url: str, table_name: str) -> None:
    with (
        server.connect() as ours,
        psycopg.connect(postgres_url, autocommit=True) as pg,
    ):
        for conn in (ours, pg):
            for oid in (700, 701):  # the text exactly as sent
                conn.adapters.register_loader(oid, TextLoader)
            conn.execute(CREATE.format(t=table_name))
            conn.execute(INSERT.format(t=table_name))
            with conn.cursor() as cur:  # a parameter of each type into the real column
                cur.execute(f"INSERT INTO {table_name} VALUES (8, %s, 0)", [0.1])
                cur.execute(f"INSERT INTO {table_name} VALUES (9, %s::real, 0)", ["1.1"])
        try:
            for binary in (False, True):
                for query in QUERIES + ["SELECT id, r FROM {t} WHERE id > 7 ORDER BY id"]:
                    sql = query.format(t=table_name)
                    assert _rows(ours, sql, binary) == _rows(pg, sql, binary), (sql, binary)
            copy = f"COPY (SELECT id, r FROM {table_name} ORDER BY id) TO STDOUT"
            for fmt in ("", " (FORMAT csv)", " (FORMAT binary)"):
                outs = []
                for conn in (ours, pg):
                    with conn.cursor() as cur, cur.copy(copy + fmt) as c:
                        outs.append(b"".join(bytes(b) for b in c))
                assert outs[0] == outs[1], fmt
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {table_name}")


@pytest.mark.skipif(PSQL is None, reason="psql is not installed")
def test_psql_describes_real(server, table_name: str) -> None:
    assert psql(server, "-c", CREATE.format(t=table_name)).returncode == 0
    out = psql(server, "-c", rf"\d {table_name}")
    assert out.returncode == 0, out.stderr
    lines = {
        line.split("|")[0].strip(): line.split("|")[1].strip()
        for line in out.stdout.splitlines()
        if "|" in line
    }
    assert lines["r"] == "real" and lines["d"] == "double precision", out.stdout


@pytest.mark.postgres
def test_real_through_asyncpg_as_postgres(server, postgres_url: str, table_name: str) -> None:
    """asyncpg binds a real column's parameters as float4 (Describe says 700) and reads reals
    and real[] in binary: the same values, and the same text, as PostgreSQL's."""
    asyncpg = pytest.importorskip("asyncpg")
    from test_asyncpg_arrays import both

    async def work(c: Any) -> tuple[Any, ...]:
        await c.execute(f"CREATE TABLE {table_name} (id int, r real)")
        try:
            await c.executemany(
                f"INSERT INTO {table_name} VALUES ($1, $2)", [(1, 0.1), (2, 1e-45), (3, -2.5)]
            )
            rows = await c.fetch(f"SELECT id, r, r::text, ARRAY[r] FROM {table_name} ORDER BY id")
            kinds = [
                a.type.oid
                for a in (await c.prepare(f"SELECT r FROM {table_name}")).get_attributes()
            ]
            return [tuple(r) for r in rows], kinds
        finally:
            await c.execute(f"DROP TABLE {table_name}")

    assert asyncpg is not None
    ours, theirs = both(server, postgres_url, work)
    assert ours == theirs and theirs[1] == [700]
