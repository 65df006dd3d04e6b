"""PostgreSQL's regular expression flags as Python's (and Java's) inline options: one
definition for every function taking them."""

from __future__ import annotations

import re

from changeflow.errors import EvalError

_NEWLINES = {"s": "s", "n": "m", "m": "m", "p": "", "w": "sm"}  # PostgreSQL's flag: options


def regex(pattern: str, flags: str) -> str:
    """``pattern`` under PostgreSQL's ``flags``, as inline options: ``i`` ignore case and
    ``c`` respect it; ``s`` (the default: ``.`` and a negated bracket match a newline), ``n``
    or ``m`` (newline-sensitive: they do not, and ``^``/``$`` match at each line), ``p``
    (the first half) or ``w`` (the second); ``x`` expanded syntax; ``q`` a literal. The
    last of conflicting flags wins, as there."""
    unknown = set(flags) - set("icsnmpwxq")
    if unknown:
        raise EvalError(
            f'invalid regular expression option: "{sorted(unknown)[0]}"', sqlstate="22023"
        )
    cases = [f for f in flags if f in "ic"]
    lines = [f for f in flags if f in _NEWLINES]
    options = ("i" if cases and cases[-1] == "i" else "") + _NEWLINES[lines[-1] if lines else "s"]
    if "q" in flags:
        return f"(?{options})" * bool(options) + re.escape(pattern)
    if "s" not in options:  # a negated bracket leaves newlines out too
        pattern = re.sub(r"(?<!\\)\[\^", "[^\\n", pattern)
    return f"(?{options}{'x' * ('x' in flags)})" * bool(options or "x" in flags) + pattern
