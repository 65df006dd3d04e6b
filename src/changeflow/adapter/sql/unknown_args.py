"""Quoted literals as arguments of a function that takes no text there: PostgreSQL reads an
unknown-typed literal as the type the function's candidates accept at its position, choosing
the string category where one accepts it, else the preferred type of the one type
category they accept (``sqrt('4')`` is a double precision,
``trim_scale('1.5')`` a numeric), and the literal's text must then be a value of that type
(22P02 otherwise)."""

from __future__ import annotations

from itertools import product

from changeflow.compute import expr as X
from changeflow.compute.functions import FUNCTIONS
from changeflow.compute.functions.overloads import Overloads
from changeflow.compute.types import (
    BOOL,
    BYTEA,
    DATE,
    FLOAT8,
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

# type categories, each from its preferred type on (a function accepting an integer accepts a
# numeric here: PostgreSQL casts integers to numeric implicitly, not the other way round)
CATEGORIES: tuple[tuple[SqlType, ...], ...] = (
    (TEXT,),
    (FLOAT8, NUMERIC, INT8, INT4),
    (TIMESTAMPTZ, TIMESTAMP, DATE, TIME),
    (INTERVAL,),
    (BOOL,),
    (JSONB,),
    (UUID,),
    (BYTEA,),
)
# at most this many quoted literals in one call are tried as other types
MOST_UNKNOWN = 2


def unknown_kinds(name: str, kinds: tuple[SqlType, ...], unknown: list[int]) -> tuple | None:
    """The argument types of ``name`` with the ``unknown`` positions (quoted literals) read as
    the one type category the function accepts there; None where none fits or the function
    is not one of :data:`FUNCTIONS`, 42725 where several do."""
    function = FUNCTIONS.get(name.lower())
    if function is None or not unknown:
        return None
    if isinstance(function.rule, Overloads):  # PostgreSQL's own resolution
        trial = tuple(NULLTYPE if i in unknown else k for i, k in enumerate(kinds))
        try:
            return function.rule.resolve(trial)[0]
        except PlanError as e:
            if e.sqlstate != "42725":
                return None
            shown = ", ".join("unknown" if i in unknown else str(k) for i, k in enumerate(kinds))
            raise PlanError(f"function {name}({shown}) is not unique", sqlstate="42725") from None
    if len(unknown) > MOST_UNKNOWN:
        return None
    found: dict[tuple[int, ...], tuple[SqlType, ...]] = {}
    for cats in product(range(len(CATEGORIES)), repeat=len(unknown)):
        for picks in product(*(CATEGORIES[c] for c in cats)):
            trial = list(kinds)
            for i, kind in zip(unknown, picks, strict=True):
                trial[i] = kind
            try:
                function.rule(tuple(trial))
            except PlanError:
                continue
            found[cats] = tuple(trial)
            break
    for at in range(len(unknown)):  # where a candidate takes text, the literal is text
        if any(cats[at] == 0 for cats in found):
            found = {cats: kinds for cats, kinds in found.items() if cats[at] == 0}
    if len(found) > 1:
        shown = ", ".join("unknown" if i in unknown else str(k) for i, k in enumerate(kinds))
        raise PlanError(f"function {name}({shown}) is not unique", sqlstate="42725")
    return next(iter(found.values()), None)


def read_unknown(name: str, args: list[X.Expr], unknown: list[int]) -> list[X.Expr] | None:
    """``args`` with their quoted literals read as :func:`unknown_kinds` says; None if it
    finds no one reading."""
    from changeflow.adapter.sql.scalar import coerce_text

    kinds = unknown_kinds(name, tuple(a.type for a in args), unknown)
    if kinds is None:
        return None
    out = list(args)
    for i in unknown:
        literal = args[i]
        assert isinstance(literal, X.Lit)
        out[i] = coerce_text(str(literal.value), kinds[i])
    return out
