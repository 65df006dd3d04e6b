"""How far the cluster tier reaches for ``real`` values: Spark holds them as FloatType (the
same float32s), reads, compares two of them and widens them to double precision exactly; their
arithmetic (rounded to float32, with PostgreSQL's overflow and underflow errors), their text,
their casts from other types and their sums are computed in this process. And where a bulk
hydration on Spark would not match the rows that maintain the view after it: a numeric quotient
(``/``, avg), whose scale PostgreSQL gives by value."""

from __future__ import annotations

from dataclasses import is_dataclass

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.expr import Arith, Cast, Cmp, Col, Expr, IsNull
from changeflow.compute.types import FLOAT4, FLOAT8, NUMERIC


def real_on_spark(e: Expr) -> bool | None:
    """Has Spark a form for ``e``, which has a real operand or result? None if it has none."""
    kinds = [c.type for c in e.children()]
    if FLOAT4 not in (e.type, *kinds):
        return None
    if isinstance(e, Col | IsNull):
        return True
    if isinstance(e, Cmp):
        return all(k == FLOAT4 for k in kinds)  # Spark compares a real with an int as floats
    return isinstance(e, Cast) and e.type == FLOAT8


def sums_reals(node: P.Plan) -> bool:
    """Does ``node`` aggregate real values other than by counting them, or taking the least or
    greatest (an aggregate or a window function over them)?"""
    if isinstance(node, P.Reduce):
        calls = [(a.func, a.arg) for a in node.aggregates]
    elif isinstance(node, W.Window):
        calls = [(f.func, a) for f in node.functions for a in f.args[:1]]
    else:
        return False
    kept = ("count", "min", "max", "first_value", "last_value", "lag", "lead", "nth_value")
    return any(arg is not None and arg.type == FLOAT4 and f not in kept for f, arg in calls)


def divides_numerics(plan: P.Plan) -> bool:
    """Does ``plan`` divide numerics (``/``, or avg)? Spark's quotient has its own scale, the
    rows' PostgreSQL's (``numeric_div``): a view Spark hydrates and the rows then maintain
    would hold both, and a retraction would not cancel what Spark wrote."""
    nodes: list[P.Plan] = [plan]
    while nodes:
        node = nodes.pop()
        nodes += node.inputs()
        if isinstance(node, P.Reduce) and any(
            a.func == "avg" and a.arg is not None and a.arg.type == NUMERIC for a in node.aggregates
        ):
            return True
        found: list[object] = list(vars(node).values())
        while found:
            v = found.pop()
            if isinstance(v, Arith) and v.op == "/" and v.type == NUMERIC:
                return True
            if isinstance(v, Expr):
                found += v.children()
            elif isinstance(v, tuple | list):
                found += v
            elif is_dataclass(v) and not isinstance(v, type | P.Plan):  # an aggregate, an order
                found += vars(v).values()
    return False
