"""Several clients at once: each gets its own session; every acknowledged write is visible to
every later read, whichever client reads."""

from __future__ import annotations

import threading

import psycopg


def test_concurrent_clients_see_every_acknowledged_write(server, table_name: str) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (client int NOT NULL, n int NOT NULL)")
    clients, writes = 6, 10
    acknowledged: list[int] = [0] * clients
    problems: list[str] = []

    def work(k: int) -> None:
        try:
            with server.connect() as c:
                for n in range(writes):
                    c.execute(f"INSERT INTO {table_name} VALUES (%s, %s)", (k, n), binary=k % 2)
                    acknowledged[k] += 1
                    floor = sum(acknowledged)  # acknowledged, by anyone, before this read
                    seen = c.execute(f"SELECT count(*) FROM {table_name}").fetchone()[0]
                    if not floor <= seen <= clients * writes:
                        problems.append(f"client {k} saw {seen} rows after {floor} were acked")
        except psycopg.Error as e:
            problems.append(f"client {k}: {e.sqlstate} {e}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not problems
    with server.connect() as c:
        rows = c.execute(f"SELECT client, count(*) FROM {table_name} GROUP BY client").fetchall()
    assert sorted(rows) == [(k, writes) for k in range(clients)]
