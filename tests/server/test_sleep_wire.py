"""pg_sleep over the wire: a cancel request ends the wait (57014), and the connection goes on."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest


def test_pg_sleep_ends_on_cancel(server) -> None:
    with server.connect() as conn:
        threading.Timer(0.5, conn.cancel).start()
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT pg_sleep(30)")
        assert time.monotonic() - started < 20
        conn.rollback()
        assert conn.execute("SELECT pg_sleep(0.01)").fetchall() == [("",)]
