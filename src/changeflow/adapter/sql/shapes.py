"""A statement's shape: its text with each integer and standard string literal taken out, as
PostgreSQL's extended protocol takes values out as ``$n``. Statements that differ only in
those literals have one shape; an integer's shape says whether it fits ``integer``,
``bigint`` or neither, since its type depends on that (``5`` is an integer, ``3000000000`` a
bigint). Other literals (decimals, prefixed strings such as ``B'1'``) stay in the shape.

The text is read as PostgreSQL's lexer would: quoted names, comments and ``$n`` placeholders
are not literals, and neither are digits inside a name (``t1``) or a number (``1.5``,
``1e3``). Escape and dollar-quoted strings are standard strings by then
(:func:`~changeflow.adapter.sql.literals.plain_strings`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_TOKENS = re.compile(
    r'"(?:[^"]|"")*"'  # a quoted name
    r"|--[^\n]*"
    r"|/\*.*?\*/"
    r"|(?P<prefixed>[\w&]')(?:[^']|'')*'"  # B'…', X'…', N'…', U&'…': not taken out
    r"|'(?P<string>(?:[^']|'')*)'"
    r"|(?<![\w$.])(?P<integer>\d+)(?![\w.])",
    re.S,
)
INT4 = 2**31
INT8 = 2**63


@dataclass(frozen=True)
class Shape:
    """A text as ``pieces`` around its literals' ``values`` (see the module docstring);
    ``key`` names the shape."""

    key: str
    pieces: tuple[str, ...]
    values: tuple[Any, ...]

    def text(self, values: tuple[Any, ...]) -> str:
        """The text of this shape with ``values`` (of the same classes) in place."""
        out = [self.pieces[0]]
        for value, piece in zip(values, self.pieces[1:], strict=True):
            out.append(literal(value))
            out.append(piece)
        return "".join(out)


def shape_of(text: str) -> Shape:
    """``text``'s shape (see the module docstring)."""
    pieces, values, classes, start = [], [], [], 0
    for m in _TOKENS.finditer(text):
        string, integer = m["string"], m["integer"]
        if string is None and integer is None:
            continue
        pieces.append(text[start : m.start()])
        start = m.end()
        if string is not None:
            values.append(string.replace("''", "'"))
            classes.append("s")
        else:
            value = int(integer)
            values.append(value)
            classes.append("4" if value < INT4 else "8" if value < INT8 else "n")
    pieces.append(text[start:])
    key = "\x00".join(pieces) + "\x00" + "".join(classes)
    return Shape(key, tuple(pieces), tuple(values))


def literal(value: Any) -> str:
    """A value taken out of a text, as a literal again."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def probes(values: tuple[Any, ...], descending: bool) -> tuple[Any, ...]:
    """Values of the same classes as ``values``, distinct from them and from each other, in
    ascending order (or ``descending``): planning with two such sets tells which parts of a
    plan come from which literal."""
    taken = set(values)
    out: list[Any] = []
    for i, value in enumerate(values):
        n = len(values) - i if descending else i
        if isinstance(value, str):
            probe: Any = f"{'~' if not descending else '!'}probe{n:04d}"
        elif value < INT4:
            probe = (1_000_003 if not descending else 7) + n * 11
        elif value < INT8:
            probe = (INT4 + 3 if not descending else INT4 + 1_000_003) + n * 11
        else:
            probe = (INT8 + 3 if not descending else INT8 + 1_000_003) + n * 11
        while probe in taken:
            probe = probe + "~" if isinstance(probe, str) else probe + 1
        taken.add(probe)
        out.append(probe)
    return tuple(out)
