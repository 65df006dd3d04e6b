"""The arithmetic of SQL/JSON path, PostgreSQL's: ``+ - * / %`` between two single numeric
items (22038 otherwise, 22012 dividing by zero), unary ``+``/``-`` of each numeric item
(2203B otherwise), and
the ``.keyvalue()`` item method (the root object's pairs, their ``id`` 0)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

from changeflow.compute.scalars import div_scale
from changeflow.errors import EvalError

OPERATORS = ("+", "-", "*", "/", "%")


def is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def binary(op: str, lefts: list[Any], rights: list[Any]) -> list[Any]:
    """``left op right`` of one numeric item each."""
    for side, items in (("left", lefts), ("right", rights)):
        if len(items) != 1 or not is_number(items[0]):
            raise EvalError(
                f"{side} operand of jsonpath operator {op} is not a single numeric value",
                sqlstate="22038",
            )
    a, b = Decimal(str(lefts[0])), Decimal(str(rights[0]))
    if op == "+":
        return [a + b]
    if op == "-":
        return [a - b]
    if op == "*":
        return [a * b]
    if b == 0:
        raise EvalError("division by zero", sqlstate="22012")
    with localcontext() as ctx:
        ctx.prec = 1100
        if op == "%":
            return [a % b]  # the dividend's sign, as PostgreSQL's numeric
        scale = div_scale(a, b)
        return [(a / b).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)]


def unary(op: str, items: list[Any]) -> list[Any]:
    """``-x`` (or ``+x``) of each item, each a number."""
    out = []
    for item in items:
        if not is_number(item):
            raise EvalError(
                f"operand of unary jsonpath operator {op} is not a numeric value",
                sqlstate="2203B",
            )
        value = Decimal(str(item))
        out.append(-value if op == "-" else value)
    return out


def keyvalue(item: Any, root: Any, strict: bool) -> list[Any]:
    """The pairs of an object as ``{"id", "key", "value"}`` objects (an array's objects'
    pairs in lax mode); ``id`` is PostgreSQL's offset of the object in its document, known
    here for the root (0) alone."""
    if isinstance(item, list) and not strict:
        return [x for element in item for x in keyvalue(element, root, strict)]
    if not isinstance(item, dict):
        raise EvalError(
            "jsonpath item method .keyvalue() can only be applied to an object", sqlstate="2203C"
        )
    if item is not root:
        raise EvalError(
            ".keyvalue() of an object inside the document is not supported", sqlstate="0A000"
        )
    return [{"id": 0, "key": k, "value": v} for k, v in sorted(item.items(), key=_jsonb_order)]


def _jsonb_order(pair: tuple[str, Any]) -> tuple[int, bytes]:
    """jsonb's key order: shorter keys first, then by bytes."""
    key = pair[0].encode()
    return len(key), key
