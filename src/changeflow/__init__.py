"""changeflow: time-varying collections on Spark, kept exact, consistent and materialized."""

from __future__ import annotations

from typing import Any


def connect(*args: Any, **kwargs: Any) -> Any:
    """A PEP 249 connection to a home (see :func:`changeflow.adapter.connection.connect`)."""
    from changeflow.adapter.connection import connect as open_connection

    return open_connection(*args, **kwargs)
