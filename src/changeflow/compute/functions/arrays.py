"""Functions of arrays (PostgreSQL's): each defined once, on Python values and on Spark."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from changeflow.compute.array_shape import flat, length, lower, nested, shape
from changeflow.compute.functions.base import (
    F,
    Function,
    Rule,
    _args,
    determined,
    spark_type,
    unsupported,
)
from changeflow.compute.scalars import to_text
from changeflow.compute.types import (
    ARRAYS,
    INT4,
    NULLTYPE,
    NUMERIC,
    TEXT,
    SqlType,
    array_of,
)
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


def _array_rule(*rest: str) -> Rule:
    """A rule: an array, then ``rest`` integers; the result is an integer."""

    def rule(args: tuple[SqlType, ...]) -> SqlType:
        if len(args) != 1 + len(rest) or determined(args[0]).element is None:
            raise PlanError("no match", sqlstate="42883")
        if any(not (a.integer or a is NULLTYPE) for a in args[1:]):
            raise PlanError("no match", sqlstate="42883")
        return INT4

    return rule


def _cardinality(values: tuple) -> int:
    return len(flat(values))


def _spark_size(cc: ExprCompiler, e: Func) -> Column:
    (a,) = _args(cc, e)
    return F.size(a)


def _spark_length(cc: ExprCompiler, e: Func) -> Column:
    a, dimension = _args(cc, e)
    return F.when((dimension == 1) & (F.size(a) > 0), F.size(a))


def _spark_lower(cc: ExprCompiler, e: Func) -> Column:
    a, dimension = _args(cc, e)
    return F.when((dimension == 1) & (F.size(a) > 0), F.lit(1))


def _joined_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) not in (2, 3) or determined(args[0]).element is None:
        raise PlanError("no match", sqlstate="42883")
    if any(a not in (TEXT, NULLTYPE) for a in args[1:]):
        raise PlanError("no match", sqlstate="42883")
    return TEXT


def _split_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) not in (2, 3) or any(a not in (TEXT, NULLTYPE) for a in args):
        raise PlanError("no match", sqlstate="42883")
    return ARRAYS[TEXT]


def _array_to_string(*args: tuple[Any, SqlType]) -> str | None:
    """The elements as text between ``sep``; NULLs left out, or shown as the third
    argument. Given the types (not strict): NULL for a NULL array or separator."""
    (values, kind), (sep, _) = args[0], args[1]
    null = args[2][0] if len(args) > 2 else None
    if values is None or sep is None:
        return None
    element = kind.element or TEXT
    shown = [null if v is None else to_text(v, element) for v in flat(values)]
    return sep.join(v for v in shown if v is not None)


def _string_to_array(*args: tuple[Any, SqlType]) -> tuple[str | None, ...] | None:
    """``s`` cut at each ``sep`` (each character for a NULL one, all of it for ''), the
    pieces equal to the third argument as NULL; '' gives no elements."""
    s, sep = args[0][0], args[1][0]
    null = args[2][0] if len(args) > 2 else None
    if s is None:
        return None
    if s == "":
        return ()
    parts = list(s) if sep is None else [s] if sep == "" else s.split(sep)
    return tuple(None if null is not None and p == null else p for p in parts)


def _spark_array_to_string(cc: ExprCompiler, e: Func) -> Column:
    args = _args(cc, e)
    element = e.args[0].type.element
    if element == NUMERIC or (element is not None and element.floating):
        raise unsupported(e, "array_to_string of numeric or double arrays on the cluster tier")
    texts = F.transform(args[0], lambda x: cc.cast(x, element, TEXT, e)) if element else args[0]
    if len(args) > 2:
        return F.when(args[2].isNull(), F.array_join(texts, args[1])).otherwise(
            F.array_join(texts, args[1], args[2])
        )
    return F.array_join(texts, args[1])


def _spark_string_to_array(cc: ExprCompiler, e: Func) -> Column:
    args = _args(cc, e)
    s, sep = args[0], args[1]
    quoted = F.regexp_replace(sep, r"([\\\[\]{}()*+?.^$|])", r"\\$1")
    parts = (
        F.when(sep.isNull(), F.split(s, "(?!^)(?!$)"))
        .when(sep == "", F.array(s))
        .otherwise(F.split(s, quoted, -1))
    )
    parts = F.when(s == "", F.array().cast("array<string>")).otherwise(parts)
    if len(args) > 2:
        null = args[2]
        parts = F.transform(
            parts, lambda p: F.when(null.isNotNull() & (p == null), None).otherwise(p)
        )
    return parts


def _with_element(array: SqlType, element: SqlType) -> SqlType:
    """The type of an array of type ``array`` with an element of type ``element`` added (a
    NULL array takes the element's array type, text[] if that is a NULL too, as PostgreSQL's
    anycompatible; integers widen into a wider array)."""
    if array is NULLTYPE:
        return array_of(TEXT if element is NULLTYPE else element)
    fits = element in (NULLTYPE, array.element) or (
        element.integer and array.element is not None and array.element.integer
        and element.rank <= array.element.rank
    )  # fmt: skip
    if array.element is None or not fits:
        raise PlanError("no match", sqlstate="42883")
    return array


def _append_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2:
        raise PlanError("no match", sqlstate="42883")
    return _with_element(args[0], args[1])


def _prepend_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2:
        raise PlanError("no match", sqlstate="42883")
    return _with_element(args[1], args[0])


def _cat_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2 or any(a is not NULLTYPE and a.element is None for a in args):
        raise PlanError("no match", sqlstate="42883")
    a, b = args
    if a is NULLTYPE and b is NULLTYPE:
        return ARRAYS[TEXT]  # PostgreSQL's anycompatible of unknowns: text
    if a is NULLTYPE or b is NULLTYPE or a == b:
        return b if a is NULLTYPE else a
    raise PlanError("no match", sqlstate="42883")


def _one_dimension(values: Any) -> tuple:
    if nested(values):
        raise EvalError("argument must be empty or one-dimensional array", sqlstate="22000")
    return values or ()


def _append(array: tuple[Any, SqlType], element: tuple[Any, SqlType]) -> tuple:
    """``array`` with ``element`` after its elements (a NULL array as an empty one)."""
    return (*_one_dimension(array[0]), element[0])


def _prepend(element: tuple[Any, SqlType], array: tuple[Any, SqlType]) -> tuple:
    return (element[0], *_one_dimension(array[0]))


def _cat(a: tuple[Any, SqlType], b: tuple[Any, SqlType]) -> tuple | None:
    """Both arrays' elements in turn (NULL only if both are); of several dimensions, along
    the first: ``{{1,2}} || {{3,4}}`` and ``{{1,2}} || {3,4}`` are ``{{1,2},{3,4}}``."""
    x, y = a[0], b[0]
    if x is None and y is None:
        return None
    if not x or not y:
        return x or y or ()
    sx, sy = shape(x), shape(y)
    if sx[1:] == sy[1:]:
        return (*x, *y)
    if sx[1:] == sy:
        return (*x, y)
    if sx == sy[1:]:
        return (x, *y)
    raise EvalError("cannot concatenate incompatible arrays", sqlstate="2202E")


def _remove(array: tuple[Any, SqlType], element: tuple[Any, SqlType]) -> tuple | None:
    """``array`` without the elements not distinct from ``element`` (NULL removes NULLs)."""
    values, gone = array[0], element[0]
    if values is None:
        return None
    if nested(values):
        raise EvalError(
            "removing elements from multidimensional arrays is not supported", sqlstate="0A000"
        )
    return tuple(v for v in values if not (v is None if gone is None else v == gone))


def _spark_empty(e: Func) -> Column:
    return F.array().cast(spark_type(e.type))


def _spark_append(cc: ExprCompiler, e: Func) -> Column:
    a, v = _args(cc, e)
    one = F.array(v.cast(spark_type(e.type.element)))
    return F.concat(F.coalesce(a, _spark_empty(e)), one)


def _spark_prepend(cc: ExprCompiler, e: Func) -> Column:
    v, a = _args(cc, e)
    one = F.array(v.cast(spark_type(e.type.element)))
    return F.concat(one, F.coalesce(a, _spark_empty(e)))


def _spark_cat(cc: ExprCompiler, e: Func) -> Column:
    a, b = _args(cc, e)
    both = F.concat(F.coalesce(a, _spark_empty(e)), F.coalesce(b, _spark_empty(e)))
    return F.when(a.isNull() & b.isNull(), F.lit(None).cast(spark_type(e.type))).otherwise(both)


def _spark_remove(cc: ExprCompiler, e: Func) -> Column:
    a, v = _args(cc, e)
    return F.filter(a, lambda x: ~x.eqNullSafe(v))


FUNCTIONS = [
    Function("cardinality", _array_rule(), _cardinality, spark=_spark_size),
    Function("array_length", _array_rule("int"), length, spark=_spark_length),
    Function("array_upper", _array_rule("int"), length, spark=_spark_length),
    Function("array_lower", _array_rule("int"), lower, spark=_spark_lower),
    Function(
        "array_to_string",
        _joined_rule,
        _array_to_string,
        strict=False,
        spark=_spark_array_to_string,
    ),
    Function(
        "string_to_array",
        _split_rule,
        _string_to_array,
        strict=False,
        spark=_spark_string_to_array,
    ),
    Function("array_append", _append_rule, _append, strict=False, spark=_spark_append),
    Function("array_prepend", _prepend_rule, _prepend, strict=False, spark=_spark_prepend),
    Function("array_cat", _cat_rule, _cat, strict=False, spark=_spark_cat),
    Function("array_remove", _append_rule, _remove, strict=False, spark=_spark_remove),
]
