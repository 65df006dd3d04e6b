"""``AT TIME ZONE``, ``LOCALTIMESTAMP`` and ``LOCALTIME`` in SQL, mixed into
:class:`~changeflow.adapter.sql.scalar.Scalars`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.time_of_day import round_time
from changeflow.compute.types import TIME, TIMESTAMP
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars


class TimeScalars:
    """The time zone forms of :class:`Scalars`."""

    def _attimezone(self: Scalars, node: exp.AtTimeZone) -> X.Expr:
        return Func("timezone", (self.expr(node.args["zone"]), self.expr(node.this)))

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
