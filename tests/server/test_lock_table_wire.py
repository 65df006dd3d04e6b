"""LOCK TABLE over the wire, two clients side by side, here and on PostgreSQL 15: refused
outside a transaction block (25P01); a mode that conflicts with writes makes another client's
UPDATE wait for the locking transaction's end and then apply to what it committed (nothing
lost), makes another client's LOCK … NOWAIT fail (55P03); a weaker mode makes no one wait."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

pytestmark = pytest.mark.postgres


def _outcome(conn: psycopg.Connection, sql: str) -> Any:
    try:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else cur.statusmessage
    except psycopg.Error as e:
        return e.sqlstate


def _story(url: str, table: str) -> list[Any]:
    """What two clients see: one locks the table, the other's UPDATE waits for its COMMIT."""
    a = psycopg.connect(url, autocommit=True)
    b = psycopg.connect(url, autocommit=True)
    seen: list[Any] = []
    try:
        for sql in (f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id int, v int)"):
            a.execute(sql)
        a.execute(f"INSERT INTO {table} VALUES (1, 0)")
        seen.append(_outcome(a, f"LOCK TABLE {table}"))
        seen += [_outcome(a, "BEGIN"), _outcome(a, f"LOCK {table} IN SHARE ROW EXCLUSIVE MODE")]
        seen += [_outcome(b, "BEGIN"), _outcome(b, f"LOCK TABLE {table} IN EXCLUSIVE MODE NOWAIT")]
        seen += [_outcome(b, "ROLLBACK"), _outcome(b, f"SELECT v FROM {table}")]
        waited: list[Any] = []
        update = f"UPDATE {table} SET v = v + 10"
        thread = threading.Thread(target=lambda: waited.append(_outcome(b, update)))
        thread.start()
        time.sleep(1.0)
        seen.append(("waiting", thread.is_alive(), list(waited)))
        seen += [_outcome(a, f"UPDATE {table} SET v = v + 1"), _outcome(a, "COMMIT")]
        thread.join(30)
        seen += [waited, _outcome(b, f"SELECT v FROM {table}")]
        seen += [_outcome(a, "BEGIN"), _outcome(a, f"LOCK TABLE {table} IN ROW EXCLUSIVE MODE")]
        seen += [_outcome(b, f"UPDATE {table} SET v = 0"), _outcome(a, "COMMIT")]
        seen += [_outcome(a, "BEGIN"), _outcome(a, "LOCK TABLE nosuch"), _outcome(a, "ROLLBACK")]
    finally:
        a.execute(f"DROP TABLE IF EXISTS {table}")
        a.close()
        b.close()
    return seen


def test_lock_table_as_postgres(server, postgres_url: str) -> None:
    ours = _story(server.dsn(), "locked_here")
    assert ours == _story(postgres_url, "locked_here")
    assert ours[7] == ("waiting", True, [])  # (the UPDATE waited for the COMMIT)
