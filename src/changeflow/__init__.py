"""changeflow: time-varying collections on Spark, kept exact, consistent and materialized."""

from __future__ import annotations

from typing import Any

apilevel = "2.0"  # PEP 249: changeflow.connect() is a DB-API 2.0 module's connect
threadsafety = 1
paramstyle = "format"
_ERRORS = (
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "ProgrammingError",
    "NotSupportedError",
    "InternalError",
)


def connect(*args: Any, **kwargs: Any) -> Any:
    """A PEP 249 connection to a home (see :func:`changeflow.adapter.connection.connect`)."""
    from changeflow.adapter.connection import connect as open_connection

    return open_connection(*args, **kwargs)


def __getattr__(name: str) -> Any:
    """PEP 249's exception classes, imported when first asked for."""
    if name in _ERRORS:
        from changeflow.adapter import connection

        return getattr(connection, name)
    raise AttributeError(f"module 'changeflow' has no attribute {name!r}")
