"""What a session knows of itself, as PostgreSQL's functions give it: ``current_database()``,
``current_user`` (``session_user``, ``user``), ``current_schema()``, ``pg_backend_pid()`` and
``version()``, constants of the statement that calls them."""

from __future__ import annotations

import os
from contextvars import ContextVar
from dataclasses import dataclass, field

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.compute.types import INT4, TEXT
from changeflow.errors import PlanError


@dataclass(frozen=True)
class SessionNames:
    """The session's user, database and backend process id (a server's client names the
    first two; the server gives each client its own id)."""

    user: str = "changeflow"
    database: str = "changeflow"
    pid: int = field(default_factory=lambda: os.getpid() % 2**31)


SESSION_NAMES: ContextVar[SessionNames | None] = ContextVar("session_names", default=None)

VERSION = "PostgreSQL 15.0 on changeflow"


def session_value(node: exp.Expression) -> X.Lit | None:
    """``node`` as the session's constant, if it is one of these functions."""
    names = SESSION_NAMES.get() or SessionNames()
    if isinstance(node, exp.CurrentDatabase):
        return X.Lit(names.database, TEXT)
    if isinstance(node, exp.CurrentUser | exp.SessionUser):
        return X.Lit(names.user, TEXT)
    if (
        isinstance(node, exp.Column)
        and not node.table
        and node.name.lower() == "user"
        and not node.this.args.get("quoted")
    ):
        return X.Lit(names.user, TEXT)
    if isinstance(node, exp.CurrentSchema):
        from changeflow.adapter.catalog import SEARCH_PATH

        path = [s for s in SEARCH_PATH.get() if s != "$user"]
        return X.Lit(path[0] if path else "public", TEXT)
    if isinstance(node, exp.CurrentVersion):
        return X.Lit(VERSION, TEXT)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "pg_backend_pid":
        if node.expressions:
            raise PlanError("function pg_backend_pid() takes no arguments", sqlstate="42883")
        return X.Lit(names.pid, INT4)
    return None
