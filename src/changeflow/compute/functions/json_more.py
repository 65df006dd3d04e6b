"""More of PostgreSQL's json functions: ``array_to_json`` (pretty too), ``json_strip_nulls``
(the numbers as written), ``json_object`` and ``jsonb_object`` of a text array (alternating
keys and values, or pairs) or of two (keys, values)."""

from __future__ import annotations

import json
from typing import Any

from changeflow.compute import jsonb as J
from changeflow.compute.array_shape import nested
from changeflow.compute.functions.base import Function, in_process
from changeflow.compute.functions.jsonb import _json_text
from changeflow.compute.functions.jsonb_edits import strip_nulls
from changeflow.compute.functions.overloads import Overloads
from changeflow.compute.types import BOOL, JSON, JSONB, NULLTYPE, TEXT, SqlType, array_of
from changeflow.errors import EvalError, PlanError

_TEXTS = array_of(TEXT)


def array_to_json(arg: tuple[Any, SqlType], pretty: tuple[Any, SqlType] = (False, BOOL)) -> Any:
    """An array as json (sub-arrays as nested ones); ``pretty``: its elements a line each."""
    value, kind = arg
    if value is None:
        return None

    def text(v: Any) -> str:
        if isinstance(v, tuple):  # a sub-array
            return "[" + ",".join(text(x) for x in v) + "]"
        return _json_text(v, kind.element)  # type: ignore[arg-type]

    return "[" + (",\n " if pretty[0] else ",").join(text(v) for v in value) + "]"


def _array_to_json_rule(args: tuple[SqlType, ...]) -> SqlType:
    if not 1 <= len(args) <= 2 or args[0].element is None:
        raise PlanError("no match", sqlstate="42883")
    if len(args) == 2 and args[1] not in (BOOL, NULLTYPE):
        raise PlanError("no match", sqlstate="42883")
    return JSON


class _Number(str):
    """A json number as its text was written (json_strip_nulls keeps it)."""


def json_strip_nulls(text: str) -> str:
    """``text`` without the fields of its objects (at any depth) whose value is null, written
    without blanks between tokens, as PostgreSQL's."""
    value = json.loads(text, parse_float=_Number, parse_int=_Number, parse_constant=_Number)

    def written(v: Any) -> str:
        if isinstance(v, dict):
            fields = (f"{json.dumps(k, ensure_ascii=False)}:{written(x)}" for k, x in v.items())
            return "{" + ",".join(fields) + "}"
        if isinstance(v, list):
            return "[" + ",".join(written(x) for x in v) + "]"
        if isinstance(v, _Number):
            return str(v)
        return json.dumps(v, ensure_ascii=False)

    return written(strip_nulls(value))


def _pairs(keys: tuple, values: tuple | None) -> list[tuple[str, str | None]]:
    """The (key, value) pairs of json_object's arguments, checked as PostgreSQL checks them."""
    if values is not None:
        if nested(keys) or nested(values) or len(keys) != len(values):
            raise EvalError("mismatched array dimensions", sqlstate="2202E")
        pairs = list(zip(keys, values, strict=True))
    elif nested(keys):
        if any(len(p) != 2 for p in keys):
            raise EvalError("array must have two columns", sqlstate="2202E")
        pairs = [(k, v) for k, v in keys]
    else:
        if len(keys) % 2:
            raise EvalError("array must have even number of elements", sqlstate="2202E")
        pairs = list(zip(keys[::2], keys[1::2], strict=True))
    if any(k is None for k, _ in pairs):
        raise EvalError("null value not allowed for object key", sqlstate="22004")
    return pairs


def json_object(keys: tuple, values: tuple | None = None) -> str:
    """``json_object(text[] [, text[]])``: an object of text values, as PostgreSQL writes it."""
    pairs = _pairs(keys, values)
    shown = (f"{json.dumps(k, ensure_ascii=False)} : {json.dumps(v)}" for k, v in pairs)
    return "{" + ", ".join(shown) + "}"


def jsonb_object(keys: tuple, values: tuple | None = None) -> J.Jsonb:
    """``jsonb_object(text[] [, text[]])``: an object of text values."""
    return J.from_value(dict(_pairs(keys, values)))


def _one(name: str, args: tuple[SqlType, ...], result: SqlType) -> Overloads:
    return Overloads(name, ((args, result),))


def _object(name: str, result: SqlType) -> Overloads:
    return Overloads(name, (((_TEXTS,), result), ((_TEXTS, _TEXTS), result)))


_rows_only = in_process("json is computed in the process")
FUNCTIONS = [
    Function(f.name, f.rule, f.impl, f.strict, spark=_rows_only, arrow=None)
    for f in [
        Function("array_to_json", _array_to_json_rule, array_to_json, strict=False),
        Function("json_strip_nulls", _one("json_strip_nulls", (JSON,), JSON), json_strip_nulls),
        Function("json_object", _object("json_object", JSON), json_object),
        Function("jsonb_object", _object("jsonb_object", JSONB), jsonb_object),
    ]
]
