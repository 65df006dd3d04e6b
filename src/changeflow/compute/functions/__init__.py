"""Scalar functions by name: the common string, numeric, date/time and jsonb functions of
PostgreSQL.

Each :class:`Function` is defined once, in its family's module (``text``, ``numbers``,
``times``, ``formats``, ``from_text``, ``arrays``, ``jsonb``…): a type rule (argument types to
result type, or a :class:`PlanError`), its meaning on Python values (the reference), its Spark
form and, where Arrow has a kernel that means the same, its Arrow form. A strict function (most)
is NULL when any argument is NULL; ``concat``, ``greatest`` and ``least`` skip NULLs as
PostgreSQL's do.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from changeflow.compute.expr import Expr, _typed
from changeflow.compute.functions import (
    array_edits,
    array_sets,
    arrays,
    binary,
    bits,
    chars,
    formats,
    from_text,
    json_build,
    json_more,
    jsonb,
    jsonb_edits,
    jsonb_paths,
    makers,
    numbers,
    ordered_sets,
    parts,
    patterns,
    periods,
    regexp_positions,
    regexp_sets,
    regression,
    statistics,
    text,
    times,
    to_number,
    trig,
    uuids,
    variadic,
    zones,
)
from changeflow.compute.functions.base import UNDETERMINED, Function, function_named
from changeflow.compute.scalars import check_range, coerce, one_nan
from changeflow.compute.types import INT4, INT8, NUMERIC
from changeflow.errors import PlanError

# strict functions that may be NULL of arguments that are not: a missing key, element or
# match, an empty array's bounds, a scale of NaN, a sum of no values, a silenced path error
NULL_RESULTS = frozenset(
    {"regexp_match", "regexp_nth_match", "jsonb_path_exists", "jsonb_path_query_first"}
    | {"jsonb_path_match"}
    | {f"{j}_{w}" for j in ("json", "jsonb") for w in ("object_field", "array_element")}
    | {f"{j}_{w}_text" for j in ("json", "jsonb") for w in ("object_field", "array_element")}
    | {f"{j}_extract_path{t}" for j in ("json", "jsonb") for t in ("", "_text")}
    | {"array_length", "array_upper", "array_lower", "array_ndims", "array_dims"}
    | {"scale", "min_scale", "interval_sum_of", "interval_avg_of"}
)
FUNCTIONS: dict[str, Function] = {
    f.name: replace(f, nulls=True) if f.name in NULL_RESULTS else f
    for family in (
        *(text, patterns, chars, numbers, times, parts, zones, formats, from_text, arrays, jsonb),
        array_edits,
        array_sets,
        jsonb_edits,
        binary,
        statistics,
        regression,
        bits,
        to_number,
        trig,
        ordered_sets,
        makers,
        json_build,
        json_more,
        regexp_sets,
        regexp_positions,
        jsonb_paths,
        periods,
        variadic,
        uuids,
    )
    for f in family.FUNCTIONS
}

# functions of the table that are not PostgreSQL's (the planner's own forms), or are its
# syntax rather than functions of pg_proc (GREATEST, LEAST, TRIM): pg_proc leaves them out
NOT_IN_PG_PROC = frozenset(
    {
        "epoch_ms",
        "jsonb_object_of_pairs",
        "json_of_record",
        "json_agg_of",
        "json_record_of",
        "json_record_element",
        "jsonb_path_values",
        "overlaps_of",
        "record_text",
        "greatest",
        "least",
        "trim",
    }
    | {f"interval_{p}" for p in ("avg_of", "days", "from_parts", "key", "micros", "months")}
    | {"interval_sum_of", "oid_of_bigint", "char_n", "varchar_n", "numeric_n", "typed_text"}
    | {"array_slice_of", "array_assign", "jsonb_assign"}
    | {f.name for f in uuids.FUNCTIONS}  # (the uuid-ossp extension's)
    | {variadic.variadic_name(base) for base in variadic.BASES}
    | set(statistics.FORMS)
    | regression.FORMS
    | ordered_sets.FORMS
    | regexp_sets.FORMS
    | {"int_and", "int_or", "int_xor", "int_not", "int_shl", "int_shr"}
)
assert FUNCTIONS.keys() >= NOT_IN_PG_PROC | NULL_RESULTS


@dataclass(frozen=True)
class Func(Expr):
    """A call of a function in :data:`FUNCTIONS`."""

    name: str
    args: tuple[Expr, ...]
    function: Function = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        function = FUNCTIONS.get(self.name.lower())
        kinds = tuple(a.type for a in self.args)
        if function is None:
            shown = ", ".join(map(str, kinds))
            raise PlanError(f"function {self.name}({shown}) does not exist", sqlstate="42883")
        try:
            kind = function.rule(kinds)
        except PlanError as e:
            if e.sqlstate in ("42725", UNDETERMINED) or e.fields.get("named"):
                raise  # (named: the rule's message names the call as it was written)
            shown = ", ".join(map(str, kinds))
            raise PlanError(
                f"function {self.name}({shown}) does not exist", sqlstate="42883"
            ) from None
        object.__setattr__(self, "function", function)
        strict = function.strict and not function.nulls
        _typed(self, kind, any(a.nullable for a in self.args) if strict else True)

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        values = [a.eval(row, now) for a in self.args]
        if not self.function.strict:
            return self.function.impl(
                *((coerce(v, self.type), a.type) for v, a in zip(values, self.args, strict=True))
            )
        if any(v is None for v in values):
            return None
        result = self.function.impl(*values)
        if result is None:
            return result
        if self.type.floating or self.type == NUMERIC:
            return one_nan(result)
        return check_range(result, self.type) if self.type in (INT4, INT8) else result

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


__all__ = ["FUNCTIONS", "NOT_IN_PG_PROC", "Func", "Function", "function_named"]
