"""Arrays, uuid and bytea through ``changeflow serve`` to psycopg, as PostgreSQL 15 sends
them: their OIDs (so psycopg returns lists, UUIDs and bytes), text and binary formats, and
those Python values as parameters."""

from __future__ import annotations

import uuid

import psycopg
import pytest

QUERIES = [
    "SELECT id, a, t, b, f, a[2] FROM {t} ORDER BY id",
    "SELECT g, array_agg(id ORDER BY id DESC), array_agg(t[1] ORDER BY id) FROM {t} GROUP BY g "
    "ORDER BY g",
    "SELECT ARRAY[1, NULL, 3], '{{}}'::text[], ARRAY['a\"b', 'c,d', 'NULL', ''], "
    "'{{1.50,2}}'::numeric[]",
]


def copy_in_text_and_binary(conn, table: str, rows: list, types: list[str]) -> None:  # noqa: ANN001
    """``rows`` into ``table`` by COPY FROM STDIN, once in text and once in binary (``types``:
    the columns' types, which binary COPY needs)."""
    for fmt in ("TEXT", "BINARY"):
        binary = fmt == "BINARY"
        with (
            conn.cursor(binary=binary) as cur,
            cur.copy(f"COPY {table} FROM STDIN (FORMAT {fmt})") as copy,
        ):
            if binary:
                copy.set_types(types)
            for row in rows:
                copy.write_row(row)


def same_in_text_and_binary(ours, pg, sql: str) -> None:  # noqa: ANN001
    """``sql`` gives PostgreSQL's column types and rows, in text and in binary results."""
    for binary in (False, True):
        with ours.cursor(binary=binary) as a, pg.cursor(binary=binary) as b:
            a.execute(sql)
            b.execute(sql)
            assert [d.type_code for d in a.description] == [d.type_code for d in b.description], (
                binary
            )
            assert a.fetchall() == b.fetchall(), binary


@pytest.mark.postgres
def test_arrays_reach_psycopg_as_from_postgres(server, postgres_url: str, table_name: str) -> None:
    create = f"CREATE TABLE {table_name} (id int, g int, a int[], t text[], b bigint[], f float8[])"
    insert = (
        f"INSERT INTO {table_name} VALUES (1, 1, '{{1,2}}', '{{x,y}}', '{{5}}', '{{1.5,NULL}}'), "
        f"(2, 1, NULL, '{{\"a b\"}}', '{{}}', NULL), (3, 2, '{{7,NULL}}', NULL, NULL, '{{-2}}')"
    )
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(insert)
            with conn.cursor() as cur:  # batched (psycopg's executemany pipelines)
                cur.executemany(
                    f"INSERT INTO {table_name} (id, g, a, t) VALUES (%s, %s, %s, %s)",
                    [(4, 2, [4, None], ["p"]), (5, 3, None, [])],
                )
        try:
            for binary in (False, True):
                for query in QUERIES:
                    sql = query.format(t=table_name)
                    with ours.cursor(binary=binary) as a, pg.cursor(binary=binary) as b:
                        a.execute(sql)
                        b.execute(sql)
                        assert [d.type_code for d in a.description] == [
                            d.type_code for d in b.description
                        ], (sql, binary)
                        assert a.fetchall() == b.fetchall(), (sql, binary)
            for mark in ("%s", "%b"):  # a list sent in text, then in binary
                sql = f"SELECT id FROM {table_name} WHERE id = ANY({mark}) ORDER BY id"
                for conn in (ours, pg):
                    assert conn.execute(sql, ([1, 3],)).fetchall() == [(1,), (3,)]
        finally:
            pg.execute(f"DROP TABLE {table_name}")


@pytest.mark.postgres
def test_uuid_and_bytea_reach_psycopg_as_from_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    create = f"CREATE TABLE {table_name} (id int, u uuid, b bytea)"
    known = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(create)
            conn.execute(
                f"INSERT INTO {table_name} VALUES (1, %s, %s), (2, NULL, %s), (3, %s, NULL)",
                (known, b"\x00\xffab", b"", "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            )
        try:
            sql = (
                f"SELECT id, u, b, length(b), b::text, '\\x0a'::bytea FROM {table_name} ORDER BY id"
            )
            same_in_text_and_binary(ours, pg, sql)
            for mark in ("%s", "%b"):
                sql = f"SELECT id FROM {table_name} WHERE u = {mark} OR b = {mark} ORDER BY id"
                for conn in (ours, pg):
                    assert conn.execute(sql, (known, b"")).fetchall() == [(1,), (2,)]
            (made,) = ours.execute("SELECT gen_random_uuid()").fetchone()
            assert isinstance(made, uuid.UUID) and made.version == 4
        finally:
            pg.execute(f"DROP TABLE {table_name}")


@pytest.mark.postgres
def test_uuid_arrays_reach_psycopg_as_from_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    known = [uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), None]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(f"CREATE TABLE {table_name} (id int, us uuid[])")
            conn.execute(
                f"INSERT INTO {table_name} VALUES (1, %s), (2, '{{}}'), (3, NULL)", (known,)
            )
        try:
            sql = f"SELECT id, us, us[1], us::text FROM {table_name} ORDER BY id"
            same_in_text_and_binary(ours, pg, sql)
            sql = f"SELECT id FROM {table_name} WHERE %s = ANY(us)"
            for conn in (ours, pg):
                assert conn.execute(sql, (known[0],)).fetchall() == [(1,)]
        finally:
            pg.execute(f"DROP TABLE {table_name}")


@pytest.mark.postgres
def test_copy_in_of_uuid_bytea_and_arrays_as_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    create = f"CREATE TABLE {table_name} (id int, u uuid, b bytea, a int[], t text[])"
    rows = [
        (1, uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), b"\x01", [1, None], ["x y", ""]),
        (2, None, None, None, None),
        (3, uuid.UUID("b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), b"", [], ['"q"']),
    ]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for conn in (ours, pg):
                conn.execute(create)
                for fmt in ("TEXT", "BINARY"):
                    binary = fmt == "BINARY"
                    with (
                        conn.cursor(binary=binary) as cur,
                        cur.copy(f"COPY {table_name} FROM STDIN (FORMAT {fmt})") as copy,
                    ):
                        if binary:
                            copy.set_types(["int4", "uuid", "bytea", "int4[]", "text[]"])
                        for row in rows:
                            copy.write_row(row)
            sql = f"SELECT * FROM {table_name} ORDER BY id, u"
            assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall()
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {table_name}")


def test_asyncpg_binds_and_reads_uuid_and_bytea_in_binary(server, table_name: str) -> None:
    """asyncpg asks for the parameters' types and sends and reads uuid and bytea in the
    binary format (arrays: test_asyncpg_arrays.py)."""
    asyncpg = pytest.importorskip("asyncpg")
    import asyncio

    known = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")

    async def main() -> list:
        c = await asyncpg.connect(host=server.host, port=server.port, user="tester")
        try:
            await c.execute(f"CREATE TABLE {table_name} (id int, u uuid, b bytea)")
            await c.executemany(
                f"INSERT INTO {table_name} VALUES ($1, $2, $3)",
                [(1, known, b"\x00\x01"), (2, None, None)],
            )
            rows = await c.fetch(
                f"SELECT id, u, b FROM {table_name} WHERE u = $1 OR b IS NULL ORDER BY id", known
            )
            await c.execute(f"DROP TABLE {table_name}")
            return [tuple(r) for r in rows]
        finally:
            await c.close()

    assert asyncio.run(main()) == [(1, known, b"\x00\x01"), (2, None, None)]


def test_a_parameter_compared_with_any_is_an_array_of_the_other_side() -> None:
    from changeflow.compute.types import INT4, TEXT, Column
    from changeflow.server.prepare import infer_oids

    schema = (Column("id", INT4), Column("s", TEXT))
    sql = "SELECT * FROM t WHERE id = ANY($1) OR s <> ALL($2) OR id = $3"
    assert infer_oids(sql, [0, 0, 0], lambda name: schema) == [1007, 1009, 23]


@pytest.mark.postgres
def test_intervals_reach_psycopg_as_from_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    """interval (OID 1186) in text and binary, timedelta parameters, COPY in both formats."""
    from datetime import timedelta

    create = f"CREATE TABLE {table_name} (id int, i interval)"
    rows = [(1, timedelta(days=3, seconds=7384, microseconds=5)), (2, None)]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for conn in (ours, pg):
                conn.execute(create)
                conn.execute(
                    f"INSERT INTO {table_name} VALUES (3, '1 year 2 mons -3 days 04:05:06.5'), "
                    "(4, %s), (5, %b)",
                    (timedelta(hours=-30), timedelta(days=40, microseconds=1)),
                )
                copy_in_text_and_binary(conn, table_name, rows, ["int4", "interval"])
            sql = (
                f"SELECT id, i, i::text, i * 2, timestamp '2024-01-31' + i FROM {table_name} "
                "ORDER BY id"
            )
            same_in_text_and_binary(ours, pg, sql)
            sql = f"SELECT id FROM {table_name} WHERE i < %s ORDER BY id"
            for conn in (ours, pg):
                assert conn.execute(sql, (timedelta(0),)).fetchall() == [(4,)]
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {table_name}")


@pytest.mark.postgres
def test_jsonb_reaches_psycopg_as_from_postgres(server, postgres_url: str, table_name: str) -> None:
    """jsonb (OID 3802) in text and binary, Jsonb parameters and COPY in both formats."""
    from psycopg.types.json import Jsonb

    create = f"CREATE TABLE {table_name} (id int, j jsonb)"
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for conn in (ours, pg):
                conn.execute(create)
                conn.execute(
                    f'INSERT INTO {table_name} VALUES (1, \'{{"b": 1, "a": [1, 2.5]}}\'), '
                    "(2, %s), (3, NULL)",
                    (Jsonb({"k": "v", "n": None}),),
                )
                with (
                    conn.cursor() as cur,
                    cur.copy(f"COPY {table_name} FROM STDIN (FORMAT TEXT)") as copy,
                ):
                    copy.write_row((4, '{"z": true, "z": false}'))
                with (
                    conn.cursor(binary=True) as cur,
                    cur.copy(f"COPY {table_name} FROM STDIN (FORMAT BINARY)") as copy,
                ):
                    copy.set_types(["int4", "jsonb"])
                    copy.write_row((5, Jsonb({"bb": [1, "x"], "a": None})))
            sql = f"SELECT id, j, j::text, j -> 'a', j ->> 'k' FROM {table_name} ORDER BY id"
            same_in_text_and_binary(ours, pg, sql)
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {table_name}")
