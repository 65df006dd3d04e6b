"""A call's arguments all read: sqlglot keeps a known function's extra arguments in slots of
its node the planner does not read (``ceil(x, 2)`` as Ceil's decimals, ``left(s, 1, 2)``), or
drops them (``to_hex(1, 2)``), so a call the planner made with fewer arguments than were
written is refused as PostgreSQL refuses it: the function of those arguments does not exist
(42883)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from changeflow.adapter.sql.jsonb_scalars import VARIADIC_PATH
from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.errors import PlanError

# calls the planner makes under another name of the same function
_SAME = {
    "substr": "substring",
    "ceiling": "ceil",
    "character_length": "char_length",
}


def written(node: exp.Expression) -> list[exp.Expression]:
    """The argument expressions of ``node`` (a call), in the order of its slots."""
    out: list[exp.Expression] = []
    for value in node.args.values():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, exp.Expression) and not isinstance(v, exp.DataType):
                out.append(v)
    return out


def all_read(
    node: exp.Expression,
    result: X.Expr,
    names: tuple[str | None, ...],
    plan: Callable[[exp.Expression], X.Expr],
) -> X.Expr:
    """``result``, the call ``node`` planned; 42883 if it is a call of the function written
    (one of ``names``) with fewer arguments than were written. ``plan`` types the arguments
    for the message."""
    name = node.meta.get("name")
    if not isinstance(result, Func) or name is None:
        return result
    if result.name not in (name, _SAME.get(name), *names):
        return result
    if len(result.args) < written_count(node) and result.name not in VARIADIC_PATH:
        refuse(node, plan)
    return result


def written_count(node: exp.Expression) -> int:
    """How many arguments the call ``node`` was written with (0 if not known)."""
    return node.meta.get("arity", 0)


def refuse(node: exp.Expression, plan: Callable[[exp.Expression], X.Expr]) -> None:
    """Raise 42883 for the call ``node``: no function takes the arguments written."""
    args = written(node)
    kinds = []
    for a in args:
        try:
            literal = isinstance(a, exp.Literal) and a.is_string
            kinds.append("unknown" if literal else str(plan(a).type))
        except PlanError:
            kinds.append("unknown")
    count = written_count(node)
    kinds = (kinds + ["unknown"] * count)[:count]
    name = node.meta.get("name", type(node).__name__.lower())
    raise PlanError(f"function {name}({', '.join(kinds)}) does not exist", sqlstate="42883")
