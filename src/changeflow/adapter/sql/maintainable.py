"""What a view's query may not hold: values that change with no input changing (the time, as
``now()``; random values), which Materialize refuses in views too, and the reading role's name
(``current_user``); and the queries whose rows differ each time they are read
(:func:`varies`)."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.sql.dialect import ClockTimestamp, StatementTimestamp
from changeflow.errors import PlanError

_CLOCK = (
    exp.CurrentTimestamp,
    exp.CurrentDate,
    exp.Localtimestamp,
    exp.Localtime,
    StatementTimestamp,
    ClockTimestamp,
)


def refuse_unmaintainable(ast: exp.Expression) -> None:
    """0A000 if the view's query ``ast`` reads the clock or a random value."""
    if ast.find(*_CLOCK):
        raise PlanError(
            "now(), current_date, localtimestamp, localtime, statement_timestamp() and "
            "clock_timestamp() are not allowed in a view: its rows would not change as time "
            "passes; use mz_now() in a temporal filter",
            sqlstate="0A000",
        )
    if (found := ast.find(exp.Uuid, exp.Rand)) is not None:
        name = "gen_random_uuid" if isinstance(found, exp.Uuid) else "random"
        raise PlanError(
            f"{name}() is not allowed in a view: it is not deterministic", sqlstate="0A000"
        )
    for node in ast.find_all(exp.Anonymous):
        if (func := str(node.this).lower()) in ("nextval", "setval", "currval"):
            raise PlanError(
                f"{func}() is not allowed in a view: it is volatile (each read would change or "
                "depend on a sequence)",
                sqlstate="0A000",
            )
    if (who := _role_value(ast)) is not None:
        raise PlanError(
            f"{who} is not allowed in a view: its value depends on the role that reads the "
            "view, and a view here keeps the value of the role that made it",
            sqlstate="0A000",
        )
    sleeps = (n for n in ast.find_all(exp.Anonymous) if str(n.this).lower() == "pg_sleep")
    if next(sleeps, None) is not None:
        raise PlanError("pg_sleep() is not allowed in a view: it waits", sqlstate="0A000")


def _role_value(ast: exp.Expression) -> str | None:
    """The name of the first current_user, session_user, current_role or user ``ast`` reads."""
    if (found := ast.find(exp.CurrentUser, exp.SessionUser)) is not None:
        return "current_user" if isinstance(found, exp.CurrentUser) else "session_user"
    for column in ast.find_all(exp.Column):
        word = column.name.lower()
        if not column.table and not column.this.quoted and word in ("user", "current_role"):
            return word
    return None


_SEQUENCE_CALLS = ("nextval", "setval", "pg_sleep")


def varies(ast: exp.Expression) -> bool:
    """Does ``ast`` give other rows each time it runs (random values, ``clock_timestamp()``,
    ``nextval``)? A WITH query of one is run once per statement, as PostgreSQL runs it."""
    if ast.find(exp.Uuid, exp.Rand, ClockTimestamp) is not None:
        return True
    return any(str(n.this).lower() in _SEQUENCE_CALLS for n in ast.find_all(exp.Anonymous))
