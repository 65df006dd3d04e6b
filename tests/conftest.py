"""Shared fixtures: one local SparkSession for the whole run; hypothesis profiles."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

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
