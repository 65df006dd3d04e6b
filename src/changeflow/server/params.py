"""``$n`` placeholders: counting them and substituting bound values as SQL literals.

Placeholders inside string literals, quoted identifiers, dollar-quoted strings and comments are
left alone, as PostgreSQL's lexer does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from changeflow.errors import PlanError

_TOKENS = re.compile(
    r"(?:[Ee]'(?:[^'\\]|\\.|'')*')"  # E'…' with backslash escapes
    r"|'(?:[^']|'')*'"
    r'|"(?:[^"]|"")*"'
    r"|--[^\n]*"
    r"|/\*.*?\*/"
    r"|\$(?P<tag>(?:[A-Za-z_][A-Za-z_0-9]*)?)\$.*?\$(?P=tag)\$"
    r"|\$(?P<n>\d+)",
    re.S,
)


def placeholders(text: str) -> int:
    """The highest ``$n`` in ``text`` (0 if none)."""
    found = [int(m["n"]) for m in _TOKENS.finditer(text) if m["n"] is not None]
    return max(found, default=0)


def substitute(text: str, literals: Sequence[str]) -> str:
    """``text`` with each ``$n`` replaced by ``literals[n - 1]``."""

    def replace(m: re.Match[str]) -> str:
        if m["n"] is None:
            return m.group(0)
        n = int(m["n"])
        if not 1 <= n <= len(literals):
            raise PlanError(f"there is no parameter ${n}", sqlstate="42P02")
        return literals[n - 1]

    return _TOKENS.sub(replace, text)


def substitute_with(text: str, literal: Callable[[int], str]) -> str:
    """``text`` with each ``$n`` replaced by ``literal(n)``."""
    return _TOKENS.sub(lambda m: m.group(0) if m["n"] is None else literal(int(m["n"])), text)
