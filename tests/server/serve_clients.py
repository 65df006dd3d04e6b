"""Running the real psql client (from the machine's PostgreSQL binaries) in tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any


def _psql() -> str | None:
    try:
        bindir = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return shutil.which("psql")
    path = Path(bindir) / "psql"
    return str(path) if path.exists() else shutil.which("psql")


PSQL = _psql()


def psql(
    server: Any, *args: str, password: str | None = None, user: str = "tester"
) -> subprocess.CompletedProcess[str]:
    """Run psql against ``server`` with ``args``; its output and exit status."""
    assert PSQL is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env |= {"PGCONNECT_TIMEOUT": "10", "PSQLRC": "/dev/null"}
    if password is not None:
        env["PGPASSWORD"] = password
    cmd = [PSQL, "-X", "-w", "-h", server.host, "-p", str(server.port), "-U", user]
    cmd += ["-d", "materialize", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
