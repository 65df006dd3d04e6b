"""Array expressions in SQL (``ARRAY[…]``, ``a[i]``, ``x op ANY/ALL (array)``) and the random
values ``gen_random_uuid()`` and ``random()``, mixed into
:class:`~changeflow.adapter.sql.scalar.Scalars`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.adapter.sql.scope import unsupported
from changeflow.compute import expr as X
from changeflow.compute.arrays import AnyOf, ArrayOf, Subscript
from changeflow.compute.functions import Func
from changeflow.compute.functions.array_sets import HIGHEST, LOWEST
from changeflow.compute.functions.base import determined
from changeflow.compute.types import FLOAT8, INT4, JSON, JSONB, NULLTYPE, TEXT, array_of
from changeflow.compute.volatile import RandomDouble, RandomUuid, Sleep
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars


def is_any_all(node: exp.Expression) -> bool:
    """Is ``node`` the right side of ``x op ANY (…)`` or ``x op ALL (…)``?"""
    if isinstance(node, exp.Any):
        return True
    return isinstance(node, exp.Anonymous) and str(node.this).upper() == "ALL"


class ArrayScalars:
    """The array forms of :class:`Scalars`."""

    def _array(self: Scalars, node: exp.Array) -> X.Expr:
        return ArrayOf(tuple(self.unify(list(node.expressions))))

    def _bracket(self: Scalars, node: exp.Bracket) -> X.Expr:
        """``a[i]``, or ``a[i][j]…`` as one subscript of several indexes (one a dimension);
        ``j['k'][0]…`` of a jsonb value."""
        chain: list[list[exp.Expression]] = []
        base: exp.Expression = node
        while isinstance(base, exp.Bracket):
            chain.insert(0, list(base.expressions))
            base = base.this
        target = self.expr(base)
        if target.type in (JSON, JSONB):
            return self.jsonb_subscript(target, chain)
        if len(chain) == 1 and isinstance(chain[0][0], exp.Slice):
            return self._slice(chain[0][0], target)
        if any(len(part) != 1 or isinstance(part[0], exp.Slice) for part in chain):
            raise unsupported("array slices", node)
        indexes = [self._array_index(part[0]) for part in chain]
        return Subscript(target, indexes[0], tuple(indexes[1:]))

    def _array_index(self: Scalars, node: exp.Expression) -> X.Expr:
        """An array subscript, made an integer as PostgreSQL's assignment cast does (``a[1.5]``
        is ``a[2]``)."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        if is_string_literal(node):
            return coerce_text(str(node.this), INT4)
        index = self.expr(node)
        return X.Cast(index, INT4) if index.type.numeric and not index.type.integer else index

    def _slice(self: Scalars, part: exp.Slice, array: X.Expr) -> X.Expr:
        """``a[lo:hi]``, ``a[:hi]``, ``a[lo:]`` of a one-dimensional array's first dimension."""
        bounds = [
            X.lit(omitted) if bound is None else self._array_index(bound)
            for bound, omitted in ((part.this, LOWEST), (part.expression, HIGHEST))
        ]
        if array.type.element is None and array.type is not NULLTYPE:
            raise PlanError(
                f"cannot subscript type {array.type} because it does not support subscripting",
                sqlstate="42804",
            )
        return Func("array_slice_of", (array, *bounds))

    def array_containment(self: Scalars, node: exp.Expression, name: str) -> X.Expr | None:
        """``a @> b`` (arraycontains), ``a <@ b`` (arraycontained), ``a && b``
        (arrayoverlap) where a side is an array (a quoted literal beside one is of its
        type); None where neither is."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        a, b = self.expr(node.this), self.expr(node.expression)
        if a.type.element is None and b.type.element is None:
            return None
        if is_string_literal(node.this) and b.type.element is not None:
            a = coerce_text(str(node.this.this), b.type)
        if is_string_literal(node.expression) and a.type.element is not None:
            b = coerce_text(str(node.expression.this), a.type)
        if a.type != b.type and NULLTYPE not in (a.type, b.type):
            op = {"arraycontains": "@>", "arraycontained": "<@"}.get(name, "&&")
            raise PlanError(f"operator does not exist: {a.type} {op} {b.type}", sqlstate="42883")
        return Func(name, (a, b))

    def _arrayoverlaps(self: Scalars, node: exp.ArrayOverlaps) -> X.Expr:
        found = self.array_containment(node, "arrayoverlap")
        if found is None:
            a, b = self.expr(node.this), self.expr(node.expression)
            raise PlanError(f"operator does not exist: {a.type} && {b.type}", sqlstate="42883")
        return found

    def _arraysize(self: Scalars, node: exp.ArraySize) -> X.Expr:
        args = [node.this] + ([node.expression] if node.expression is not None else [])
        return self.func("array_length", args)

    def _arrayposition(self: Scalars, node: exp.ArrayPosition) -> X.Expr:
        start = node.args.get("zero_based")  # sqlglot's name for PostgreSQL's start position
        args = [node.this, node.expression] + ([start] if isinstance(start, exp.Expression) else [])
        return self.func("array_position", args)

    def _uuid(self: Scalars, node: exp.Uuid) -> X.Expr:
        if node.args.get("this") is not None or node.expressions:
            raise PlanError("function gen_random_uuid() takes no arguments", sqlstate="42883")
        return RandomUuid()

    def sleep(self: Scalars, args: list[exp.Expression]) -> X.Expr:
        """``pg_sleep(seconds)`` (any number, or a quoted one)."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        if len(args) != 1:
            raise PlanError("function pg_sleep() does not exist", sqlstate="42883")
        seconds = coerce_text(str(args[0].this), FLOAT8) if is_string_literal(args[0]) else None
        seconds = seconds or self.expr(args[0])
        if not (seconds.type.numeric or seconds.type is NULLTYPE):
            raise PlanError(f"function pg_sleep({seconds.type}) does not exist", sqlstate="42883")
        return Sleep(seconds)

    def _rand(self: Scalars, node: exp.Rand) -> X.Expr:
        if node.this is not None:
            raise PlanError("function random(integer) does not exist", sqlstate="42883")
        return RandomDouble()

    def any_all(self: Scalars, op: str, a: exp.Expression, b: exp.Expression) -> X.Expr:
        """``a op ANY (array)`` or ``a op ALL (array)``."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        inner = b.this if isinstance(b, exp.Any) or not b.expressions else b.expressions[0]
        inner = inner.this if isinstance(inner, exp.Paren) else inner
        if isinstance(inner, exp.Query | exp.Subquery):
            raise unsupported("ANY or ALL of a subquery", b)
        left = self.expr(a)
        if is_string_literal(inner):
            element = TEXT if left.type is NULLTYPE else left.type
            array = coerce_text(str(inner.this), array_of(element))
        else:
            array = self.expr(inner)
        if is_string_literal(a) and array.type.element not in (None, TEXT):
            left = coerce_text(str(a.this), array.type.element)
        return AnyOf(op, left, array, every=not isinstance(b, exp.Any))

    def array_operator(self: Scalars, node: exp.DPipe) -> X.Expr | None:
        """``a || b`` where either side is an array: both arrays' elements (a quoted literal
        or NULL beside an array is an array of its type), else the element appended to or
        prepended before the array; None where neither side is an array."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        a, b = self.expr(node.this), self.expr(node.expression)
        if a.type.element is None and b.type.element is None:
            return None
        if b.type.element is not None and (is_string_literal(node.this) or a.type is NULLTYPE):
            a = coerce_text(str(node.this.this), b.type) if a.type is not NULLTYPE else a
            return Func("array_cat", (a, b))
        if a.type.element is not None and (
            is_string_literal(node.expression) or b.type is NULLTYPE
        ):
            b = coerce_text(str(node.expression.this), a.type) if b.type is not NULLTYPE else b
            return Func("array_cat", (a, b))
        if a.type.element is not None and b.type.element is not None:
            return Func("array_cat", (a, b))
        if a.type.element is not None:
            return Func("array_append", (a, b))
        return Func("array_prepend", (a, b))

    def array_call(self: Scalars, name: str, args: list[exp.Expression]) -> X.Expr | None:
        """A call of an anycompatiblearray function (``array_cat``, ``array_position``…) with
        a quoted literal for its array beside a typed argument: the literal is an array of that
        type, as PostgreSQL reads it; None for any other call."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        name = name.lower()
        if name in UNKNOWN_REFUSED and args and is_string_literal(args[0]):
            determined(NULLTYPE)  # 42804, as PostgreSQL cannot infer the argument's type
        if name in _SEARCHES and len(args) > 1:
            return self._search(name, args)
        if name != "array_cat" or len(args) != 2:
            return None
        literal = [is_string_literal(a) for a in args]
        if literal.count(True) != 1:
            return None
        typed = self.expr(args[literal.index(False)])
        if typed.type.element is None:
            return None
        parsed = coerce_text(str(args[literal.index(True)].this), typed.type)
        return Func("array_cat", (parsed, typed) if literal[0] else (typed, parsed))

    def _search(self: Scalars, name: str, args: list[exp.Expression]) -> X.Expr:
        """An anycompatiblearray function's call with its quoted literals read as the type of
        its typed array or elements (text if all are quoted)."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        values = [self.expr(a) for a in args]
        quoted = [is_string_literal(a) for a in args]
        elements = range(1, 1 + _SEARCHES[name])
        if not quoted[0] and values[0].type.element is not None:
            element = values[0].type.element
        else:
            typed = [values[i].type for i in elements if i < len(args) and not quoted[i]]
            typed = [t for t in typed if t is not NULLTYPE]
            element = typed[0] if typed else TEXT
        for i in [0, *elements]:
            if i < len(args) and quoted[i]:
                kind = array_of(element) if i == 0 else element
                values[i] = coerce_text(str(args[i].this), kind)
        return Func(name, tuple(values))


# functions whose only polymorphic argument (anyarray, anyelement) is the first: a quoted
# literal there has no type to take (42804)
UNKNOWN_REFUSED = frozenset(
    {"cardinality", "array_length", "array_upper", "array_lower", "array_ndims", "array_dims"}
    | {"trim_array", "array_to_string", "array_fill", "to_jsonb", "to_json"}
)
# anycompatiblearray functions taking their array first: how many arguments after it are
# anycompatible elements (a quoted array beside them is read as an array of their type)
_SEARCHES = {"array_position": 1, "array_positions": 1, "array_replace": 2, "array_remove": 1}
