"""Query cursors through the server, side by side with PostgreSQL 15: FETCH and MOVE in every
direction with their tags, psycopg's server-side (named) cursors, scrolling; a cursor of a
SUBSCRIBE only goes forward."""

from __future__ import annotations

import psycopg
import pytest

STATEMENTS = [
    "FETCH 2 FROM c",
    "FETCH BACKWARD 1 IN c",
    "MOVE FORWARD 3 c",
    "FETCH PRIOR c",
    "FETCH LAST c",
    "MOVE BACKWARD ALL c",
    "FETCH ABSOLUTE -2 c",
    "FETCH RELATIVE -1 c",
    "MOVE ABSOLUTE 99 c",
    "FETCH BACKWARD 2 c",
]


def _run(conn: psycopg.Connection, sql: str) -> tuple:
    try:
        cur = conn.execute(sql)
    except psycopg.Error as e:
        return ("error", e.sqlstate)
    rows = cur.fetchall() if cur.description is not None else None
    return cur.statusmessage, rows


@pytest.mark.postgres
def test_fetch_and_move_as_postgres(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    with server.connect(autocommit=False) as ours, psycopg.connect(postgres_url) as pg:
        for conn in (ours, pg):
            conn.execute(f"CREATE TABLE {t} (id int, v text)")
            conn.execute(f"INSERT INTO {t} SELECT g, 'v' || g FROM generate_series(1, 5) g")
            conn.commit()
        try:
            for conn in (ours, pg):
                conn.execute(f"DECLARE c SCROLL CURSOR FOR SELECT id, v FROM {t} ORDER BY id")
            for sql in STATEMENTS:
                assert _run(ours, sql) == _run(pg, sql), sql
            for conn in (ours, pg):
                conn.rollback()
            assert _run(ours, "FETCH c") == _run(pg, "FETCH c") == ("error", "34000")
            for conn in (ours, pg):
                conn.rollback()
                with conn.cursor("named", scrollable=True) as named:
                    named.execute(f"SELECT id FROM {t} ORDER BY id")
                    assert named.fetchmany(3) == [(1,), (2,), (3,)]
                    named.scroll(-2)
                    assert named.fetchone() == (2,)
                    named.scroll(0, mode="absolute")
                    assert named.fetchall() == [(1,), (2,), (3,), (4,), (5,)]
                conn.rollback()
        finally:
            for conn in (ours, pg):
                conn.rollback()
                conn.execute(f"DROP TABLE {t}")
                conn.commit()


def test_a_subscribe_cursor_only_goes_forward(server, table_name: str) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (k int)")
        c.commit()
        c.execute(f"DECLARE s CURSOR FOR SUBSCRIBE {table_name}")
        for sql in ("FETCH BACKWARD 1 s", "MOVE 1 s", "FETCH PRIOR s"):
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
                c.execute(sql)
        c.execute("CLOSE s")
