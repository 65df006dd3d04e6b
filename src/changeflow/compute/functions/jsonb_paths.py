"""jsonpath queries of jsonb (:mod:`changeflow.compute.jsonpath`'s subset, the path given as
text): ``jsonb_path_exists``, ``jsonb_path_query_array``, ``jsonb_path_query_first``, and the
items as jsonb[] (``jsonb_path_values``) that the set-returning ``jsonb_path_query`` unnests."""

from __future__ import annotations

from changeflow.compute import jsonb as J
from changeflow.compute import jsonpath
from changeflow.compute.functions.base import Function, _sig, in_process
from changeflow.compute.types import BOOL, JSONB, TEXT, array_of

_IN_PROCESS = in_process("jsonpath is run in the process")


def _items(j: J.Jsonb, path: str) -> list:
    return jsonpath.query(jsonpath.parse(path), j.value())


def path_values(j: J.Jsonb, path: str) -> tuple[J.Jsonb, ...]:
    return tuple(J.from_value(v) for v in _items(j, path))


def path_first(j: J.Jsonb, path: str) -> J.Jsonb | None:
    found = _items(j, path)
    return J.from_value(found[0]) if found else None


FUNCTIONS = [
    Function(
        "jsonb_path_exists",
        _sig((JSONB, TEXT), result=BOOL),
        lambda j, p: bool(_items(j, p)),
        spark=_IN_PROCESS,
    ),
    Function(
        "jsonb_path_query_array",
        _sig((JSONB, TEXT), result=JSONB),
        lambda j, p: J.from_value(_items(j, p)),
        spark=_IN_PROCESS,
    ),
    Function(
        "jsonb_path_query_first", _sig((JSONB, TEXT), result=JSONB), path_first, spark=_IN_PROCESS
    ),
    Function(
        "jsonb_path_values",
        _sig((JSONB, TEXT), result=array_of(JSONB)),
        path_values,
        spark=_IN_PROCESS,
    ),
]
