"""A sink writes char(n) values as PostgreSQL holds them: padded with blanks to n, from a
table and from a view, through later changes."""

from __future__ import annotations

import psycopg
import pytest

import changeflow

pytestmark = pytest.mark.postgres


def test_char_values_reach_a_sink_padded(tmp_path, postgres_url: str) -> None:
    from postgres_server import database_for_test

    target = database_for_test(postgres_url, "char_sink")
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        conn.execute("CREATE TABLE t (id int NOT NULL, c char(4), v varchar(4))")
        conn.execute("INSERT INTO t VALUES (1, 'ab', 'ab'), (2, NULL, 'x'), (3, 'abcd', NULL)")
        conn.execute("CREATE MATERIALIZED VIEW w AS SELECT id, c, c::char(6) AS d FROM t")
        conn.execute(f"CREATE SINK t_out FROM t INTO '{target}' KEY (id)")
        conn.execute(f"CREATE SINK w_out FROM w INTO '{target}' KEY (id)")
        conn.execute("UPDATE t SET c = 'z' WHERE id = 3")
        conn.execute("INSERT INTO t VALUES (4, ' q', 'q ')")
        conn.commit()
        conn.env.tick()
        with psycopg.connect(target) as pg:
            table = pg.execute("SELECT id, c, v FROM t_out ORDER BY id").fetchall()
            view = pg.execute("SELECT id, c, d FROM w_out ORDER BY id").fetchall()
        assert table == [(1, "ab  ", "ab"), (2, None, "x"), (3, "z   ", None), (4, " q  ", "q ")]
        assert view == [
            (1, "ab  ", "ab    "),
            (2, None, None),
            (3, "z   ", "z     "),
            (4, " q  ", " q    "),
        ]
    finally:
        conn.close()
