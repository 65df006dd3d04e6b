"""json built as PostgreSQL writes it: ``json_build_object`` (``{"a" : 1}``, keys as given),
``json_build_array`` (``[1, "a"]``), a row as ``row_to_json`` writes it (``{"a":1}``, the
planner's ``json_of_record`` of names and values), ``json_agg``'s array (the planner's
``json_agg_of`` of the array_agg) and ``jsonb_pretty``."""

from __future__ import annotations

from typing import Any

from changeflow.compute import jsonb as J
from changeflow.compute.functions.base import Function, _sig, in_process
from changeflow.compute.functions.jsonb import _json_text
from changeflow.compute.scalars import to_text
from changeflow.compute.types import BOOL, JSON, JSONB, NULLTYPE, TEXT, SqlType
from changeflow.errors import EvalError, PlanError

_IN_PROCESS = in_process("json is built in the process")


def _pairs(args: tuple[tuple[Any, SqlType], ...], name: str) -> list[tuple[str, str]]:
    if len(args) % 2:
        raise EvalError(
            "argument list must have even number of elements "
            f"(the arguments of {name}() must consist of alternating keys and values)",
            sqlstate="22023",
        )
    out = []
    for i in range(0, len(args), 2):
        (key, kind), (value, vkind) = args[i], args[i + 1]
        if key is None:
            raise EvalError(f"argument {i + 1} cannot be null", sqlstate="22023")
        text = key if kind == TEXT else to_text(key, kind)
        out.append((J.dump(text), _json_text(value, vkind)))
    return out


def build_object(*args: tuple[Any, SqlType]) -> str:
    return "{" + ", ".join(f"{k} : {v}" for k, v in _pairs(args, "json_build_object")) + "}"


def build_array(*args: tuple[Any, SqlType]) -> str:
    return "[" + ", ".join(_json_text(v, k) for v, k in args) + "]"


def record(*args: tuple[Any, SqlType]) -> str:
    return "{" + ",".join(f"{k}:{v}" for k, v in _pairs(args, "row_to_json")) + "}"


def agg_of(values: tuple[Any, SqlType], rows: tuple[Any, SqlType]) -> str | None:
    """``json_agg``'s text of the values it aggregated: ``[1, "a"]``, each as ``to_json``
    writes it, a row or an array after the first on a line of its own (``, \n {…}``)."""
    array, kind = values
    if array is None or kind.element is None:
        return None
    out: list[str] = []
    for v in array:
        nested = isinstance(v, tuple)  # an aggregated array
        text = _json_text(v, kind if nested else kind.element)
        structured = nested or rows[0] is True
        out.append("\n " + text if out and v is not None and structured else text)
    return "[" + ", ".join(out) + "]"


def _agg_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2 or args[0].element is None or args[1] not in (BOOL, NULLTYPE):
        raise PlanError("no match", sqlstate="42883")
    return JSON


def pretty(j: J.Jsonb) -> str:
    """``j`` with each element and field on a line of its own, indented by four spaces."""

    def lines(v: Any, depth: int) -> str:
        pad, inner = "    " * depth, "    " * (depth + 1)
        if isinstance(v, dict):
            items = [f"{inner}{J.dump(k)}: {lines(x, depth + 1)}" for k, x in v.items()]
            return "{\n" + ",\n".join(items) + ("\n" if items else "") + pad + "}"
        if isinstance(v, list):
            items = [inner + lines(x, depth + 1) for x in v]
            return "[\n" + ",\n".join(items) + ("\n" if items else "") + pad + "]"
        return J.dump(v)

    return lines(j.value(), 0)


def _json(args: tuple[SqlType, ...]) -> SqlType:
    return JSON


FUNCTIONS = [
    Function("json_build_object", _json, build_object, strict=False, spark=_IN_PROCESS),
    Function("json_build_array", _json, build_array, strict=False, spark=_IN_PROCESS),
    Function("json_of_record", _json, record, strict=False, spark=_IN_PROCESS),
    Function("json_agg_of", _agg_rule, agg_of, strict=False, spark=_IN_PROCESS),
    Function("jsonb_pretty", _sig((JSONB,), result=TEXT), pretty, spark=_IN_PROCESS),
]
