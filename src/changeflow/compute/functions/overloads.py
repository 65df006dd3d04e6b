"""Functions with several signatures, resolved as PostgreSQL resolves a call (the steps of
its "Type Conversion: Functions"): an exact match; else the candidates every argument can be
cast to implicitly, narrowed to those with the most exact matches, then to those taking the
preferred type of the arguments' categories at the most places, then, at an unknown-typed
argument (a NULL or a quoted literal), to the one category the candidates take there (text
wins; its preferred type where one takes it), then, where the known arguments all have one
type, to the one candidate taking that type at the unknown places. None left is 42883;
several is 42725 (``function round(unknown, unknown) is not unique``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from changeflow.compute.types import (
    BOOL,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSONB,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    SqlType,
)
from changeflow.errors import PlanError

# A type changeflow does not have, in a candidate only: it makes a call of unknown arguments
# ambiguous where PostgreSQL's has one of that category (trunc(macaddr)).
MACADDR = SqlType("macaddr", pa.null())
BIT = SqlType("bit", pa.null())  # (get_bit(unknown, unknown) is not unique)

# PostgreSQL's type categories (pg_type.typcategory) and the preferred type of each
CATEGORY: dict[SqlType, str] = {
    **dict.fromkeys((INT2, INT4, INT8, NUMERIC, FLOAT4, FLOAT8), "N"),
    TEXT: "S",
    **dict.fromkeys((DATE, TIMESTAMP, TIMESTAMPTZ, TIME), "D"),
    INTERVAL: "T",
    BOOL: "B",
    **dict.fromkeys((JSONB, UUID, BYTEA, MACADDR), "U"),
    BIT: "V",
}
PREFERRED = (FLOAT8, TEXT, TIMESTAMPTZ, INTERVAL, BOOL)
# the implicit casts of pg_cast (castcontext 'i') between these types
IMPLICIT: dict[SqlType, tuple[SqlType, ...]] = {
    INT2: (INT4, INT8, NUMERIC, FLOAT4, FLOAT8),
    INT4: (INT8, NUMERIC, FLOAT4, FLOAT8),
    INT8: (NUMERIC, FLOAT4, FLOAT8),
    NUMERIC: (FLOAT4, FLOAT8),
    FLOAT4: (FLOAT8,),
    DATE: (TIMESTAMP, TIMESTAMPTZ),
    TIMESTAMP: (TIMESTAMPTZ,),
    TIME: (INTERVAL,),
}


def implicitly(actual: SqlType, param: SqlType) -> bool:
    """Can an argument of type ``actual`` be passed where ``param`` is taken, without a cast
    written out?"""
    return actual in (NULLTYPE, param) or param in IMPLICIT.get(actual, ())


def _preferred(kind: SqlType) -> bool:
    return kind in PREFERRED


@dataclass(frozen=True)
class Overloads:
    """A type rule from PostgreSQL's signatures of one function: ``(parameter types, result
    type)`` pairs. :meth:`resolve` gives the chosen pair; calling it, the result type."""

    name: str
    candidates: tuple[tuple[tuple[SqlType, ...], SqlType], ...]

    def __call__(self, args: tuple[SqlType, ...]) -> SqlType:
        return self.resolve(args)[1]

    def resolve(self, args: Sequence[SqlType]) -> tuple[tuple[SqlType, ...], SqlType]:
        """The signature a call with arguments of ``args`` (NULLTYPE: unknown) runs."""
        args = tuple(args)
        sized = [c for c in self.candidates if len(c[0]) == len(args)]
        for c in sized:
            if c[0] == args:
                return c
        viable = [c for c in sized if all(map(implicitly, args, c[0]))]
        if not viable:
            raise PlanError("no match", sqlstate="42883")
        known = [i for i, a in enumerate(args) if a != NULLTYPE]
        viable = _most(viable, lambda c: sum(c[0][i] == args[i] for i in known))
        viable = _most(
            viable,
            lambda c: sum(
                c[0][i] == args[i]
                or (_preferred(c[0][i]) and CATEGORY.get(c[0][i]) == CATEGORY.get(args[i]))
                for i in known
            ),
        )
        if len(viable) > 1:
            viable = _by_unknowns(viable, args)
        if len(viable) > 1:
            viable = _as_known(viable, args, known)
        if len(viable) != 1:
            shown = ", ".join(str(a) for a in args)
            raise PlanError(f"function {self.name}({shown}) is not unique", sqlstate="42725")
        return viable[0]


Candidate = tuple[tuple[SqlType, ...], SqlType]


def _most(candidates: list[Candidate], score: object) -> list[Candidate]:
    """The candidates of the highest ``score``."""
    scores = [score(c) for c in candidates]  # type: ignore[operator]
    best = max(scores)
    return [c for c, s in zip(candidates, scores, strict=True) if s == best]


def _by_unknowns(candidates: list[Candidate], args: tuple[SqlType, ...]) -> list[Candidate]:
    """The candidates taking, at each unknown argument, the one category they all take there
    (the string category where one does), and its preferred type where one takes it; all of
    them if no category is agreed on or none is left."""
    chosen: dict[int, tuple[str, bool]] = {}
    for i, a in enumerate(args):
        if a != NULLTYPE:
            continue
        category, preferred, conflict = None, False, False
        for params, _ in candidates:
            c, p = CATEGORY.get(params[i]), _preferred(params[i])
            if category is None:
                category, preferred = c, p
            elif c == category:
                preferred = preferred or p
            elif c == "S":
                category, preferred = c, p
            elif category != "S":
                conflict = True
        if conflict and category != "S":
            return candidates
        chosen[i] = (category or "", preferred)
    kept = [
        c
        for c in candidates
        if all(
            CATEGORY.get(c[0][i]) == category and (not preferred or _preferred(c[0][i]))
            for i, (category, preferred) in chosen.items()
        )
    ]
    return kept or candidates


def _as_known(
    candidates: list[Candidate], args: tuple[SqlType, ...], known: list[int]
) -> list[Candidate]:
    """Where the known arguments all have one type, the candidates that take it at every
    place (the unknown arguments read as that type); unchanged if more than one does."""
    types = {args[i] for i in known}
    if not known or len(types) != 1 or len(known) == len(args):
        return candidates
    (kind,) = types
    fitting = [c for c in candidates if all(implicitly(kind, p) for p in c[0])]
    return fitting if len(fitting) == 1 else candidates


def same(*kinds: SqlType, arity: int = 1) -> tuple[Candidate, ...]:
    """Signatures taking ``arity`` arguments of one of ``kinds`` and giving that type."""
    return tuple(((k,) * arity, k) for k in kinds)
