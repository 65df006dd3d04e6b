"""``regexp_count``, ``regexp_instr`` and ``regexp_substr``: the matches of a pattern in a
text from a starting character, counted, placed (where the n-th match, or one of its groups,
begins or ends) or taken, as PostgreSQL's; computed in the process."""

from __future__ import annotations

import re
from typing import Any

from changeflow.compute.functions.base import Function, _sig, in_process
from changeflow.compute.functions.patterns import _compiled
from changeflow.compute.types import INT4, TEXT
from changeflow.errors import EvalError

_ON_ROWS = in_process("this regular expression function is computed in the process")


def _positive(value: int, name: str, least: int = 1) -> None:
    if value < least:
        raise EvalError(f'invalid value for parameter "{name}": {value}', sqlstate="22023")


def _matches(s: str, pattern: str, start: int, flags: str, fn: str) -> list[re.Match[str]]:
    """The matches at or after character ``start`` (1-based), none overlapping."""
    _positive(start, "start")
    if "g" in flags:
        raise EvalError(f'{fn}() does not support the "global" option', sqlstate="22023")
    return list(_compiled(pattern, flags).finditer(s, start - 1))


def _count(s: str, pattern: str, start: int = 1, flags: str = "") -> int:
    return len(_matches(s, pattern, start, flags, "regexp_count"))


def _nth(
    s: str, pattern: str, start: int, n: int, flags: str, group: int, fn: str
) -> re.Match[str] | None:
    """The ``n``-th match, or None; ``group`` checked against the pattern's groups."""
    _positive(n, "n")
    _positive(group, "subexpr", 0)
    found = _matches(s, pattern, start, flags, fn)
    if n > len(found) or group > found[0].re.groups if found else True:
        return None
    return found[n - 1]


def _instr(
    s: str,
    pattern: str,
    start: int = 1,
    n: int = 1,
    end: int = 0,
    flags: str = "",
    group: int = 0,
) -> int:
    """Where the ``n``-th match (or its ``group``) begins, or just after it ends if ``end``
    is 1; 0 if there is none."""
    if end not in (0, 1):
        raise EvalError(f'invalid value for parameter "endoption": {end}', sqlstate="22023")
    m = _nth(s, pattern, start, n, flags, group, "regexp_instr")
    if m is None or m.start(group) < 0:
        return 0
    return (m.end(group) if end else m.start(group)) + 1


def _substr(
    s: str, pattern: str, start: int = 1, n: int = 1, flags: str = "", group: int = 0
) -> Any:
    """The ``n``-th match's text (or its ``group``'s), NULL if there is none."""
    m = _nth(s, pattern, start, n, flags, group, "regexp_substr")
    return None if m is None else m.group(group)


_I = "int"
FUNCTIONS = [
    Function(
        "regexp_count",
        _sig((TEXT, TEXT), (TEXT, TEXT, _I), (TEXT, TEXT, _I, TEXT), result=INT4),
        _count,
        spark=_ON_ROWS,
    ),
    Function(
        "regexp_instr",
        _sig(
            (TEXT, TEXT),
            (TEXT, TEXT, _I),
            (TEXT, TEXT, _I, _I),
            (TEXT, TEXT, _I, _I, _I),
            (TEXT, TEXT, _I, _I, _I, TEXT),
            (TEXT, TEXT, _I, _I, _I, TEXT, _I),
            result=INT4,
        ),
        _instr,
        spark=_ON_ROWS,
    ),
    Function(
        "regexp_substr",
        _sig(
            (TEXT, TEXT),
            (TEXT, TEXT, _I),
            (TEXT, TEXT, _I, _I),
            (TEXT, TEXT, _I, _I, TEXT),
            (TEXT, TEXT, _I, _I, TEXT, _I),
            result=TEXT,
        ),
        _substr,
        nulls=True,
        spark=_ON_ROWS,
    ),
]
