"""Enums order by their labels' positions, not their text: a comparison (``<``, ``>``…) or a
sort key (ORDER BY, a window's or an aggregate's ORDER BY) of an enum compares the position
of its label among the type's labels instead (``array_position`` of the labels), in every
tier alike; min and max of an enum take the least or greatest position, then its label."""

from __future__ import annotations

from dataclasses import replace

from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.arrays import Subscript
from changeflow.compute.functions import Func
from changeflow.compute.types import ARRAYS, NULLTYPE, TEXT, SqlType
from changeflow.compute.window import WindowFunc
from changeflow.errors import PlanError

ORDERING = ("<", "<=", ">", ">=")


def sort_value(e: X.Expr) -> X.Expr:
    """``e`` as it sorts: an enum's label as its position, any other value as it is."""
    labels = e.type.labels
    if labels is None:
        return e
    return Func("array_position", (X.Lit(labels, ARRAYS[TEXT]), X.Cast(e, TEXT)))


def compared(op: str, a: X.Expr, b: X.Expr) -> tuple[X.Expr, X.Expr]:
    """The operands of ``a op b``: enums of one type, by position where ``op`` orders; 42883
    for an enum beside a value of another type, as PostgreSQL has no such operator."""
    if a.type.labels is None and b.type.labels is None:
        return a, b
    if a.type is not b.type and NULLTYPE not in (a.type, b.type):
        raise PlanError(f"operator does not exist: {a.type} {op} {b.type}", sqlstate="42883")
    return (sort_value(a), sort_value(b)) if op in ORDERING else (a, b)


def extreme(name: str, args: list[X.Expr]) -> X.Expr:
    """``greatest`` or ``least`` of ``args``: of enums, the label of the greatest or least
    position."""
    kind = args[0].type if args else NULLTYPE
    if kind.labels is None:
        return Func(name, tuple(args))
    return label_at(kind, Func(name, tuple(sort_value(a) for a in args)))


def enum_function(name: str, args: list[X.Expr]) -> X.Expr | None:
    """``enum_first(e)``, ``enum_last(e)`` and ``enum_range(e)`` of an enum's value (their
    argument's type is what counts, its value may be NULL): the first label, the last, all of
    them (as text[]: arrays of enums are not kept); None for another function."""
    if name.lower() not in ("enum_first", "enum_last", "enum_range") or len(args) != 1:
        return None
    labels = args[0].type.labels
    if labels is None:
        return None
    if name.lower() == "enum_range":
        return X.Lit(labels, ARRAYS[TEXT])
    if not labels:
        return X.Lit(None, args[0].type)
    return X.Lit(labels[0 if name.lower() == "enum_first" else -1], args[0].type)


def ranked(agg: P.Aggregate) -> P.Aggregate | None:
    """min or max of an enum as of its labels' positions; None for another aggregate."""
    if agg.func not in ("min", "max") or agg.arg is None or agg.arg.type.labels is None:
        return None
    return P.Aggregate(agg.func, sort_value(agg.arg), agg.distinct)


def label_at(kind: SqlType, position: X.Expr) -> X.Expr:
    """The label of the enum ``kind`` at ``position`` (a min or max of :func:`sort_value`)."""
    return X.Cast(Subscript(X.Lit(kind.labels, ARRAYS[TEXT]), position), kind)


def ranked_window(function: WindowFunc) -> tuple[WindowFunc, SqlType | None]:
    """A window's min or max of an enum as of its labels' positions, and the enum (None, and
    ``function`` as it is, for another call)."""
    args = function.args
    if function.func not in ("min", "max") or len(args) != 1 or args[0].type.labels is None:
        return function, None
    return replace(function, args=(sort_value(args[0]),)), args[0].type
