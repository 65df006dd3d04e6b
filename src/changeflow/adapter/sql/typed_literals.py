"""A typed literal binds tighter than the operators after it, as PostgreSQL reads it:
``date '2024-01-01'::time`` is ``(date '2024-01-01')::time`` (sqlglot reads the cast of the
string first, then the literal's type), and ``jsonb '{"a": 1}' -> 'a'`` reads the jsonb."""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import TokenType


class TypedLiterals(Postgres.Parser):
    """Reads ``type 'text'`` followed by ``::``, ``[…]``, ``->``… with the type applied first."""

    def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False) -> Any:
        typed = (
            not fallback_to_identifier
            and self._curr is not None
            and self._curr.token_type in self.TYPE_TOKENS
            and self._curr.token_type != TokenType.INTERVAL  # (sqlglot binds it first)
            and self._next is not None
            and self._next.token_type == TokenType.STRING
        )
        node = super()._parse_type(parse_interval, fallback_to_identifier)
        if not typed or not isinstance(node, exp.Cast) or isinstance(node.this, exp.Literal):
            return node
        top = inner = node.this
        while not isinstance(inner.this, exp.Literal):
            if not isinstance(inner.this, exp.Expression):
                return node
            inner = inner.this
        inner.set("this", exp.Cast(this=inner.this, to=node.to))
        return top
