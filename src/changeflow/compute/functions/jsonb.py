"""jsonb functions: the operators ``->``, ``->>``, ``#>``, ``#>>``, ``?`` and ``@>`` under
PostgreSQL's own function names, the builders and ``to_jsonb``. Spark has no jsonb: plans with
jsonb stay in the process (``dataflow.process_only``)."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from changeflow.compute import json_text as JT
from changeflow.compute import jsonb as J
from changeflow.compute.functions.base import Function, _sig, determined, in_process
from changeflow.compute.scalars import to_text
from changeflow.compute.types import (
    BOOL,
    DATE,
    INT4,
    JSON,
    JSONB,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    SqlType,
    array_of,
)
from changeflow.errors import EvalError, PlanError

_rows_only = in_process("jsonb is computed in the process")


def _json_value(value: Any, kind: SqlType) -> Any:
    """A SQL value as the JSON value ``to_jsonb`` makes of it."""
    if value is None:
        return None
    if kind == JSONB:
        return value.value()
    if kind == JSON:  # json's text, read as jsonb reads it
        return J.parse_jsonb(value).value()
    if kind.element is not None:
        return [_json_value(v, kind.element) for v in value]
    if kind == BOOL:
        return bool(value)
    if kind.numeric:
        return value if isinstance(value, Decimal) else Decimal(repr(value))
    if kind in (TIMESTAMP, TIMESTAMPTZ, DATE) and isinstance(value, date):
        if isinstance(value, datetime):
            text = value.replace(tzinfo=None).isoformat()
            text = text.rstrip("0").rstrip(".") if "." in text else text
            return text + ("+00:00" if kind == TIMESTAMPTZ else "")
        return value.isoformat()
    return value if isinstance(value, str) else to_text(value, kind)


def to_jsonb(arg: tuple[Any, SqlType]) -> J.Jsonb | None:
    value, kind = arg
    return None if value is None else J.from_value(_json_value(value, kind))


def to_json(arg: tuple[Any, SqlType]) -> str | None:
    """``to_json``: a value as json text, as PostgreSQL writes it (an array without spaces,
    a jsonb as its own text, strings quoted and escaped)."""
    value, kind = arg
    return None if value is None else _json_text(value, kind)


def _json_text(value: Any, kind: SqlType) -> str:
    if value is None:
        return "null"
    if kind == JSONB:
        return value.text
    if kind == JSON:
        return value
    if kind.element is not None:
        return "[" + ",".join(_json_text(v, kind.element) for v in value) + "]"
    if kind == BOOL:
        return "true" if value else "false"
    if kind.numeric:
        text = to_text(value, kind)
        return text if text.lstrip("-")[:1].isdigit() else json.dumps(text)  # NaN, Infinity
    return json.dumps(_json_value(value, kind), ensure_ascii=False)


def build_array(*args: tuple[Any, SqlType]) -> J.Jsonb:
    return J.from_value([_json_value(v, k) for v, k in args])


def build_object(*args: tuple[Any, SqlType]) -> J.Jsonb:
    if len(args) % 2:
        raise EvalError("argument list must have even number of elements", sqlstate="22023")
    out: dict[str, Any] = {}
    for i in range(0, len(args), 2):
        (key, kind), (value, vkind) = args[i], args[i + 1]
        if key is None:
            raise EvalError(f"argument {i + 1}: key must not be null", sqlstate="22023")
        out[key if kind == TEXT else to_text(key, kind)] = _json_value(value, vkind)
    return J.from_value(out)


def object_of_pairs(pairs: tuple[J.Jsonb | None, ...]) -> J.Jsonb:
    """An object of ``[key, value]`` pairs (a key as its JSON text), a later key's value
    winning: what ``jsonb_object_agg(k, v)`` makes of ``array_agg(jsonb_build_array(k, v))``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, value = pair.value() if pair is not None else (None, None)
        if key is None:
            raise EvalError("field name must not be null", sqlstate="22023")
        if isinstance(key, dict | list):
            raise EvalError(
                "key value must be scalar, not array, composite, or json", sqlstate="22023"
            )
        out[J.as_text(J.from_value(key))] = value
    return J.from_value(out)


def _any(result: SqlType) -> Any:
    def rule(args: tuple[SqlType, ...]) -> SqlType:
        return result

    return rule


def _one_any(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 1:
        raise PlanError("no match", sqlstate="42883")
    determined(args[0])
    return JSONB


def _to_json_rule(args: tuple[SqlType, ...]) -> SqlType:
    _one_any(args)
    return JSON


FUNCTIONS = [
    Function("jsonb_object_field", _sig((JSONB, TEXT), result=JSONB), J.object_field),
    Function(
        "jsonb_object_field_text",
        _sig((JSONB, TEXT), result=TEXT),
        lambda j, k: J.as_text(J.object_field(j, k)),
    ),
    Function("jsonb_array_element", _sig((JSONB, "int"), result=JSONB), J.array_element),
    Function(
        "jsonb_array_element_text",
        _sig((JSONB, "int"), result=TEXT),
        lambda j, i: J.as_text(J.array_element(j, i)),
    ),
    Function("jsonb_extract_path", _sig((JSONB, array_of(TEXT)), result=JSONB), J.extract_path),
    Function(
        "jsonb_extract_path_text",
        _sig((JSONB, array_of(TEXT)), result=TEXT),
        lambda j, p: J.as_text(J.extract_path(j, p)),
    ),
    Function("jsonb_exists", _sig((JSONB, TEXT), result=BOOL), J.exists),
    Function("jsonb_contains", _sig((JSONB, JSONB), result=BOOL), J.contains),
    Function("jsonb_contained", _sig((JSONB, JSONB), result=BOOL), lambda a, b: J.contains(b, a)),
    Function(
        "jsonb_exists_any",
        _sig((JSONB, array_of(TEXT)), result=BOOL),
        lambda j, keys: any(k is not None and J.exists(j, k) for k in keys),
    ),
    Function(
        "jsonb_exists_all",
        _sig((JSONB, array_of(TEXT)), result=BOOL),
        lambda j, keys: all(k is not None and J.exists(j, k) for k in keys),
    ),
    Function("jsonb_concat", _sig((JSONB, JSONB), result=JSONB), J.concat),
    Function(
        "jsonb_delete",
        _sig((JSONB, TEXT), (JSONB, "int"), (JSONB, array_of(TEXT)), result=JSONB),
        J.delete,
    ),
    Function("jsonb_typeof", _sig((JSONB,), result=TEXT), J.typeof),
    Function("jsonb_array_length", _sig((JSONB,), result=INT4), J.array_length),
    Function("to_jsonb", _one_any, to_jsonb, strict=False),
    Function("to_json", _to_json_rule, to_json, strict=False),
    Function("jsonb_build_array", _any(JSONB), build_array, strict=False),
    Function("jsonb_build_object", _any(JSONB), build_object, strict=False),
    Function("jsonb_object_of_pairs", _sig((array_of(JSONB),), result=JSONB), object_of_pairs),
    Function("json_object_field", _sig((JSON, TEXT), result=JSON), JT.object_field),
    Function("json_object_field_text", _sig((JSON, TEXT), result=TEXT), JT.object_field_text),
    Function("json_array_element", _sig((JSON, "int"), result=JSON), JT.array_element),
    Function("json_array_element_text", _sig((JSON, "int"), result=TEXT), JT.array_element_text),
    Function("json_extract_path", _sig((JSON, array_of(TEXT)), result=JSON), JT.extract_path),
    Function(
        "json_extract_path_text", _sig((JSON, array_of(TEXT)), result=TEXT), JT.extract_path_text
    ),
    Function("json_typeof", _sig((JSON,), result=TEXT), JT.typeof),
    Function("json_array_length", _sig((JSON,), result=INT4), JT.array_length),
]


def _kind(j: Any) -> str:
    return J.typeof(j) if isinstance(j, J.Jsonb) else JT.typeof(j)


def _record_of(j: Any, function: str) -> Any:
    """The argument of json_to_record(set) (``function``), checked as PostgreSQL checks it."""
    kind = _kind(j)
    if function.endswith("set") and kind != "array":
        shown = "a non-array" if function.startswith("jsonb") else f"an {kind}"
        shown = "a scalar" if shown not in ("a non-array", "an object") else shown
        raise EvalError(f"cannot call {function} on {shown}", sqlstate="22023")
    if not function.endswith("set") and kind != "object":
        shown = "an array" if kind == "array" else "a scalar"
        raise EvalError(f"cannot call populate_composite on {shown}", sqlstate="22023")
    return j


def _record_element(j: Any, function: str) -> Any:
    """An element of json_to_recordset's array: an object."""
    if _kind(j) != "object":
        message = f"argument of {function} must be an array of objects"
        raise EvalError(message, sqlstate="22023")
    return j


FUNCTIONS += [
    Function("json_record_of", _sig((JSONB, TEXT), (JSON, TEXT), result="same"), _record_of),
    Function("json_record_element", _sig((JSONB, TEXT), result=JSONB), _record_element),
]
FUNCTIONS = [
    Function(f.name, f.rule, f.impl, f.strict, spark=_rows_only, arrow=None) for f in FUNCTIONS
]
