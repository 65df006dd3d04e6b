"""oid and the reg* types (regclass, regtype, regnamespace, regproc, regrole) through
``changeflow serve`` as PostgreSQL 15 sends them: their type OIDs, the name in text and the
4-byte OID in binary, to psycopg in both formats and to asyncpg on a fresh connection (which
decodes them with its built-in codecs); an oid compares with integers and int parameters."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import psycopg
import pytest
from test_types_wire import same_in_text_and_binary

pytestmark = pytest.mark.postgres

CONSTANTS = (
    "SELECT 'pg_class'::regclass, 0::regclass, 'int4'::regtype, 'text'::regtype,"
    " 'public'::regnamespace, 'pg_catalog'::regnamespace, 16384::oid, 'pg_class'::regclass::oid"
)


def test_object_ids_reach_psycopg_as_from_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for conn in (ours, pg):
                conn.execute(f"CREATE TABLE {table_name} (id int, name text)")
            same_in_text_and_binary(ours, pg, CONSTANTS)
            catalog = (
                "SELECT c.oid::regclass, c.relnamespace::regnamespace, a.attname,"
                " a.atttypid::regtype FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
                f" WHERE c.relname = '{table_name}' AND a.attnum > 0 ORDER BY a.attnum"
            )
            own = [
                conn.execute(f"SELECT '{table_name}'::regclass::oid").fetchone()[0]
                for conn in (ours, pg)
            ]
            for binary in (False, True):
                got = []
                for conn, oid in zip((ours, pg), own, strict=True):
                    with conn.cursor(binary=binary) as cur:
                        cur.execute(catalog)
                        assert [d.type_code for d in cur.description] == [2205, 4089, 19, 2206]
                        rows = cur.fetchall()
                    if binary:  # the table's own OID (each server numbers its relations)
                        assert {r[0] for r in rows} == {struct.pack("!I", oid)}
                        rows = [r[1:] for r in rows]
                    got.append(rows)
                assert got[0] == got[1], binary
            for conn in (ours, pg):
                (oid,) = conn.execute(f"SELECT '{table_name}'::regclass::oid").fetchone()
                for sql, args in [
                    (f"SELECT relname FROM pg_class c WHERE c.oid = {oid}", ()),
                    ("SELECT relname FROM pg_class c WHERE c.oid = %s", (oid,)),
                    ("SELECT relname FROM pg_class c WHERE c.oid = %b", (oid,)),
                ]:
                    assert conn.execute(sql, args).fetchall() == [(table_name,)], sql
            for kind, oid in [("regproc", 24), ("regrole", 4096)]:
                cur = ours.execute(f"SELECT 10::{kind}")
                assert cur.description[0].type_code == oid
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {table_name}")


def test_asyncpg_reads_object_ids_on_a_fresh_connection(
    server, postgres_url: str, table_name: str
) -> None:
    asyncpg = pytest.importorskip("asyncpg")

    async def first(where: dict[str, Any]) -> tuple[list, list]:
        c = await asyncpg.connect(**where)
        try:  # the connection's first query: no introspection of these types
            rows = await c.fetch(CONSTANTS)
            await c.execute(f"CREATE TABLE {table_name} (id int)")
            try:
                (oid,) = await c.fetchrow(f"SELECT '{table_name}'::regclass::oid")
                found = await c.fetch(
                    "SELECT c.oid, c.oid::regclass, c.relname FROM pg_class c WHERE c.oid = $1",
                    oid,
                )
            finally:
                await c.execute(f"DROP TABLE {table_name}")
            return [tuple(r) for r in rows], [(r[0] == oid, r[1], r[2]) for r in found]
        finally:
            await c.close()

    async def main() -> list:
        return [
            await first({"host": server.host, "port": server.port, "user": "tester"}),
            await first({"dsn": postgres_url}),
        ]

    ours, theirs = asyncio.run(main())
    assert ours == theirs


# Casts to oid and reg* types in queries over a table: the column has the cast's type (a column
# cast, o::regtype, is named per row); types, schemas and system relations share their OIDs.
OVER_TABLE = [
    "SELECT id, o::oid, o::regtype, n::regclass, 'int4'::regtype, 'pg_class'::regclass"
    " FROM {t} ORDER BY id",
    "SELECT id, s::regnamespace, (o + 0)::oid AS x, 'pg_class'::regclass::oid FROM {t}"
    " WHERE id < 3 ORDER BY id",
]


def test_object_id_casts_over_a_table_as_from_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    create = f"CREATE TABLE {table_name} (id int, o int8, n text, s text)"
    insert = (
        f"INSERT INTO {table_name} VALUES (1, 23, 'pg_class', 'pg_catalog'),"
        " (2, 1043, 'pg_type', 'public'), (3, NULL, NULL, NULL)"
    )
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for conn in (ours, pg):
                conn.execute(create)
                conn.execute(insert)
            for sql in OVER_TABLE:
                same_in_text_and_binary(ours, pg, sql.format(t=table_name))
            # a function's OID is this catalog's own: its name and its column's type
            sql = f"SELECT 'initcap'::regproc, 'md5(text)'::regprocedure FROM {table_name}"
            for conn in (ours, pg):
                cur = conn.execute(sql + " WHERE id = 1")
                assert [d.type_code for d in cur.description] == [24, 2202]
                assert [str(v) for v in cur.fetchone()] == ["initcap", "md5(text)"]
            for bad in [
                f"SELECT n::regclass FROM {table_name} WHERE id = 1 OR n = 'pg_type'",
                f"SELECT (n || 'x')::regclass FROM {table_name}",
                f"SELECT (-o)::oid FROM {table_name}",
                f"SELECT 'nosuch'::regproc FROM {table_name}",
            ]:
                states = []
                for conn in (ours, pg):
                    try:
                        conn.execute(bad).fetchall()
                        states.append(None)
                    except psycopg.Error as e:
                        states.append(e.sqlstate)
                assert states[0] == states[1], (bad, states)
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {table_name}")


def test_pg_typeof_is_a_regtype_as_from_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    """pg_typeof's column is a regtype (OID 2206: the name in text, the type's OID in binary);
    it compares with a regtype, with quoted type names in an IN list, and with a quoted
    OID beside = (a quoted name there is 22P02, as PostgreSQL reads it as an oid)."""
    queries = [
        f"SELECT pg_typeof(id), pg_typeof(name), pg_typeof(at), pg_typeof(a), pg_typeof(NULL),"
        f" pg_typeof(id + 0.5) AS t FROM {table_name}",
        f"SELECT id FROM {table_name} WHERE pg_typeof(id) = 'int4'::regtype"
        f" AND pg_typeof(name) <> 'integer'::regtype AND pg_typeof(id)::text = 'integer'",
        f"SELECT pg_typeof(id) IN ('int4', 'text'), pg_typeof(at) IN ('timestamptz', 'text'),"
        f" pg_typeof(1) = pg_typeof(id), pg_typeof(id) || '!', pg_typeof(id) = 23"
        f" FROM {table_name}",
    ]
    create = f"CREATE TABLE {table_name} (id int, name text, at timestamp, a bigint[])"
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for conn in (ours, pg):
                conn.execute(create)
                conn.execute(f"INSERT INTO {table_name} VALUES (1, 'a', now(), '{{1}}')")
            for sql in queries:
                same_in_text_and_binary(ours, pg, sql)
            for conn in (ours, pg):
                with pytest.raises(psycopg.errors.UndefinedObject):
                    conn.execute(
                        f"SELECT pg_typeof(id) = 'no_such_type'::regtype FROM {table_name}"
                    )
            # the literal of ``=`` is read as an oid: a type's name is 22P02, its OID is it
            for conn in (ours, pg):
                with pytest.raises(psycopg.errors.InvalidTextRepresentation):
                    conn.execute(f"SELECT pg_typeof(id) = 'integer' FROM {table_name}")
            sql = f"SELECT pg_typeof(id) = '23', pg_typeof(id) <> '25' FROM {table_name}"
            assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall() == [(True, True)]
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE IF EXISTS {table_name}")
