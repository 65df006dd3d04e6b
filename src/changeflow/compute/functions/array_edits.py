"""More functions of arrays (PostgreSQL's): their shape (``array_ndims``, ``array_dims``), arrays
made or changed (``array_fill``, ``trim_array``, ``array_replace``) and searched
(``array_position``, ``array_positions``). Arrays here have one dimension, from 1."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from changeflow.compute.array_shape import dims_text, nested, shape
from changeflow.compute.functions.base import (
    F,
    Function,
    _args,
    determined,
    fail,
    in_process,
    spark_type,
)
from changeflow.compute.scalars import as_type
from changeflow.compute.types import INT4, NULLTYPE, TEXT, SqlType, array_of
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


def _no_match() -> PlanError:
    return PlanError("no match", sqlstate="42883")


def _array(kind: SqlType) -> SqlType:
    """``kind`` of an anyarray argument (42804 for a bare NULL)."""
    if determined(kind).element is None:
        raise _no_match()
    return kind


def _compatible(array: SqlType, *elements: SqlType) -> SqlType:
    """The element type of PostgreSQL's anycompatiblearray and anycompatible arguments: the
    array's element, or a wider numeric one of the elements (a NULL array takes theirs)."""
    if array is not NULLTYPE and array.element is None:
        raise _no_match()
    kinds = [k for k in (array.element if array is not NULLTYPE else None, *elements) if k]
    kinds = [k for k in kinds if k is not NULLTYPE]
    if not kinds:
        return TEXT  # the anycompatible type of unknowns
    if all(k == kinds[0] for k in kinds):
        return kinds[0]
    if all(k.numeric for k in kinds):
        return max(kinds, key=lambda k: k.rank)
    raise _no_match()


def _shape_rule(result: SqlType) -> Any:
    def rule(args: tuple[SqlType, ...]) -> SqlType:
        if len(args) != 1:
            raise _no_match()
        _array(args[0])
        return result

    return rule


def _trim_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2 or not (args[1].integer or args[1] is NULLTYPE):
        raise _no_match()
    return _array(args[0])


def _fill_rule(args: tuple[SqlType, ...]) -> SqlType:
    ints = array_of(INT4)
    if len(args) not in (2, 3) or any(a not in (ints, NULLTYPE) for a in args[1:]):
        raise _no_match()
    return array_of(determined(args[0]))


def _replace_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 3:
        raise _no_match()
    return array_of(_compatible(args[0], args[1], args[2]))


def _assign_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 3 or args[0].element is None or not (args[1].integer or args[1] is NULLTYPE):
        raise _no_match()
    return args[0]


MAX_ELEMENTS = 134217727  # PostgreSQL's largest array


def _assign(
    array: tuple[Any, SqlType], index: tuple[Any, SqlType], value: tuple[Any, SqlType]
) -> tuple:
    """``a[i] = v`` (UPDATE's SET): the array with its i-th element ``v``, grown with NULLs to
    reach it; a NULL array is an empty one. PostgreSQL would move an array's lower bound
    for an i below 1 (or past the end of an empty one): refused here, arrays start at 1."""
    values, i = array[0] or (), index[0]
    if i is None:
        raise EvalError("array subscript in assignment must not be null", sqlstate="22004")
    if nested(values):
        raise EvalError("wrong number of array subscripts", sqlstate="2202E")
    if i > MAX_ELEMENTS:
        raise EvalError(
            f"array size exceeds the maximum allowed ({MAX_ELEMENTS})", sqlstate="54000"
        )
    if i < 1 or (not values and i > 1):
        raise EvalError(
            f"assigning element {i} of an array of {len(values)} would give it a lower bound "
            "other than 1: arrays here start at 1",
            sqlstate="0A000",
            hint="Assign elements from 1 up, or the whole array.",
        )
    padded = values + (None,) * (i - len(values))
    return padded[: i - 1] + (value[0],) + padded[i:]


def _position_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) not in (2, 3) or (len(args) == 3 and not (args[2].integer or args[2] is NULLTYPE)):
        raise _no_match()
    _compatible(args[0], args[1])
    return INT4


def _positions_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2:
        raise _no_match()
    _compatible(args[0], args[1])
    return array_of(INT4)


def _ndims(values: tuple) -> int | None:
    return len(shape(values)) or None


def _trim(values: tuple, n: int) -> tuple:
    if not 0 <= n <= len(values):
        raise EvalError(
            f"number of elements to trim must be between 0 and {len(values)}", sqlstate="2202E"
        )
    return values[: len(values) - n]


_NULL_ARRAY = "dimension array or low bound array cannot be null"
_NULL_VALUES = "dimension values cannot be null"
_SUBSCRIPTS = "wrong number of array subscripts"
_SIZE = "array size exceeds the maximum allowed (134217727)"
_SHAPE = "array_fill's lower bound would be other than 1; arrays here have lower bounds of 1"


def _fill(*args: tuple[Any, SqlType]) -> tuple:
    """``value`` repeated as the dimensions say. An array here has lower bounds of 1, so
    another lower bound is refused (0A000); an empty one (a dimension of 0, or none) is
    ``{}``, as in PostgreSQL."""
    value, dims = args[0][0], args[1][0]
    lower = args[2][0] if len(args) > 2 else None
    if dims is None or (len(args) > 2 and lower is None):
        raise EvalError(_NULL_ARRAY, sqlstate="22004")
    if len(dims) > 6:
        raise EvalError(
            f"number of array dimensions ({len(dims)}) exceeds the maximum allowed (6)",
            sqlstate="54000",
        )
    if lower is not None and len(dims) != len(lower):
        raise EvalError(_SUBSCRIPTS, sqlstate="2202E")
    if None in dims or (lower is not None and None in lower):
        raise EvalError(_NULL_VALUES, sqlstate="22004")
    if any(d < 0 for d in dims) or math.prod(dims) > 134217727:
        raise EvalError(_SIZE, sqlstate="54000")
    if not dims or math.prod(dims) == 0:  # no elements: no dimensions, no bounds
        return ()
    if lower is not None and any(b != 1 for b in lower):
        raise EvalError(_SHAPE, sqlstate="0A000")
    filled: Any = value
    for d in reversed(dims):
        filled = (filled,) * d
    return filled


def _same(a: Any, b: Any) -> bool:
    """Not distinct: NULLs are the same, as PostgreSQL's array searches compare."""
    return a is None if b is None else a is not None and a == b


def _replace(
    array: tuple[Any, SqlType], old: tuple[Any, SqlType], new: tuple[Any, SqlType]
) -> tuple | None:
    values = array[0]
    if values is None:
        return None
    kind = _compatible(array[1], old[1], new[1])
    widen = (
        (lambda v: v) if not kind.numeric else (lambda v: None if v is None else as_type(v, kind))
    )

    def replaced(values: tuple) -> tuple:
        if nested(values):
            return tuple(replaced(v) for v in values)
        return tuple(widen(new[0]) if _same(v, old[0]) else widen(v) for v in values)

    return replaced(values)


def _position(*args: tuple[Any, SqlType]) -> int | None:
    values, wanted = args[0][0], args[1][0]
    start = args[2][0] if len(args) > 2 else 1
    if values is None:
        return None
    _searchable(values)
    if len(args) > 2 and start is None:
        raise EvalError("initial position must not be null", sqlstate="22004")
    for i in range(max(start, 1) - 1, len(values)):
        if _same(values[i], wanted):
            return i + 1
    return None


def _positions(values: tuple[Any, SqlType], wanted: tuple[Any, SqlType]) -> tuple | None:
    if values[0] is None:
        return None
    _searchable(values[0])
    return tuple(i + 1 for i, v in enumerate(values[0]) if _same(v, wanted[0]))


def _searchable(values: tuple) -> None:
    if nested(values):
        raise EvalError(
            "searching for elements in multidimensional arrays is not supported", sqlstate="0A000"
        )


def _spark_ndims(cc: ExprCompiler, e: Func) -> Column:
    (a,) = _args(cc, e)
    return F.when(F.size(a) > 0, F.lit(1))


def _spark_dims(cc: ExprCompiler, e: Func) -> Column:
    (a,) = _args(cc, e)
    return F.when(F.size(a) > 0, F.concat(F.lit("[1:"), F.size(a).cast("string"), F.lit("]")))


def _spark_trim(cc: ExprCompiler, e: Func) -> Column:
    a, n = _args(cc, e)
    size = F.size(a)
    bad = fail("number of elements to trim must be between 0 and the array's length", "2202E")
    kept = F.slice(a, F.lit(1), size - n)
    return F.when((n < 0) | (n > size), bad).otherwise(F.when(size == n, _empty(e)).otherwise(kept))


def _empty(e: Func) -> Column:
    return F.array().cast(spark_type(e.type))


def _spark_fill(cc: ExprCompiler, e: Func) -> Column:
    """``_fill`` in Spark, error for error."""
    args = _args(cc, e)
    value, dims = args[0], args[1]
    given = len(args) > 2
    lower = args[2] if given else F.array(F.lit(1))
    product = F.aggregate(dims, F.lit(1.0), lambda acc, d: acc * d.cast("double"))
    zero = F.exists(dims, lambda d: d == 0)
    return (
        F.when(dims.isNull() | lower.isNull(), fail(_NULL_ARRAY, "22004"))
        .when(F.size(dims) > 6, fail("number of array dimensions exceeds the maximum", "54000"))
        .when(F.lit(given) & (F.size(dims) != F.size(lower)), fail(_SUBSCRIPTS, "2202E"))
        .when(F.exists(dims, lambda d: d.isNull()), fail(_NULL_VALUES, "22004"))
        .when(F.lit(given) & F.exists(lower, lambda d: d.isNull()), fail(_NULL_VALUES, "22004"))
        .when(F.exists(dims, lambda d: d < 0) | (product > 134217727), fail(_SIZE, "54000"))
        .when((F.size(dims) == 0) | zero, F.array().cast(spark_type(e.type)))
        .when((F.size(dims) > 1) | (F.get(lower, 0) != 1), fail(_SHAPE, "0A000"))
        .otherwise(F.array_repeat(value.cast(spark_type(e.type.element)), F.get(dims, 0)))
    )


def _spark_replace(cc: ExprCompiler, e: Func) -> Column:
    a, old, new = _args(cc, e)
    element = spark_type(e.type.element)
    return F.transform(
        a.cast(spark_type(e.type)),
        lambda x: F.when(x.eqNullSafe(old), new.cast(element)).otherwise(x),
    )


def _found(cc: ExprCompiler, e: Func) -> Column:
    """The 1-based positions of the array's elements not distinct from the value (NULL for a
    NULL array)."""
    a, wanted = _args(cc, e)[:2]
    marked = F.transform(a, lambda x, i: F.when(x.eqNullSafe(wanted), i + 1))
    return F.filter(marked, lambda p: p.isNotNull())


def _spark_position(cc: ExprCompiler, e: Func) -> Column:
    found = _found(cc, e)
    if len(e.args) < 3:
        return F.array_min(found)
    start = cc.compile(e.args[2])
    after = F.array_min(F.filter(found, lambda p: p >= start))
    a = cc.compile(e.args[0])
    return F.when(
        a.isNotNull() & start.isNull(), fail("initial position must not be null", "22004")
    ).otherwise(after)


FUNCTIONS = [
    Function("array_ndims", _shape_rule(INT4), _ndims, spark=_spark_ndims),
    Function("array_dims", _shape_rule(TEXT), dims_text, spark=_spark_dims),
    Function("trim_array", _trim_rule, _trim, spark=_spark_trim),
    Function("array_fill", _fill_rule, _fill, strict=False, spark=_spark_fill),
    Function("array_replace", _replace_rule, _replace, strict=False, spark=_spark_replace),
    Function(
        "array_assign",
        _assign_rule,
        _assign,
        strict=False,
        spark=in_process("array element assignment runs in the process"),
    ),
    Function("array_position", _position_rule, _position, strict=False, spark=_spark_position),
    Function("array_positions", _positions_rule, _positions, strict=False, spark=_found),
]
