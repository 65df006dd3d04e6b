"""A query's memory budget (--query-memory): a runaway query ends with 53200 and the server
goes on; joins written in a cross-product order are planned on their equalities instead."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

ROWS = 2000


def _rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) >> 10
    raise AssertionError("no VmRSS")


def _fill(c: psycopg.Connection, name: str, columns: str) -> None:
    c.execute(f"CREATE TABLE {name} ({columns})")
    with c.cursor().copy(f"COPY {name} FROM STDIN") as copy:
        for i in range(ROWS):
            copy.write_row((i, i % 50))


def test_a_runaway_query_ends_with_53200_and_the_server_goes_on(start_server) -> None:
    server = start_server("--http", "off", "--query-memory", "300")
    with server.connect() as c:
        _fill(c, "a", "x int NOT NULL, y int NOT NULL")
        _fill(c, "b", "y int NOT NULL, z int NOT NULL")
        _fill(c, "c", "x int NOT NULL, z int NOT NULL")
        _fill(c, "d", "y int NOT NULL, w int NOT NULL")
        before = _rss_mb(server.proc.pid)
        # a x b x c: 3.4e9 rows; it must end with a clear error, not take the machine
        with pytest.raises(psycopg.errors.OutOfMemory) as e:
            c.execute("SELECT count(*) FROM a, b, c")
        assert e.value.sqlstate == "53200"
        assert "past its budget of 300 MB" in str(e.value), e.value
        assert _rss_mb(server.proc.pid) - before < 1500
        # written with a and b first (no equality between them: a cross product of 4M pairs
        # if run as written), the equalities give an order without one
        got = c.execute(
            "SELECT count(*) FROM a, b, c, d WHERE a.x = c.x AND b.z = c.z AND b.y = d.y"
        ).fetchone()
        assert got == (ROWS * ROWS // 50,), got  # each a: one c, 40 b of its z, one d each
        assert c.execute("SELECT count(*) FROM a").fetchone() == (ROWS,)
