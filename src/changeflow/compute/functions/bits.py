"""The bitwise operators of integers (``&``, ``|``, ``#``, ``~``, ``<<``, ``>>``) under the
planner's own names (PostgreSQL's ``int4and``… are one per type): of two integers of one type
(the narrower widened), giving that type; a shift's count is an integer taken modulo 32 (64
for a bigint) and its result wraps to its type, as PostgreSQL's C shifts (and Java's, so
Spark's) do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from changeflow.compute.functions.base import Function, _args, spark_type
from changeflow.compute.functions.overloads import Overloads, same
from changeflow.compute.types import INT2, INT4, INT8, NULLTYPE, SqlType
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


_BITS = {INT2: 16, INT4: 32, INT8: 64}


def _wrap(value: int, bits: int) -> int:
    """``value`` as a ``bits``-wide two's complement integer holds it."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _shift_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 2 or not all(a.integer or a is NULLTYPE for a in args):
        raise PlanError("no match", sqlstate="42883")
    return INT4 if args[0] is NULLTYPE else args[0]


def _shift(left: bool) -> Any:
    def shift(a: tuple[Any, SqlType], n: tuple[Any, SqlType]) -> int | None:
        if a[0] is None or n[0] is None:
            return None
        kind = INT4 if a[1] is NULLTYPE else a[1]
        count = n[0] % (64 if kind == INT8 else 32)
        return _wrap(a[0] << count if left else a[0] >> count, _BITS[kind])

    return shift


def _spark_shift(name: str) -> Any:
    def build(cc: ExprCompiler, e: Func) -> Column:
        from pyspark.sql import functions as F

        a, n = _args(cc, e)
        wide = a.cast("bigint" if e.type == INT8 else "int")
        shifted = F.call_function(name, wide, n.cast("int"))
        if e.type == INT2:  # wrapped to 16 bits (a cast would fail past its range)
            shifted = F.pmod(shifted + 32768, F.lit(65536)) - 32768
        return shifted.cast(spark_type(e.type))

    return build


def _spark_binary(op: str) -> Any:
    def build(cc: ExprCompiler, e: Func) -> Column:
        a, b = (c.cast(spark_type(e.type)) for c in _args(cc, e))
        return getattr(a, op)(b)

    return build


def _spark_not(cc: ExprCompiler, e: Func) -> Column:
    from pyspark.sql import functions as F

    return F.bitwise_not(cc.compile(e.args[0]).cast(spark_type(e.type)))


_SAME2 = Overloads("int_and", same(INT2, INT4, INT8, arity=2))
FUNCTIONS = [
    Function("int_and", _SAME2, lambda a, b: a & b, spark=_spark_binary("bitwiseAND")),
    Function("int_or", _SAME2, lambda a, b: a | b, spark=_spark_binary("bitwiseOR")),
    Function("int_xor", _SAME2, lambda a, b: a ^ b, spark=_spark_binary("bitwiseXOR")),
    Function(
        "int_not", Overloads("int_not", same(INT2, INT4, INT8)), lambda a: ~a, spark=_spark_not
    ),  # fmt: skip
    Function("int_shl", _shift_rule, _shift(True), strict=False, spark=_spark_shift("shiftleft")),
    Function("int_shr", _shift_rule, _shift(False), strict=False, spark=_spark_shift("shiftright")),
]
