"""jsonpath queries of jsonb (:mod:`changeflow.compute.jsonpath`'s subset, the path given as
text): ``jsonb_path_exists``, ``jsonb_path_match``, ``jsonb_path_query_array``,
``jsonb_path_query_first``, and the items as jsonb[] (``jsonb_path_values``) that the
set-returning ``jsonb_path_query`` unnests."""

from __future__ import annotations

from typing import Any

from changeflow.compute import jsonb as J
from changeflow.compute import jsonpath
from changeflow.compute.functions.base import Function, _sig, in_process
from changeflow.compute.types import BOOL, JSONB, TEXT, SqlType, array_of
from changeflow.errors import EvalError

_IN_PROCESS = in_process("jsonpath is run in the process")


def _items(
    j: J.Jsonb, path: str, variables: J.Jsonb | None = None, silent: bool = False
) -> list | None:
    """The items of ``path`` in ``j``; with ``silent``, None where the path meets a value
    it cannot step into (strict mode's errors), as PostgreSQL's ``silent``."""
    parsed = jsonpath.parse(path)
    try:
        return jsonpath.query(parsed, j.value(), None if variables is None else variables.value())
    except EvalError as e:
        if silent and e.sqlstate.startswith("220"):
            return None
        raise


def path_exists(*args: Any) -> bool | None:
    found = _items(*args)
    return None if found is None else bool(found)


def path_array(*args: Any) -> J.Jsonb:
    return J.from_value(_items(*args) or [])


def path_values(*args: Any) -> tuple[J.Jsonb, ...]:
    return tuple(J.from_value(v) for v in _items(*args) or ())


def path_match(*args: Any) -> bool | None:
    """The truth of a predicate path (``$.a == 1``): its one boolean or null item."""
    found = _items(*args)
    if found is None or (len(found) == 1 and (found[0] is None or isinstance(found[0], bool))):
        return None if not found else found[0]
    if len(args) > 3 and args[3]:
        return None
    raise EvalError("single boolean result is expected", sqlstate="22038")


def path_first(*args: Any) -> J.Jsonb | None:
    found = _items(*args)
    return J.from_value(found[0]) if found else None


def _rule(result: SqlType) -> Any:
    return _sig((JSONB, TEXT), (JSONB, TEXT, JSONB), (JSONB, TEXT, JSONB, BOOL), result=result)


FUNCTIONS = [
    Function("jsonb_path_exists", _rule(BOOL), path_exists, spark=_IN_PROCESS),
    Function("jsonb_path_match", _rule(BOOL), path_match, spark=_IN_PROCESS),
    Function("jsonb_path_query_array", _rule(JSONB), path_array, spark=_IN_PROCESS),
    Function("jsonb_path_query_first", _rule(JSONB), path_first, spark=_IN_PROCESS),
    Function("jsonb_path_values", _rule(array_of(JSONB)), path_values, spark=_IN_PROCESS),
]
