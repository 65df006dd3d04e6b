"""Advisory locks through the server: the warning an unlock of a lock not held gives and the
void results (text and binary) as PostgreSQL 15 sends them, clients excluding each other, a
cancel request ending a wait, and a disconnect or DISCARD ALL (not DISCARD TEMP) letting go."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from psycopg import errors
from serve_clients import notices_of

K = 918_000  # keys of this file's own (PostgreSQL's locks are its server's, shared)


@pytest.mark.postgres
def test_warning_and_void_results_as_postgres(server, postgres_url: str) -> None:
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for sql in (f"SELECT pg_advisory_unlock({K})", f"SELECT pg_advisory_unlock_shared({K}, 2)"):
            assert notices_of(ours, sql) == notices_of(pg, sql), sql
        sql = f"SELECT pg_advisory_lock({K}), pg_try_advisory_lock({K}), pg_advisory_unlock_all()"
        for binary in (False, True):
            got = ours.cursor(binary=binary).execute(sql)
            want = pg.cursor(binary=binary).execute(sql)
            assert got.fetchall() == want.fetchall()
            assert [d.type_code for d in got.description] == [d.type_code for d in want.description]


def test_clients_exclude_each_other_and_a_cancel_ends_a_wait(server) -> None:
    with server.connect() as a, server.connect() as b:
        a.execute(f"SELECT pg_advisory_lock({K})")
        assert b.execute(f"SELECT pg_try_advisory_lock({K})").fetchone() == (False,)
        timer = threading.Timer(0.5, b.cancel)
        timer.start()
        started = time.monotonic()
        with pytest.raises(errors.QueryCanceled):
            b.execute(f"SELECT pg_advisory_lock({K})")  # waits until the cancel
        assert time.monotonic() - started < 10
        assert b.execute("SELECT 1").fetchone() == (1,)
        a.execute("DISCARD TEMP")  # keeps the advisory locks
        assert b.execute(f"SELECT pg_try_advisory_lock({K})").fetchone() == (False,)
        a.execute("DISCARD ALL")  # lets them go
        assert b.execute(f"SELECT pg_try_advisory_lock({K})").fetchone() == (True,)
        a.execute(f"SELECT pg_advisory_lock({K} + 1)")
    with server.connect() as c:  # a's connection closed: its lock went with it
        assert c.execute(f"SELECT pg_try_advisory_lock({K} + 1)").fetchone() == (True,)
