"""asyncpg and arrays: its type introspection query answered as PostgreSQL 15 answers it, then
array values, array parameters and array columns through a real asyncpg client, compared with
PostgreSQL itself."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import pytest

asyncpg = pytest.importorskip("asyncpg")
from asyncpg import introspection  # noqa: E402

# the array types changeflow has, and their elements
ARRAY_OIDS = [1000, 1005, 1007, 1016, 1231, 1022, 1009, 1182, 1115, 1185, 3807]


def both(server: Any, postgres_url: str, work: Callable[[Any], Awaitable[Any]]) -> tuple[Any, Any]:
    """``work`` run by asyncpg on changeflow and on PostgreSQL: the two results."""

    async def on(**where: Any) -> Any:
        c = await asyncpg.connect(**where)
        try:
            return await work(c)
        finally:
            await c.close()

    async def main() -> tuple[Any, Any]:
        ours = await on(host=server.host, port=server.port, user="tester")
        theirs = await on(dsn=postgres_url)
        return ours, theirs

    return asyncio.run(main())


@pytest.mark.postgres
def test_the_type_introspection_query_answers_as_postgres(server, postgres_url: str) -> None:
    """asyncpg's own query (the one for servers from 14 on, as changeflow says it is 15), its
    parameter and column types and its rows, for every array type and its element."""

    async def work(c: Any) -> tuple[Any, ...]:
        assert c.get_server_version() >= (14, 0)
        stmt = await c.prepare(introspection.INTRO_LOOKUP_TYPES)
        rows = await stmt.fetch(ARRAY_OIDS)
        one = await c.fetch(introspection.INTRO_LOOKUP_TYPES, [1007])
        return (
            [p.oid for p in stmt.get_parameters()],
            [(a.name, a.type.oid) for a in stmt.get_attributes()],
            sorted(tuple(r) for r in rows),
            sorted(tuple(r) for r in one),
        )

    ours, theirs = both(server, postgres_url, work)
    assert ours[0] == theirs[0] == [1028]
    assert ours[1] == theirs[1]
    assert len(ours[2]) == 2 * len(ARRAY_OIDS)
    assert ours[2] == theirs[2]
    assert ours[3] == theirs[3]


@pytest.mark.postgres
def test_array_values_parameters_and_columns_as_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    """Array literals of each element type, int[] and text[] parameters (also through
    executemany), and a table's int[] and text[] columns with NULL elements, read back."""
    literals = [
        "SELECT ARRAY[1, 2]",
        "SELECT ARRAY[1, NULL, 3]::smallint[]",
        "SELECT ARRAY[10000000000, -1]",
        "SELECT ARRAY[1.50, -2]::numeric[]",
        "SELECT ARRAY[0.5, -2.25]::float8[]",
        "SELECT ARRAY['a', NULL, 'b c']",
        "SELECT ARRAY[true, false, NULL]",
        "SELECT ARRAY[DATE '2024-02-29']",
        "SELECT ARRAY[TIMESTAMP '2024-02-29 12:34:56.5']",
        "SELECT ARRAY[TIMESTAMPTZ '2024-02-29 12:34:56+00']",
        """SELECT ARRAY['{"a": [1, 2]}'::jsonb]""",
        "SELECT '{}'::int[]",
        "SELECT NULL::int[]",
    ]

    async def work(c: Any) -> list[Any]:
        out: list[Any] = [await c.fetchval(q) for q in literals]
        out.append(await c.fetchval("SELECT $1::int[]", [1, None, 3]))
        out.append(await c.fetchval("SELECT $1::text[]", ["x", None, "y z"]))
        out.append(await c.fetchval("SELECT cardinality($1::int[])", [4, 5]))
        await c.execute(f"CREATE TABLE {table_name} (id int, xs int[], tags text[])")
        try:
            await c.executemany(
                f"INSERT INTO {table_name} VALUES ($1, $2, $3)",
                [(1, [1, 2], ["a"]), (2, [None, 3], [None, "b"]), (3, None, [])],
            )
            await c.execute(f"INSERT INTO {table_name} VALUES ($1, $2, $3)", 4, [], ["c", "d"])
            rows = await c.fetch(f"SELECT id, xs, tags FROM {table_name} ORDER BY id")
            out.append([tuple(r) for r in rows])
            found = await c.fetch(f"SELECT id FROM {table_name} WHERE $1 = ANY(xs) ORDER BY id", 3)
            out.append([r["id"] for r in found])
        finally:
            await c.execute(f"DROP TABLE {table_name}")
        return out

    ours, theirs = both(server, postgres_url, work)
    assert ours == theirs
    assert ours[0] == [1, 2]
    assert ours[3] == [Decimal("1.50"), Decimal("-2")]
    assert ours[8] == [dt.datetime(2024, 2, 29, 12, 34, 56, 500000)]
    assert ours[-2] == [
        (1, [1, 2], ["a"]),
        (2, [None, 3], [None, "b"]),
        (3, None, []),
        (4, [], ["c", "d"]),
    ]


@pytest.mark.postgres
def test_arrays_in_catalog_queries_as_postgres(server, postgres_url: str) -> None:
    """``= ANY`` of an array literal, ``array_agg`` with ORDER BY and ``::regtype::text`` in a
    catalog query; a malformed array literal is 22P02, as in PostgreSQL."""
    import psycopg

    queries = [
        "SELECT t.oid, t.typname, t.typelem::regtype::text, t.typarray FROM pg_catalog.pg_type t"
        " WHERE t.oid = ANY('{23,1007,NULL}'::oid[]) ORDER BY t.oid",
        "SELECT array_agg(t.typname::text ORDER BY t.typlen DESC, t.oid) FROM pg_type t"
        " WHERE t.oid = ANY('{16,21,23,20,25}'::oid[])",
        "SELECT 0::regtype::text, 1185::regtype::text, 23 = ANY(NULL::oid[]) FROM pg_type"
        " WHERE oid = 23",
    ]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for q in queries:
            assert ours.execute(q).fetchall() == pg.execute(q).fetchall(), q
        bad = "SELECT typname FROM pg_type WHERE oid = ANY('{23,x}'::oid[])"
        for c in (ours, pg):
            with pytest.raises(psycopg.errors.InvalidTextRepresentation):
                c.execute(bad)


@pytest.mark.postgres
def test_any_of_an_index_key_vector_as_postgres(server, postgres_url: str, table_name: str) -> None:
    """``attnum = ANY(indkey)`` (an int2vector, as SQLAlchemy's index reflection reads it)."""
    import psycopg

    query = (
        "SELECT a.attname::text FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a"
        " ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
        f" WHERE i.indrelid = '{table_name}'::regclass ORDER BY 1"
    )
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for c in (ours, pg):
            c.execute(f"CREATE TABLE {table_name} (a int, b text, c int)")
            c.execute(f"CREATE INDEX {table_name}_i ON {table_name} (c, a)")
        try:
            assert (
                ours.execute(query).fetchall() == pg.execute(query).fetchall() == [("a",), ("c",)]
            )
        finally:
            for c in (ours, pg):
                c.execute(f"DROP TABLE {table_name}")


@pytest.mark.postgres
def test_pg_type_rows_as_postgres(server, postgres_url: str) -> None:
    """Each type changeflow has, as pg_type describes it in PostgreSQL (its array's OID
    where changeflow has that array type too)."""
    import psycopg

    from changeflow.adapter.system_tables import TYPES

    oids = ",".join(str(o) for o in sorted({o for o, _, _ in TYPES.values()}))
    query = (
        "SELECT oid, typname::text, typnamespace, typlen, typbyval, typtype, typcategory,"
        " typdelim, typelem, typalign, typstorage, typbasetype, typarray"
        f" FROM pg_catalog.pg_type WHERE oid = ANY('{{{oids}}}'::oid[]) ORDER BY oid"
    )
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        got, want = ours.execute(query).fetchall(), pg.execute(query).fetchall()
    assert len(got) == len(want) == len(oids.split(","))
    for a, b in zip(got, want, strict=True):
        assert a[:-1] == b[:-1]
        assert a[-1] in (0, b[-1])  # 0 where changeflow has no array of the type
    assert sum(1 for a in got if a[-1]) >= 12
