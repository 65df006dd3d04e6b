"""psycopg's nested transactions and SQLAlchemy's ``begin_nested()`` through ``changeflow
serve``: an inner block sends SAVEPOINT, then RELEASE or ROLLBACK TO; an exception (or a
rollback) in it undoes only its writes, and the outer block commits the rest."""

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


def test_sqlalchemy_begin_nested_rolls_back_the_inner_block_only(server, table_name: str) -> None:
    import sqlalchemy as sa

    t = table_name
    engine = sa.create_engine(
        f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize"
    )
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE TABLE {t} (k int)"))
        with engine.begin() as conn:
            conn.execute(sa.text(f"INSERT INTO {t} VALUES (1)"))
            nested = conn.begin_nested()
            conn.execute(sa.text(f"INSERT INTO {t} VALUES (2)"))
            nested.rollback()
            with conn.begin_nested():
                conn.execute(sa.text(f"INSERT INTO {t} VALUES (3)"))
        with engine.connect() as conn:
            rows = conn.execute(sa.text(f"SELECT k FROM {t} ORDER BY k")).fetchall()
        assert [tuple(r) for r in rows] == [(1,), (3,)]
    finally:
        engine.dispose()
