"""Fixtures: ``changeflow serve`` as a subprocess on a free port and a fresh home, stopped with
SIGTERM; one shared server for the tests that need no special flags."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

if str(Path(__file__).parent) not in sys.path:  # --import-mode=importlib leaves sys.path alone
    sys.path.insert(0, str(Path(__file__).parent))


@dataclass
class Served:
    """A running ``changeflow serve``."""

    proc: subprocess.Popen[str]
    host: str
    port: int
    home: Path
    log: Path

    def dsn(self, user: str = "tester", **extra: str) -> str:
        parts = {"host": self.host, "port": str(self.port), "user": user, "dbname": "materialize"}
        parts |= {"connect_timeout": "10"} | extra
        return " ".join(f"{k}={v}" for k, v in parts.items())

    def connect(self, autocommit: bool = True, **extra: str) -> psycopg.Connection:
        return psycopg.connect(self.dsn(**extra), autocommit=autocommit)

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, then the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


def start(home: Path, log: Path, *args: str) -> Served:
    """Start a server on ``home`` and wait for the line that says where it listens."""
    cmd = [sys.executable, "-m", "changeflow.cli", "serve", "--home", str(home)]
    cmd += ["--listen", "127.0.0.1:0", *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("a") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"listening on ([\d.]+):(\d+)", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"the server did not start: {line!r}\n{log.read_text()}")
    return Served(proc, m[1], int(m[2]), home, log)


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """A factory: start a server with extra flags; each is stopped at the end of the test."""
    started: list[Served] = []

    def make(*args: str, home: Path | None = None) -> Served:
        served = start(home or tmp_path / f"home{len(started)}", tmp_path / "server.log", *args)
        started.append(served)
        return served

    yield make
    for served in started:
        if served.proc.poll() is None:
            served.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server shared by the tests that need no special flags."""
    root = tmp_path_factory.mktemp("serve")
    served = start(root / "home", root / "server.log")
    yield served
    assert served.stop() == 0
    assert "Traceback" not in served.stderr(), served.stderr()


@pytest.fixture
def conn(server: Served) -> Iterator[psycopg.Connection]:
    with server.connect() as c:
        yield c


_names = iter(range(10**6))


@pytest.fixture
def table_name() -> str:
    """A table name no other test uses (the shared server keeps one home)."""
    return f"t{next(_names)}_{os.getpid()}"
