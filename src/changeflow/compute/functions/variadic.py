"""Calls with a ``VARIADIC`` array (``concat(VARIADIC a)``, ``format(f, VARIADIC a)``): for
each function of any number of arguments, a form taking its fixed arguments and then one array
whose elements are the rest. A NULL array makes the call NULL, as in PostgreSQL, except
``format``'s, which formats with no arguments."""

from __future__ import annotations

from typing import Any

from changeflow.compute.array_shape import flat
from changeflow.compute.functions.base import Function, Rule, function_named, in_process
from changeflow.compute.types import NULLTYPE, TEXT, SqlType
from changeflow.errors import PlanError

# the functions a VARIADIC array can be given to
BASES = (
    "concat",
    "concat_ws",
    "format",
    "json_build_array",
    "json_build_object",
    "jsonb_build_array",
    "jsonb_build_object",
)


def variadic_name(base: str) -> str:
    """The name of ``base``'s form taking a VARIADIC array."""
    return f"{base}_variadic"


def _rule(base: str) -> Rule:
    def rule(args: tuple[SqlType, ...]) -> SqlType:
        *fixed, array = args
        if array.element is None and array is not NULLTYPE:
            raise PlanError("VARIADIC argument must be an array", sqlstate="42804", named=True)
        return function_named(base).rule((*fixed, array.element or TEXT))

    return rule


def _impl(base: str) -> Any:
    def impl(*args: tuple[Any, SqlType]) -> Any:
        *fixed, (values, kind) = args
        if values is None and base != "format":
            return None
        element = kind.element or TEXT
        spread = [(v, element) for v in flat(values or ())]
        return function_named(base).impl(*fixed, *spread)

    return impl


FUNCTIONS = [
    Function(
        variadic_name(base),
        _rule(base),
        _impl(base),
        strict=False,
        spark=in_process(f"{base}(VARIADIC …) runs in the process"),
    )
    for base in BASES
]
