"""Regular-expression functions (PostgreSQL's): ``regexp_like`` (what ``~``, ``~*``, ``!~``
and ``!~*`` mean), ``regexp_match``, ``regexp_split_to_array`` and ``similar_to_escape`` (the
regular expression of a ``SIMILAR TO`` pattern), ``like_escape`` (``LIKE … ESCAPE``'s pattern
with backslash escapes), each defined once, on Python
values and on Spark. Patterns are read as Python's and Java's regular expressions read them,
which agree with PostgreSQL's for the common forms."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from changeflow.compute.functions.base import F, Function, _sig, fail
from changeflow.compute.functions.regex_flags import regex
from changeflow.compute.functions.text import _constant
from changeflow.compute.types import ARRAYS, BOOL, TEXT
from changeflow.errors import EvalError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


_SHORT_FIRST = re.compile(r"\^\(\?:(.*?)\)\{1,1\}\?\(")


@lru_cache(maxsize=256)
def _compiled(pattern: str, flags: str) -> re.Pattern[str]:
    """``pattern`` compiled; a first group quantified ``{1,1}?`` (what ``similar_to_escape``
    makes of a ``#"`` marker) matches as little as it can, as in PostgreSQL's engine."""
    first = _SHORT_FIRST.match(pattern)
    if first is not None:
        lazy = re.sub(r"(?<!\\)([*+])(?!\?)", r"\1?", first.group(1))
        pattern = f"^(?:{lazy}){{1,1}}?(" + pattern[first.end() :]
    try:
        return re.compile(regex(pattern, flags))
    except re.error as e:
        raise EvalError(f"invalid regular expression: {e}", sqlstate="2201B") from None


def _like(s: str, pattern: str, flags: str = "") -> bool:
    return _compiled(pattern, flags).search(s) is not None


def _match(s: str, pattern: str, flags: str = "") -> tuple[str | None, ...] | None:
    """The first match's groups (the whole match if the pattern has none), NULL if none."""
    m = _compiled(pattern, flags).search(s)
    if m is None:
        return None
    return m.groups() if m.re.groups else (m.group(0),)


def _split(s: str, pattern: str, flags: str = "") -> tuple[str, ...]:
    """``s`` cut at each match (groups are not kept); as in PostgreSQL, a match is none if it
    starts at the end or ends no later than the previous one (an empty match at the start, or
    right after another match)."""
    out, start = [], 0
    for m in _compiled(pattern, flags).finditer(s):
        if m.start() >= len(s) or m.end() <= start:
            continue
        out.append(s[start : m.start()])
        start = m.end()
    return (*out, s[start:])


_SIMILAR = {"%": ".*", "_": ".", ".": "\\.", "^": "\\^", "$": "\\$"}


def similar_to_escape(pattern: str, escape: str = "\\") -> str:
    """The regular expression of a ``SIMILAR TO`` pattern, matching the whole string:
    ``%`` any text, ``_`` any character, ``|*+?{}()[]`` as in regular expressions, ``.``
    ``^`` ``$`` themselves, and the escape character (one, or none for '') before a character
    makes it itself; two escape-double-quotes (``#"``) mark the part that
    ``substring(s SIMILAR p ESCAPE '#')`` gives (the regular expression's one group)."""
    if len(escape) > 1:
        raise EvalError("invalid escape string", sqlstate="22025")
    parts: list[list[str]] = [[]]
    i, bracket = 0, False
    while i < len(pattern):
        c, out = pattern[i], parts[-1]
        if escape and c == escape:
            if i + 1 == len(pattern):
                raise EvalError("invalid escape string", sqlstate="22025")
            if pattern[i + 1] == '"':
                parts.append([])
            else:
                out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if bracket:
            bracket = c != "]"
            out.append(c)
        elif c == "[":
            bracket = True
            out.append(c)
        else:
            out.append(_SIMILAR.get(c, c))
        i += 1
    if len(parts) > 3:
        raise EvalError(
            "SQL regular expression may not contain more than two escape-double-quote separators",
            sqlstate="2200C",
        )
    bodies = ["".join(p) for p in parts]
    if len(bodies) == 1:
        return "^(?:" + bodies[0] + ")$"
    first, middle = bodies[0], bodies[1]
    last = bodies[2] if len(bodies) == 3 else ""
    return f"^(?:{first}){{1,1}}?({middle}){{1,1}}(?:{last})$"


def like_escape(pattern: str, escape: str) -> str:
    """The pattern of ``LIKE pattern ESCAPE escape`` with backslash escapes, LIKE's default:
    the escape character (one, or none for '') before a character makes it itself."""
    if len(escape) > 1:
        raise EvalError(
            "invalid escape string",
            sqlstate="22025",
            hint="Escape string must be empty or one character.",
        )
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if escape and c == escape:
            if i + 1 == len(pattern):
                raise EvalError("LIKE pattern must not end with escape character", sqlstate="22025")
            out.append("\\" + pattern[i + 1])
            i += 2
            continue
        out.append("\\\\" if c == "\\" else c)
        i += 1
    return "".join(out)


def _spark_like_escape(cc: ExprCompiler, e: Func) -> Column:
    return F.lit(like_escape(*(_constant(e, i, "LIKE pattern") for i in range(2))))


def _similar_rule(args: tuple) -> object:
    return _sig((TEXT,), (TEXT, TEXT), result=TEXT)(args)


def _spark_similar(cc: ExprCompiler, e: Func) -> Column:
    args = [_constant(e, i, "SIMILAR TO pattern") for i in range(len(e.args))]
    return F.lit(similar_to_escape(*args))


# -- on Spark --------------------------------------------------------------------------------


def _spark_pattern(cc: ExprCompiler, e: Func) -> tuple[Column, str | None, str]:
    """The subject, and the pattern with its options (or the error it raises)."""
    pattern = _constant(e, 1, "pattern")
    flags = _constant(e, 2, "flags") if len(e.args) > 2 else ""
    try:
        _compiled(pattern, flags)
    except EvalError as error:
        return cc.compile(e.args[0]), None, f"{error.sqlstate}:{error}"
    return cc.compile(e.args[0]), regex(pattern, flags), ""


def _refused(s: Column, error: str, kind: str) -> Column:
    sqlstate, _, message = error.partition(":")
    return F.when(s.isNotNull(), fail(message, sqlstate)).cast(kind)


def _spark_like(cc: ExprCompiler, e: Func) -> Column:
    s, pattern, error = _spark_pattern(cc, e)
    return _refused(s, error, "boolean") if pattern is None else s.rlike(pattern)


def _spark_match(cc: ExprCompiler, e: Func) -> Column:
    s, pattern, error = _spark_pattern(cc, e)
    if pattern is None:
        return _refused(s, error, "array<string>")
    groups = re.compile(pattern).groups
    parts = [F.regexp_extract(s, pattern, i) for i in range(1, groups + 1)] or [
        F.regexp_extract(s, pattern, 0)
    ]
    return F.when(s.rlike(pattern), F.array(*parts))


def _spark_split(cc: ExprCompiler, e: Func) -> Column:
    s, pattern, error = _spark_pattern(cc, e)
    if pattern is None:
        return _refused(s, error, "array<string>")
    return F.split(s, pattern, -1)


_TEXTS = ARRAYS[TEXT]

FUNCTIONS = [
    Function(
        "regexp_like",
        _sig((TEXT, TEXT), (TEXT, TEXT, TEXT), result=BOOL),
        _like,
        spark=_spark_like,
    ),
    Function(
        "regexp_match",
        _sig((TEXT, TEXT), (TEXT, TEXT, TEXT), result=_TEXTS),
        _match,
        spark=_spark_match,
    ),
    Function(
        "regexp_split_to_array",
        _sig((TEXT, TEXT), (TEXT, TEXT, TEXT), result=_TEXTS),
        _split,
        spark=_spark_split,
    ),
    Function("similar_to_escape", _similar_rule, similar_to_escape, spark=_spark_similar),
    Function("like_escape", _sig((TEXT, TEXT), result=TEXT), like_escape, spark=_spark_like_escape),
]
