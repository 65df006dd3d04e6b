"""``to_number`` and ``div`` in SQL (sqlglot reads them as its own nodes), mixed into
:class:`~changeflow.adapter.sql.scalar.Scalars`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.types import NUMERIC

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars


class NumberScalars:
    """The number functions sqlglot names its own way."""

    def _tonumber(self: Scalars, node: exp.ToNumber) -> X.Expr:
        return self.func("to_number", [node.this, node.args["format"]])

    def _intdiv(self: Scalars, node: exp.IntDiv) -> X.Expr:
        """PostgreSQL's ``div(a, b)`` (sqlglot reads it as a numeric cast of this node)."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        args = (
            coerce_text(str(a.this), NUMERIC) if is_string_literal(a) else self.expr(a)
            for a in (node.this, node.expression)
            if a is not None
        )
        return Func("div", tuple(args))
