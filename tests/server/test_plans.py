"""A query sent through the extended protocol (Parse, Bind, Describe, Execute) is planned once:
the statement described is the one run, with the plan kept for it."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg

from changeflow.adapter.environment import Environment
from changeflow.adapter.sql import query as Q
from changeflow.config import Config
from changeflow.server.server import Server


def test_a_described_query_is_run_with_the_plan_made_for_it(tmp_path: Path, monkeypatch) -> None:
    env = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    server = Server(env, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    planned: list[str] = []
    original = Q.plan_query
    monkeypatch.setattr(Q, "plan_query", lambda *a, **k: planned.append("") or original(*a, **k))
    dsn = f"host={server.host} port={server.port} user=tester dbname=materialize"
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE t (a int NOT NULL, b text)")
            c.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
            counts = []
            for a, b in ((1, "x"), (2, "y"), (1, "x")):
                before = len(planned)
                assert c.execute("SELECT b FROM t WHERE a = %s", (a,)).fetchall() == [(b,)]
                counts.append(len(planned) - before)
            # made when it was described, not again to run it; the second of a shape is
            # planned twice more (other literals: where its own go), the third is not
            assert counts == [1, 3, 0]
    finally:
        server.shutdown()
        thread.join(timeout=60)
        env.close()
