"""What every function family shares: a :class:`Function` (its type rule, its meaning on
Python values, and its Spark and Arrow forms), the type rules, and what the Spark forms use.

The Spark forms build Columns when the Spark compiler calls them; pyspark is imported then, not
when a plan is built.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from changeflow.compute.types import BYTEA, DATE, NULLTYPE, TIMESTAMP, TIMESTAMPTZ, SqlType
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler

Rule = Callable[[tuple[SqlType, ...]], SqlType]
Builder = Callable[["ExprCompiler", "Func"], "Column"]
Kernel = Callable[..., Any]


@dataclass(frozen=True)
class Function:
    """A function, defined once: its type rule, its meaning on Python values (``impl``, the
    reference), its Spark form (``spark``: a Column from the compiler and the call) and, where
    Arrow has a kernel that means the same, its Arrow form (``arrow``: arrays or scalars of the
    arguments to the result's array); ``nulls`` if a strict function may still be NULL (so
    its column is nullable, in a view too)."""

    name: str
    rule: Rule
    impl: Callable[..., Any]
    strict: bool = True
    spark: Builder | None = None
    arrow: Kernel | None = None
    nulls: bool = False  # may be NULL of arguments that are not (regexp_match of no match)

    def __reduce__(self) -> tuple[Callable[[str], Function], tuple[str]]:
        """A stored plan names its functions: rules and implementations may be closures or
        lambdas, which do not pickle, and a plan read back uses today's definition."""
        return (function_named, (self.name,))


def function_named(name: str) -> Function:
    """The function of ``FUNCTIONS`` called ``name`` (how a pickled plan finds it)."""
    from changeflow.compute.functions import FUNCTIONS

    return FUNCTIONS[name]


def _sig(*shapes: tuple[SqlType | str, ...], result: SqlType | str) -> Rule:
    """A rule from argument shapes; ``"num"`` is any numeric type, ``"same"`` the result is the
    first argument's type."""

    def rule(args: tuple[SqlType, ...]) -> SqlType:
        for shape in shapes:
            if len(shape) == len(args) and all(
                _fits(a, s) for a, s in zip(args, shape, strict=True)
            ):
                return args[0] if result == "same" else result  # type: ignore[return-value]
        raise PlanError("no match", sqlstate="42883")

    return rule


UNDETERMINED = "42804"  # a rule's error that is the caller's, not "no such function"


def determined(kind: SqlType) -> SqlType:
    """``kind`` of an argument a polymorphic parameter (anyarray, anyelement) takes: 42804
    for a bare NULL's unknown type, as PostgreSQL cannot infer the function's types then."""
    if kind is NULLTYPE:
        raise PlanError(
            "could not determine polymorphic type because input has type unknown",
            sqlstate=UNDETERMINED,
        )
    return kind


def _fits(actual: SqlType, shape: SqlType | str) -> bool:
    if actual == NULLTYPE:
        return True
    if shape == "num":
        return actual.numeric
    if shape == "int":
        return actual.integer
    if shape == "any":
        return True
    if shape == "stamp":
        return actual in (TIMESTAMP, TIMESTAMPTZ, DATE)
    return actual == shape


class _Lazy:
    """A module imported when first used (pyspark, for the Spark forms)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


F: Any = _Lazy("pyspark.sql.functions")


def fail(message: str, sqlstate: str) -> Column:
    from changeflow.compute.spark_expr import fail

    return fail(message, sqlstate)


def finite(c: Column) -> Column:
    from changeflow.compute.spark_expr import finite

    return finite(c)


def unsupported(e: Any, why: str) -> PlanError:
    from changeflow.compute.spark_expr import unsupported

    return unsupported(e, why)


def spark_type(kind: SqlType) -> str:
    from changeflow.compute.spark_expr import spark_type

    return spark_type(kind)


def in_process(why: str) -> Builder:
    """The Spark form of a function that runs on rows only (``dataflow.process_only`` keeps its
    plans off Spark): reaching Spark is a planning error, 0A000, saying ``why``."""

    def refuse(cc: ExprCompiler, e: Func) -> Column:
        raise unsupported(e, why)

    refuse.why = why  # type: ignore[attr-defined]
    return refuse


def bytea_too(rule: Rule) -> Rule:
    """``rule`` of a text function that takes bytea too: its text result is bytea of a bytea
    first argument (``substr('\\x0102'::bytea, 2)``)."""

    def typed(args: tuple[SqlType, ...]) -> SqlType:
        kind = rule(args)
        return BYTEA if args and args[0] == BYTEA and kind.name == "text" else kind

    return typed


def bytes_in_process(builder: Builder) -> Builder:
    """The Spark form ``builder`` of a text function that takes bytea too (md5, substr,
    strpos, btrim…): a call of bytea stays in the process."""
    why = "functions of bytea are computed in the process"

    def build(cc: ExprCompiler, e: Func) -> Column:
        if any(a.type == BYTEA for a in e.args):
            raise unsupported(e, why)
        return builder(cc, e)

    build.why = lambda e: why if any(a.type == BYTEA for a in e.args) else None  # type: ignore[attr-defined]
    return build


def process_call(e: Any) -> str | None:
    """Why the call ``e`` runs in the process only, or None: its Spark form's ``why``, a text
    (:func:`in_process`'s) or a function of the call (a form refusing some calls)."""
    function = getattr(e, "function", None)
    why = getattr(getattr(function, "spark", None), "why", None)
    if callable(why):
        why = why(e)
    return None if why is None else f"{function.name}(): {why}"


def _args(cc: ExprCompiler, e: Func) -> list[Column]:
    return [cc.compile(a) for a in e.args]


def _simple(fn: str | Callable[..., Column]) -> Builder:
    """A Spark form applying pyspark's function ``fn`` (a name, or a function of Columns) to
    the compiled arguments."""
    return lambda cc, e: (getattr(F, fn) if isinstance(fn, str) else fn)(*_args(cc, e))


def _double(cc: ExprCompiler, e: Func, i: int = 0) -> Column:
    return cc.compile(e.args[i]).cast("double")
