"""psycopg's nested transactions through ``changeflow serve``: ``conn.transaction()`` inside
another sends SAVEPOINT, then RELEASE or ROLLBACK TO; an exception in the inner block undoes
only its writes, and the outer block commits the rest (it failed with a syntax error)."""

from __future__ import annotations

import psycopg
import pytest


class _Undo(Exception):
    pass


def test_nested_transactions_roll_back_the_inner_block_only(server, table_name: str) -> None:
    t = table_name
    with server.connect(autocommit=False) as conn:
        conn.execute(f"CREATE TABLE {t} (k int)")
        conn.commit()
        with conn.transaction():
            conn.execute(f"INSERT INTO {t} VALUES (1)")
            with pytest.raises(_Undo), conn.transaction():
                conn.execute(f"INSERT INTO {t} VALUES (2)")
                raise _Undo
            with conn.transaction():
                conn.execute(f"INSERT INTO {t} VALUES (3)")
            with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
                conn.execute(f"INSERT INTO {t} VALUES (4)")
                conn.execute("SELECT 1 / 0")
            conn.execute(f"INSERT INTO {t} VALUES (5)")
    with server.connect() as other:
        rows = other.execute(f"SELECT k FROM {t} ORDER BY k").fetchall()
    assert rows == [(1,), (3,), (5,)]
