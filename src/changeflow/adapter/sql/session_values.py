"""What a session knows of itself, as PostgreSQL's functions give it: ``current_database()``,
``current_user`` (``session_user``, ``user``), ``current_schema()``, ``current_schemas()``,
``pg_backend_pid()``,
``version()``, ``current_setting(name [, missing_ok])`` and ``set_config(name, value,
is_local)`` (which sets it for the session), constants of the statement that calls them."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from sqlglot import exp

from changeflow.adapter.advisory_locks import FUNCTIONS as ADVISORY_FUNCTIONS
from changeflow.adapter.sql_functions import user_call
from changeflow.compute import expr as X
from changeflow.compute.types import INT4, INT8, TEXT, array_of
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


def session_user(settings: dict[str, str] | None = None, user: str | None = None) -> str:
    """The role the session is authorized as: its connection's user (``user``), or the one
    SET SESSION AUTHORIZATION chose (in ``settings``: the statement's session's if not
    given)."""
    from changeflow.adapter.catalog import SESSION_SETTINGS

    settings = settings if settings is not None else SESSION_SETTINGS.get() or {}
    user = user or (SESSION_NAMES.get() or SessionNames()).user
    return settings.get("session_authorization") or user


def current_role(settings: dict[str, str] | None = None, user: str | None = None) -> str:
    """The role privileges are checked for: SET ROLE's, else the session user."""
    from changeflow.adapter.catalog import SESSION_SETTINGS

    settings = settings if settings is not None else SESSION_SETTINGS.get() or {}
    role = settings.get("role")
    return role if role and role != "none" else session_user(settings, user)


SEQUENCE_FUNCTIONS = ("nextval", "currval", "setval", "pg_get_serial_sequence")
SETTING_FUNCTIONS = ("current_setting", "set_config")
# the calls the planner answers here (by name, also as pg_catalog.name)
SESSION_FUNCTIONS = (*SEQUENCE_FUNCTIONS, *SETTING_FUNCTIONS, *ADVISORY_FUNCTIONS, "pg_backend_pid")


def session_value(node: exp.Expression, plan: Callable[[exp.Expression], X.Expr]) -> X.Expr | None:
    """``node`` as the session's constant, if it is one of these functions (or a sequence's
    function, :mod:`changeflow.adapter.sequences`), or an advisory lock's call (its arguments
    planned by ``plan``, :mod:`changeflow.adapter.advisory_locks`), or a call of a SQL
    function of the catalog (its body, :mod:`changeflow.adapter.sql_functions`)."""
    if (body := user_call(node)) is not None:
        return plan(body)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in SEQUENCE_FUNCTIONS:
        from changeflow.adapter.sequences import sequence_call

        return sequence_call(node)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ADVISORY_FUNCTIONS:
        from changeflow.adapter.advisory_locks import advisory_call
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        args = [
            coerce_text(str(a.this), INT8) if is_string_literal(a) else plan(a)
            for a in node.expressions
        ]
        return advisory_call(str(node.this).lower(), args)
    names = SESSION_NAMES.get() or SessionNames()
    if isinstance(node, exp.CurrentDatabase):
        return X.Lit(names.database, TEXT)
    if isinstance(node, exp.CurrentUser):
        return X.Lit(current_role(), TEXT)
    if isinstance(node, exp.SessionUser):
        return X.Lit(session_user(), TEXT)
    if (
        isinstance(node, exp.Column)
        and not node.table
        and node.name.lower() in ("user", "current_role")
        and not node.this.args.get("quoted")
    ):
        return X.Lit(current_role(), TEXT)
    if isinstance(node, exp.CurrentSchema):
        from changeflow.adapter.catalog import SEARCH_PATH

        path = [s for s in SEARCH_PATH.get() if s != "$user"]
        return X.Lit(path[0] if path else "public", TEXT)
    if isinstance(node, exp.CurrentSchemas):
        return _schemas(node.this)
    if isinstance(node, exp.CurrentVersion):
        return X.Lit(VERSION, TEXT)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in SETTING_FUNCTIONS:
        return _setting(str(node.this).lower(), node.expressions)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "pg_backend_pid":
        if node.expressions:
            raise PlanError("function pg_backend_pid() takes no arguments", sqlstate="42883")
        return X.Lit(names.pid, INT4)
    return None


def _schemas(implicit: exp.Expression | None) -> X.Lit:
    """``current_schemas(include_implicit)``: the search path's schemas that exist (with
    ``pg_catalog`` first if asked), as PostgreSQL lists them."""
    from changeflow.adapter.catalog import PUBLIC, SEARCH_PATH, pinned_state

    if not isinstance(implicit, exp.Boolean):
        raise PlanError("function current_schemas() takes a boolean constant", sqlstate="42883")
    state = pinned_state()
    known = set(state.schemas) if state is not None else set()
    path = [s for s in SEARCH_PATH.get() if s == PUBLIC or s in known]
    if implicit.this and "pg_catalog" not in path:
        path.insert(0, "pg_catalog")
    return X.Lit(tuple(path), array_of(TEXT))


def _setting(func: str, args: list[exp.Expression]) -> X.Lit:
    """``current_setting(name [, missing_ok])`` or ``set_config(name, value, is_local)`` of
    constant arguments (a transaction-local setting lasts for the session here)."""
    from changeflow.adapter.catalog import SESSION_SETTINGS
    from changeflow.adapter.settings import checked, current_setting, defaults, parameters, shown

    arity = (1, 2) if func == "current_setting" else (3,)
    consts = [a.this if isinstance(a, exp.Literal) else a.sql("postgres") for a in args]
    if len(args) not in arity or not all(isinstance(a, exp.Literal | exp.Boolean) for a in args):
        kinds = ", ".join("text" for _ in args)
        raise PlanError(f"function {func}({kinds}) does not exist", sqlstate="42883")
    settings = SESSION_SETTINGS.get()
    settings = settings if settings is not None else defaults()
    name = str(consts[0])
    if func == "set_config":  # checked as SET checks it
        key = name.lower()
        if key not in parameters() and "." not in key:
            raise PlanError(f'unrecognized configuration parameter "{name}"', sqlstate="42704")
        settings[key] = checked(key, str(consts[1])) if key in parameters() else str(consts[1])
        return X.Lit(shown(key, settings[key]), TEXT)
    missing_ok = len(args) == 2 and str(consts[1]).lower() in ("true", "t", "on", "1")
    return X.Lit(current_setting(settings, name, missing_ok), TEXT)
