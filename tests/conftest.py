"""Shared fixtures: one local SparkSession and one throwaway PostgreSQL server for the whole run,
each started only when a test asks for it; hypothesis profiles."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

if str(Path(__file__).parent) not in sys.path:  # --import-mode=importlib leaves sys.path alone
    sys.path.insert(0, str(Path(__file__).parent))

from postgres_server import database_for_test, throwaway_postgres  # noqa: E402

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def spark():
    """The shared SparkSession on local[2]."""
    from changeflow.spark import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of the session's throwaway PostgreSQL server (its ``postgres`` database)."""
    with throwaway_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def consensus_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh consensus location: a SQLite file, or a new database on the session's server."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'consensus.sqlite'}"
    url = request.getfixturevalue("postgres_url")
    return database_for_test(url, request.node.name)
