"""``AT TIME ZONE``, ``LOCALTIMESTAMP``, ``LOCALTIME``, ``statement_timestamp()``,
``clock_timestamp()``, ``extract`` and ``date_trunc`` in SQL, mixed into
:class:`~changeflow.adapter.sql.scalar.Scalars`."""

from __future__ import annotations

from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.adapter.sql.arity import refuse, written_count
from changeflow.adapter.sql.scope import ident
from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.time_of_day import round_time
from changeflow.compute.types import NULLTYPE, TEXT, TIME, TIMESTAMP, TIMESTAMPTZ
from changeflow.compute.volatile import ClockTimestamp
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars

# the moment the statement began (now() is its transaction's start)
STATEMENT_START: ContextVar[datetime | None] = ContextVar("statement_start", default=None)


class TimeScalars:
    """The time zone forms of :class:`Scalars`."""

    def _extract(self: Scalars, node: exp.Extract) -> X.Expr:
        unit = node.this
        name = ident(unit) if isinstance(unit, exp.Var | exp.Identifier) else None
        part = exp.Literal.string(name) if name else unit  # a quoted literal: unknown_args
        return self.func("extract", [part, node.expression])

    def _timestamptrunc(self: Scalars, node: exp.TimestampTrunc) -> X.Expr:
        """``date_trunc(unit, x)``; ``date_trunc(unit, x, zone)`` truncates ``x``'s wall time
        in ``zone`` (PostgreSQL's one signature of it: text, timestamptz, text)."""
        from changeflow.adapter.sql.scalar import STAMPS, coerce_text

        unit = node.args.get("unit")
        text = unit.name.lower() if isinstance(unit, exp.Var) else None
        part = exp.Literal.string(text) if text else unit
        zone = node.args.get("zone")
        if zone is None:
            return self.func("date_trunc", [part, node.this])
        if written_count(node) > 3:
            refuse(node, self.expr)
        args = [self.expr(a) for a in (part, node.this, zone)]
        kinds = (TEXT, TIMESTAMPTZ, TEXT)
        for i, (a, kind) in enumerate(zip(args, kinds, strict=True)):
            if a.type == kind or a.type == NULLTYPE or (kind == TIMESTAMPTZ and a.type in STAMPS):
                continue
            if i == 1 and a.type == TEXT and isinstance(a, X.Lit):  # a quoted literal
                args[1] = coerce_text(str(a.value), TIMESTAMPTZ)
                continue
            shown = ", ".join(str(x.type) for x in args)
            raise PlanError(f"function date_trunc({shown}) does not exist", sqlstate="42883")
        stamp = args[1] if args[1].type == TIMESTAMPTZ else X.Cast(args[1], TIMESTAMPTZ)
        wall = Func("date_trunc", (args[0], Func("timezone", (args[2], stamp))))
        return Func("timezone", (args[2], wall))

    def _datetrunc(self: Scalars, node: exp.Expression) -> X.Expr:
        return self._timestamptrunc(node)  # type: ignore[arg-type]

    def _attimezone(self: Scalars, node: exp.AtTimeZone) -> X.Expr:
        return Func("timezone", (self.expr(node.args["zone"]), self.expr(node.this)))

    def _statementtimestamp(self: Scalars, node: exp.Expression) -> X.Expr:
        return X.Lit(STATEMENT_START.get() or datetime.now(UTC), TIMESTAMPTZ)

    def _clocktimestamp(self: Scalars, node: exp.Expression) -> X.Expr:
        return ClockTimestamp()

    def _localtimestamp(self: Scalars, node: exp.Localtimestamp) -> X.Expr:
        """The statement's time as the session's wall time (its zone is UTC)."""
        from changeflow.adapter.sql.scalar import STATEMENT_TIME

        now = STATEMENT_TIME.get() or datetime.now(UTC)
        return X.Lit(now.astimezone(UTC).replace(tzinfo=None), TIMESTAMP)

    def _localtime(self: Scalars, node: exp.Localtime) -> X.Expr:
        """The statement's time of day in the session's zone (UTC), at ``LOCALTIME(p)``'s
        places."""
        stamp = self._localtimestamp(node).value  # type: ignore[arg-type, attr-defined]
        places = node.this
        value = stamp.time()
        if places is not None:
            value = round_time(value, int(places.name))
        return X.Lit(value, TIME)

    def _currenttime(self: Scalars, node: exp.CurrentTime) -> X.Expr:
        raise PlanError(
            "CURRENT_TIME (time with time zone) is not supported; use LOCALTIME or now()::time",
            sqlstate="0A000",
        )
