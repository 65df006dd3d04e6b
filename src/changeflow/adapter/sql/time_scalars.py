"""``AT TIME ZONE`` and ``LOCALTIMESTAMP`` in SQL, mixed into
:class:`~changeflow.adapter.sql.scalar.Scalars`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.types import TIMESTAMP

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
