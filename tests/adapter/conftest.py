"""Fixtures of the adapter tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from changeflow.adapter.environment import Environment
from changeflow.config import Config


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator:
    """An environment on a fresh home shared by one module's tests, without a host thread
    (each test runs what it needs)."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    home = tmp_path_factory.mktemp(module) / "home"
    environment = Environment(Config.load(home=str(home)), host_seconds=None)
    yield environment
    environment.close()
