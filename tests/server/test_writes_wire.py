"""Writes over the wire, compared with PostgreSQL: MERGE with psycopg's parameters (the
extended protocol, and prepared after five runs), its command tag and row count in an upsert
loop; RETURNING of UPDATE … FROM's columns, described before it runs."""

from __future__ import annotations

import psycopg
import pytest

UPSERT = (
    "MERGE INTO {t} t USING (SELECT %s AS id, %s AS v) s ON t.id = s.id "
    "WHEN MATCHED AND s.v IS NULL THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + 1 "
    "WHEN NOT MATCHED AND s.v IS NOT NULL THEN INSERT (id, v) VALUES (s.id, s.v)"
)
CHANGES = [(1, "a"), (2, "b"), (1, "a2"), (3, None), (2, None), (3, "c"), (1, "a3"), (4, "d")]


@pytest.mark.postgres
def test_merge_upserts_with_parameters_as_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    t = table_name
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text, n int DEFAULT 0)")
        try:
            for id_, v in CHANGES * 2:  # past psycopg's prepare threshold
                tags = []
                for conn in (ours, pg):
                    cur = conn.execute(UPSERT.format(t=t), (id_, v))
                    tags.append((cur.statusmessage, cur.rowcount))
                assert tags[0] == tags[1], (id_, v)
            query = f"SELECT id, v, n FROM {t} ORDER BY id"
            assert ours.execute(query).fetchall() == pg.execute(query).fetchall()
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {t}")


@pytest.mark.postgres
def test_update_from_returning_is_described_and_run(
    server, postgres_url: str, table_name: str
) -> None:
    t = table_name
    sql = (
        f"UPDATE {t} SET v = s.w FROM (VALUES (%s, %s)) AS s(id, w) WHERE {t}.id = s.id "
        f"RETURNING s.*, {t}.n + 1 AS next"
    )
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text, n int DEFAULT 0)")
            conn.execute(f"INSERT INTO {t} (id, v) VALUES (1, 'a'), (2, 'b')")
        try:
            got = []
            for conn in (ours, pg):
                cur = conn.execute(sql, (2, "two"), prepare=True)
                got.append(([d.name for d in cur.description], cur.fetchall(), cur.rowcount))
            assert got[0] == got[1] == (["id", "w", "next"], [(2, "two", 1)], 1)
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {t}")


@pytest.mark.postgres
def test_rows_moved_by_a_write_in_with(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    sql = (
        f"WITH moved AS (DELETE FROM {t} WHERE id <= %s RETURNING id, v) "
        f"INSERT INTO {t}_old SELECT id, upper(v) FROM moved RETURNING *"
    )
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text)")
            conn.execute(f"CREATE TABLE {t}_old (id int, v text)")
            conn.execute(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        try:
            got = []
            for conn in (ours, pg):
                cur = conn.execute(sql, (2,), prepare=True)
                moved = sorted(cur.fetchall())
                rest = conn.execute(f"SELECT id FROM {t} ORDER BY id").fetchall()
                got.append((cur.statusmessage, moved, rest))
            assert got[0] == got[1] == ("INSERT 0 2", [(1, "A"), (2, "B")], [(3,)])
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {t}, {t}_old")


@pytest.mark.postgres
def test_copy_and_executemany_compute_generated_columns(
    server, postgres_url: str, table_name: str
) -> None:
    t = table_name
    create = f"CREATE TABLE {t} (id int, a int, b int GENERATED ALWAYS AS (a * 2) STORED)"
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            got = []
            for conn in (ours, pg):
                conn.execute(create)
                with conn.cursor().copy(f"COPY {t} FROM STDIN") as copy:  # (id, a): b is left out
                    copy.write("1\t10\n2\t\\N\n")
                with conn.cursor().copy(f"COPY {t} (id, a) FROM STDIN (FORMAT csv)") as copy:
                    copy.write("3,7\n")
                with (
                    pytest.raises(psycopg.Error) as refused,
                    conn.cursor().copy(f"COPY {t} (id, b) FROM STDIN") as copy,
                ):
                    copy.write("4\t8\n")
                cur = conn.cursor()
                cur.executemany(f"INSERT INTO {t} (id, a) VALUES (%s, %s)", [(5, 1), (6, 2)])
                with pytest.raises(psycopg.Error) as given:
                    cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)", [(7, 1, 2)])
                rows = conn.execute(f"SELECT * FROM {t} ORDER BY id").fetchall()
                got.append((rows, refused.value.sqlstate, given.value.sqlstate))
            written = [(1, 10, 20), (2, None, None), (3, 7, 14), (5, 1, 2), (6, 2, 4)]
            assert got[0] == got[1] == (written, "42P10", "428C9")
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE IF EXISTS {t}")


@pytest.mark.postgres
def test_copy_with_defaults_inside_a_transaction(
    server, postgres_url: str, table_name: str
) -> None:
    """A COPY whose left-out columns have DEFAULTs (inserted by statements) inside BEGIN: it
    failed the transaction (25P02) before."""
    t = table_name
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            got = []
            for conn in (ours, pg):
                conn.execute(f"CREATE TABLE {t} (id int, a int DEFAULT 5)")
                for end in ("COMMIT", "ROLLBACK"):
                    conn.execute("BEGIN")
                    with conn.cursor().copy(f"COPY {t} (id) FROM STDIN") as copy:
                        copy.write("1\n2\n" if end == "COMMIT" else "3\n")
                    inside = conn.execute(f"SELECT count(*) FROM {t}").fetchone()
                    conn.execute(end)
                    got.append(inside)
                got.append(conn.execute(f"SELECT * FROM {t} ORDER BY id").fetchall())
            assert got[:3] == got[3:] == [(2,), (3,), [(1, 5), (2, 5)]]
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE IF EXISTS {t}")
