"""A Query message with several writes runs as one implicit transaction, as PostgreSQL runs
it: all of them commit, or none (compared with PostgreSQL)."""

from __future__ import annotations

import psycopg
import pytest

BATCHES = [
    "INSERT INTO {t} VALUES (1, 'a'); INSERT INTO {t} VALUES (2, 'b')",
    "INSERT INTO {t} VALUES (3, 'c'); UPDATE {t} SET v = 'z' WHERE id = 1; "
    "INSERT INTO {t} VALUES (1 / 0, 'boom')",
    "DELETE FROM {t} WHERE id = 2; INSERT INTO {t} VALUES (4, 'd')",
    "UPDATE {t} SET v = v || '!'; INSERT INTO {t} VALUES ('x', 'bad')",
]


def _state(conn: psycopg.Connection, t: str) -> list[tuple]:
    return conn.execute(f"SELECT id, v FROM {t} ORDER BY id").fetchall()


@pytest.mark.postgres
def test_several_writes_in_one_query_are_one_transaction(
    server, postgres_url: str, table_name: str
) -> None:
    t = table_name
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(f"CREATE TABLE {t} (id int, v text)")
        try:
            for batch in BATCHES:
                outcomes = []
                for conn in (ours, pg):
                    try:
                        conn.execute(batch.format(t=t).encode())  # bytes: the simple protocol
                        outcomes.append(None)
                    except psycopg.Error as e:
                        outcomes.append(e.sqlstate)
                assert outcomes[0] == outcomes[1], batch
                assert _state(ours, t) == _state(pg, t), batch
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {t}")


def test_an_embedded_script_of_writes_is_one_transaction(tmp_path) -> None:
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE b (id int)")
    with pytest.raises(DatabaseError) as caught:
        conn.execute("INSERT INTO b VALUES (1); INSERT INTO b VALUES (1 / 0)")
    assert caught.value.sqlstate == "22012"
    assert conn.execute("SELECT count(*) FROM b").fetchall() == [(0,)]
    conn.execute("INSERT INTO b VALUES (1); INSERT INTO b VALUES (2)")
    assert conn.execute("SELECT count(*) FROM b").fetchall() == [(2,)]
    conn.close()
