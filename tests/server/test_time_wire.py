"""time (OID 1083) through ``changeflow serve`` as PostgreSQL 15 sends it: to psycopg in text
and binary, ``datetime.time`` parameters in both formats, COPY in both formats, and through
asyncpg (which binds and reads it in binary)."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import psycopg
import pytest
from test_types_wire import copy_in_text_and_binary, same_in_text_and_binary

pytestmark = pytest.mark.postgres


def test_time_reaches_psycopg_as_from_postgres(server, postgres_url: str, table_name: str) -> None:
    create = f"CREATE TABLE {table_name} (id int, t time)"
    rows = [(1, dt.time(23, 59, 59, 999999)), (2, None)]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for conn in (ours, pg):
                conn.execute(create)
                conn.execute(
                    f"INSERT INTO {table_name} VALUES (3, '12:34:56.789'), (4, %s), (5, %b)",
                    (dt.time(0, 0), dt.time(1, 2, 3, 4)),
                )
                copy_in_text_and_binary(conn, table_name, rows, ["int4", "time"])
            sql = (
                f"SELECT id, t, t::text, t + interval '90 minutes', (t - time '12:00')::text,"
                f" date '2024-02-29' + t, TIME '01:02', extract(epoch FROM t) FROM {table_name}"
                " ORDER BY id"
            )
            same_in_text_and_binary(ours, pg, sql)
            sql = f"SELECT id FROM {table_name} WHERE t < %s ORDER BY id"
            for conn in (ours, pg):
                assert conn.execute(sql, (dt.time(12, 0),)).fetchall() == [(4,), (5,)]
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {table_name}")


def test_asyncpg_binds_and_reads_time(server, postgres_url: str, table_name: str) -> None:
    asyncpg = pytest.importorskip("asyncpg")

    async def work(c: Any) -> list:
        await c.execute(f"CREATE TABLE {table_name} (id int, t time)")
        try:
            await c.executemany(
                f"INSERT INTO {table_name} VALUES ($1, $2)",
                [(1, dt.time(12, 34, 56, 789000)), (2, None), (3, dt.time(0, 0, 0, 1))],
            )
            rows = await c.fetch(
                f"SELECT id, t, t - $1::time, t > $1 FROM {table_name} ORDER BY id", dt.time(1)
            )
            return [tuple(r) for r in rows]
        finally:
            await c.execute(f"DROP TABLE {table_name}")

    async def main() -> tuple[list, list]:
        results = []
        for where in (
            {"host": server.host, "port": server.port, "user": "tester"},
            {"dsn": postgres_url},
        ):
            c = await asyncpg.connect(**where)
            try:
                results.append(await work(c))
            finally:
                await c.close()
        return results[0], results[1]

    ours, theirs = asyncio.run(main())
    assert ours == theirs
    assert ours[0][1] == dt.time(12, 34, 56, 789000)


def test_end_of_day_on_the_wire_as_from_postgres(server, postgres_url: str) -> None:
    """``24:00:00`` (which ``datetime.time`` cannot hold) is sent as PostgreSQL sends it: its
    text, and 86,400,000,000 microseconds in binary (read here as the raw bytes)."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class Raw(Loader):
        def load(self, data: Any) -> bytes:
            return bytes(data)

    class RawBinary(Raw):
        format = Format.BINARY

    sql = "SELECT '24:00'::time, time '24:00:00', '23:59:59.999999'::time"
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        got = []
        for conn in (ours, pg):
            conn.adapters.register_loader("time", Raw)
            conn.adapters.register_loader("time", RawBinary)
            for binary in (False, True):
                with conn.cursor(binary=binary) as cur:
                    cur.execute(sql)
                    assert [d.type_code for d in cur.description] == [1083] * 3
                    got.append(cur.fetchall())
        assert got[:2] == got[2:]
        assert got[0] == [(b"24:00:00", b"24:00:00", b"23:59:59.999999")]
