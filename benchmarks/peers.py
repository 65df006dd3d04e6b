"""Peers the benchmarks start for a run: a throwaway PostgreSQL 15 server from the machine's
binaries (the test suite's ``tests/postgres_server.py``)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def postgres_server(say) -> Iterator[str | None]:  # noqa: ANN001
    """The URL of a throwaway PostgreSQL server; None (said with ``say``) if none starts here."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    try:
        from postgres_server import throwaway_postgres

        say("starting a throwaway PostgreSQL server…")
        server = throwaway_postgres()
        url = server.__enter__()
    except (ImportError, RuntimeError) as e:
        say(f"PostgreSQL skipped: {str(e).splitlines()[0]}")
        yield None
        return
    try:
        yield url
    finally:
        server.__exit__(None, None, None)
