"""Served: a materialized view reports its step's error (22012) on every read through
psycopg while the offending row is there, and its rows once the row is gone."""

from __future__ import annotations

import psycopg
import pytest


def test_a_failing_view_reports_its_error_on_every_read(server, table_name: str) -> None:
    t = table_name
    with server.connect(autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {t} (id int, a int, b int)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 6, 2), (2, 6, 3)")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_q AS SELECT id, a / b AS q FROM {t}")
        assert sorted(conn.execute(f"SELECT * FROM {t}_q").fetchall()) == [(1, 3), (2, 2)]
        conn.execute(f"INSERT INTO {t} VALUES (3, 1, 0)")
        for change in [None, f"INSERT INTO {t} VALUES (4, 8, 4)"]:
            if change is not None:
                conn.execute(change)
            for _ in range(3):
                with pytest.raises(psycopg.errors.DivisionByZero):
                    conn.execute(f"SELECT * FROM {t}_q")
        conn.execute(f"DELETE FROM {t} WHERE b = 0")
        want = [(1, 3), (2, 2), (4, 2)]
        for _ in range(2):
            assert sorted(conn.execute(f"SELECT * FROM {t}_q").fetchall()) == want
        conn.execute(f"DROP MATERIALIZED VIEW {t}_q")
        conn.execute(f"DROP TABLE {t}")
