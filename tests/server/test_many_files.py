"""A server process with more than 1,024 open files (a long-running one holds shards, blobs and
clients) still accepts clients and serves them: sockets are waited on by ``poll``, where
``select`` refuses any descriptor past 1023."""

from __future__ import annotations

import fcntl
import gc
import os
import resource
import socket
import threading
from pathlib import Path

import psycopg
import pytest

from changeflow.adapter.environment import Environment
from changeflow.config import Config
from changeflow.server.server import Server

OPEN = 1100  # descriptors held, so the server's sockets come after them


def test_a_server_past_1024_open_files_serves(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < OPEN + 200:
        if hard != resource.RLIM_INFINITY and hard < OPEN + 200:
            pytest.skip(f"the open-file limit {hard} is below {OPEN + 200}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN + 200, hard))
    gc.collect()  # files an earlier test dropped are closed now, not in the middle of this one
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(OPEN)]
    env = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    server = Server(env, "127.0.0.1", 0)
    # A descriptor closed elsewhere meanwhile (a collected file, another thread) leaves a hole
    # the listener may have taken: move it past 1023 so the test does not depend on that.
    high = fcntl.fcntl(server.listener.fileno(), fcntl.F_DUPFD, OPEN)
    server.listener.close()
    server.listener = socket.socket(fileno=high)
    assert server.listener.fileno() > 1023
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    dsn = f"host={server.host} port={server.port} user=t dbname=materialize connect_timeout=20"
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE t (a int)")
            c.execute("INSERT INTO t VALUES (1), (2)")
            assert c.execute("SELECT sum(a) FROM t").fetchone() == (3,)
    finally:
        server.shutdown()
        thread.join(timeout=60)
        env.close()
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
