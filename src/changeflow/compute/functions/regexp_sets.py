"""What the set-returning ``regexp_matches(s, p[, flags])`` is made of: the planner reads it as
``regexp_nth_match(s, p, generate_series(1, regexp_match_count(s, p, flags)), flags)``, one
row per match (each match's groups as text[]; with flag ``g`` every match, else the first)."""

from __future__ import annotations

from changeflow.compute.functions.base import Function, _sig, in_process
from changeflow.compute.functions.patterns import _compiled
from changeflow.compute.types import INT4, NULLTYPE, TEXT, SqlType, array_of
from changeflow.errors import PlanError

_IN_PROCESS = in_process("regexp_matches is computed in the process")


def _matches(s: str, pattern: str, flags: str) -> list:
    found = list(_compiled(pattern, flags.replace("g", "")).finditer(s))
    return found if "g" in flags else found[:1]


def match_count(s: str, pattern: str, flags: str) -> int:
    """How many rows ``regexp_matches`` gives."""
    return len(_matches(s, pattern, flags))


def nth_match(s: str, pattern: str, n: int, flags: str) -> tuple[str | None, ...] | None:
    """The groups of the ``n``-th match (from 1; the whole match if the pattern has none)."""
    found = _matches(s, pattern, flags)
    if not 1 <= n <= len(found):
        return None
    m = found[n - 1]
    return m.groups() if m.re.groups else (m.group(0),)


def _count_rule(args: tuple[SqlType, ...]) -> SqlType:
    """``regexp_matches``' text arguments (42883 naming it, as written, otherwise)."""
    if len(args) == 3 and all(k in (TEXT, NULLTYPE) for k in args):
        return INT4
    shown = ", ".join(str(k) for k in args)
    raise PlanError(
        f"function regexp_matches({shown}) does not exist", sqlstate="42883", named=True
    )


FUNCTIONS = [
    Function(
        "regexp_match_count",
        _count_rule,
        match_count,
        spark=_IN_PROCESS,
    ),
    Function(
        "regexp_nth_match",
        _sig((TEXT, TEXT, "int", TEXT), result=array_of(TEXT)),
        nth_match,
        spark=_IN_PROCESS,
    ),
]
FORMS = frozenset(f.name for f in FUNCTIONS)
