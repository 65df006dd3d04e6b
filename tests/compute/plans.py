"""Random plans and input histories (hypothesis strategies) for testing operators against the
reference evaluator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from changeflow.collection import consolidate
from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.expr import And, Arith, Cast, Cmp, Coalesce, Expr, IsNull, Not, lit
from changeflow.compute.types import INT4, INT8, Column, Schema
from changeflow.updates import DIFF, TIME

R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
S = P.Get("s", (Column("k", INT4), Column("w", INT4)))
INPUTS = {"r": R, "s": S}

value = st.one_of(st.none(), st.integers(-3, 3))


def frame(get: P.Get, updates: list) -> pa.Table:
    """``(row, time, diff)`` updates as an update frame of ``get``'s schema."""
    columns = [pa.array([u[0][i] for u in updates], c.type.arrow) for i, c in enumerate(get.schema)]
    columns += [pa.array([u[1] for u in updates], pa.int64()), pa.array([u[2] for u in updates])]
    return pa.Table.from_arrays(columns, names=[*(c.name for c in get.schema), TIME, DIFF])


def live_history(
    draw: st.DrawFn,
    values: Sequence[Sequence[Any]],
    times: int,
    per_time: int = 6,
    counts: Sequence[int] = (1, 1, 2),
) -> list:
    """Random updates over ``times``: a row of ``values`` (one list a column) inserted
    ``counts`` times at once, or part of a live row retracted, so no count goes below zero."""
    live: dict[tuple, int] = {}
    out = []
    for t in range(times):
        for _ in range(draw(st.integers(0, per_time))):
            if live and draw(st.booleans()):
                row = draw(st.sampled_from(sorted(live, key=repr)))
                d = -draw(st.integers(1, live[row]))
            else:
                row = tuple(draw(st.sampled_from(list(column))) for column in values)
                d = draw(st.sampled_from(list(counts)))
            live[row] = live.get(row, 0) + d
            if not live[row]:
                del live[row]
            out.append((row, t, d))
    return out


def by_data_and_time(updates: list) -> dict:
    """Consolidated updates keyed by ``(data, time)``: equal values compare equal whatever
    their form (``0E-12`` and ``0.00``), which an ordered list's ``repr`` order does not."""
    return {(d, t): r for d, t, r in consolidate(updates)}


def int_columns(schema: Schema) -> list[int]:
    return [i for i, c in enumerate(schema) if c.type.integer]


def int_expr(schema: Schema) -> st.SearchStrategy[Expr]:
    cols = [P.col(schema, i) for i in int_columns(schema)]
    leaf = st.one_of(st.sampled_from(cols), st.integers(-2, 2).map(lit))
    return st.one_of(
        leaf,
        st.builds(Arith, st.sampled_from("+-*"), leaf, leaf),
        st.builds(lambda a, b: Coalesce((a, b)), leaf, leaf),
    )


def predicate(schema: Schema) -> st.SearchStrategy[Expr]:
    ints = int_expr(schema)
    cmp = st.builds(Cmp, st.sampled_from(["=", "<>", "<", ">="]), ints, ints)
    return st.one_of(
        cmp,
        st.builds(IsNull, ints, st.booleans()),
        st.builds(lambda a, b: And((a, b)), cmp, cmp),
        st.builds(Not, cmp),
    )


def _project(schema: Schema) -> st.SearchStrategy[tuple[int, ...]]:
    ints = int_columns(schema)
    return st.lists(st.sampled_from(ints), min_size=2, max_size=2).map(tuple)


def _two_ints(plan: P.Plan) -> P.Plan:
    """The plan cut down to two integer columns (for unions and set operations)."""
    ints, width = int_columns(plan.schema), len(plan.schema)
    casts = tuple(
        (n, Cast(P.col(plan.schema, i), INT8)) for n, i in (("a", ints[0]), ("b", ints[-1]))
    )
    return P.Project(P.Map(plan, casts), (width, width + 1))


def _bound(draw: st.DrawFn, start: bool) -> W.Bound:
    kind = draw(st.sampled_from(["unbounded", "current", "offset"]))
    preceding = start if kind == "unbounded" else draw(st.booleans())
    return W.Bound(kind, draw(st.integers(0, 2)) if kind == "offset" else 0, preceding)


def window_function(draw: st.DrawFn, schema: Schema, ordered: bool) -> W.WindowFunc:
    """A random window function over ``schema`` with a random frame."""
    arg = draw(int_expr(schema))
    func = draw(st.sampled_from([f for f in W.FUNCTIONS if f not in W.COLLECTED]))
    modes = ["rows", "range", "groups"] if ordered else ["rows", "range"]
    frame = W.Frame(
        draw(st.sampled_from(modes)),
        _bound(draw, True),
        _bound(draw, False),
        draw(st.sampled_from(["no others", "current row", "group", "ties"])),
    )
    args: tuple[Expr, ...] = ()
    if func == "ntile":
        args = (lit(draw(st.integers(1, 3))),)
    elif func in ("lag", "lead"):
        args = (arg, lit(draw(st.integers(0, 2))), lit(draw(st.integers(-1, 1))))
        args = args[: draw(st.integers(1, 3))]
    elif func in ("bool_and", "bool_or"):
        args = (draw(predicate(schema)),)
    elif func == "nth_value":
        args = (arg, lit(draw(st.integers(1, 3))))
    elif func in W.VALUES or func in W.AGGREGATES and (func != "count" or draw(st.booleans())):
        args = (arg,)
    return W.WindowFunc(func, args, frame)


def plans(depth: int = 3, windows: bool = True) -> st.SearchStrategy[P.Plan]:
    """Random type-correct plans over ``r(k, v)`` and ``s(k, w)`` (with window functions
    unless ``windows`` is False)."""
    if depth == 0:
        return st.sampled_from([R, S])
    sub = plans(depth - 1, windows)
    kinds = [
        "filter",
        "map",
        "project",
        "join",
        "reduce",
        "distinct",
        "union",
        "except",
        "topk",
        "temporal",
        "threshold",
    ] + (["window"] if windows else [])

    @st.composite
    def one(draw: st.DrawFn) -> P.Plan:
        child = draw(sub)
        kind = draw(st.sampled_from(kinds))
        schema = child.schema
        ints = int_columns(schema)
        if kind == "filter":
            return P.Filter(child, (draw(predicate(schema)),))
        if kind == "map":
            return P.Map(child, (("m", draw(int_expr(schema))),))
        if kind == "project":
            return P.Project(child, draw(_project(schema)))
        if kind == "join":
            other = draw(sub)
            how = draw(st.sampled_from(["inner", "left", "right", "full"]))
            left, right = (
                draw(st.sampled_from(ints)),
                draw(st.sampled_from(int_columns(other.schema))),
            )
            width = len(schema)
            both = (*schema, *other.schema)
            residual = draw(st.one_of(st.none(), predicate(both)))
            return P.Join((child, other), ((left, width + right),), how, residual)
        if kind == "reduce":
            key = tuple(draw(st.lists(st.sampled_from(ints), max_size=1, unique=True)))
            arg = draw(int_expr(schema))
            aggs = (
                P.Aggregate("count"),
                P.Aggregate(draw(st.sampled_from(["sum", "min", "max", "count", "avg"])), arg),
                P.Aggregate("count", arg, distinct=True),
            )
            reduced = P.Reduce(child, key, aggs)
            # avg is numeric: keep the integer columns only, so later operators stay typed
            return P.Project(reduced, tuple(int_columns(reduced.schema)))
        if kind == "distinct":
            return P.Distinct(child)
        if kind == "union":
            return P.Union((_two_ints(child), _two_ints(draw(sub))))
        if kind == "except":
            other = _two_ints(draw(sub))
            return P.Threshold(P.Union((_two_ints(child), P.Negate(other))))
        if kind == "threshold":
            return P.Threshold(P.Union((child, P.Negate(child))))
        if kind == "topk":
            group = tuple(draw(st.lists(st.sampled_from(ints), max_size=1)))
            order = tuple(
                P.Order(c, draw(st.booleans()))
                for c in draw(st.lists(st.sampled_from(ints), max_size=2))
            )
            limit = draw(st.one_of(st.none(), st.integers(0, 3)))
            return P.TopK(child, group, order, limit, draw(st.integers(0, 2)))
        if kind == "window":
            ints_only = int_columns(schema)
            partition = tuple(draw(st.lists(st.sampled_from(ints_only), max_size=1)))
            order = tuple(
                P.Order(c, draw(st.booleans()), draw(st.sampled_from([None, True, False])))
                for c in draw(st.lists(st.sampled_from(ints_only), max_size=2))
            )
            funcs = tuple(
                window_function(draw, schema, bool(order)) for _ in range(draw(st.integers(1, 2)))
            )
            funcs = tuple(
                f
                if f.frame.mode != "range"
                or "offset" not in (f.frame.start.kind, f.frame.end.kind)
                or len(order) == 1
                else W.WindowFunc(f.func, f.args, W.Frame("rows", *_edges(f.frame)))
                for f in funcs
            )
            window = W.Window(child, partition, order, funcs)
            return P.Project(window, tuple(int_columns(window.schema)))
        ts = draw(st.sampled_from(ints))
        c = P.col(schema, ts)
        lower = Arith("+", Coalesce((c, lit(0))), lit(draw(st.integers(0, 4))))
        upper = Arith("+", lower, lit(draw(st.integers(0, 5))))
        return P.TemporalFilter(child, (lower,), (upper,))

    return one()


def _edges(frame: W.Frame) -> tuple[W.Bound, W.Bound, str]:
    return frame.start, frame.end, frame.exclude


def histories(times: int = 8) -> st.SearchStrategy[dict[str, list]]:
    """Updates of ``r`` and ``s`` at times in ``[0, times)``; diffs keep counts non-negative."""

    @st.composite
    def one(draw: st.DrawFn) -> dict[str, list]:
        out = {}
        for name in INPUTS:
            live: list[tuple] = []
            updates = []
            for t in range(times):
                for _ in range(draw(st.integers(0, 3))):
                    if live and draw(st.booleans()):
                        row = live.pop(draw(st.integers(0, len(live) - 1)))
                        updates.append((row, t, -1))
                    else:
                        row = (draw(value), draw(value))
                        live.append(row)
                        updates.append((row, t, 1))
            out[name] = updates
        return out

    return one()
