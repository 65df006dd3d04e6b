"""``to_number``, ``div`` and ``mod`` in SQL (sqlglot reads them as its own nodes) and casts to
oid, mixed into :class:`~changeflow.adapter.sql.scalar.Scalars`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.functions.overloads import Overloads, same
from changeflow.compute.types import INT2, INT4, INT8, NULLTYPE, NUMERIC, TEXT
from changeflow.errors import PlanError

# PostgreSQL's mod() and %: of two integers of one type or two numerics (no double precision)
MOD = Overloads("mod", same(INT2, INT4, INT8, NUMERIC, arity=2))

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars


class NumberScalars:
    """The number functions sqlglot names its own way."""

    def _tonumber(self: Scalars, node: exp.ToNumber) -> X.Expr:
        return self.func("to_number", [node.this, node.args["format"]])

    def to_oid(self: Scalars, value: X.Expr) -> X.Expr:
        """``value::oid`` as PostgreSQL casts it (held as a bigint): a smallint's or an
        integer's bits (-1 is 4294967295), a bigint checked to be an oid (22003), text read
        as one; no other type casts (42846)."""
        if value.type in (INT2, INT4):
            wide = X.Cast(value, INT8)
            negative = X.Cmp("<", value, X.lit(0))
            return X.Case(((negative, X.Arith("+", wide, X.Lit(2**32, INT8))),), wide)
        if value.type in (INT8, TEXT):
            return Func("oid_of_bigint", (value if value.type == INT8 else X.Cast(value, INT8),))
        if value.type == NULLTYPE:
            return X.Cast(value, INT8)
        raise PlanError(f"cannot cast type {value.type} to oid", sqlstate="42846")

    def _intdiv(self: Scalars, node: exp.IntDiv) -> X.Expr:
        """PostgreSQL's ``div(a, b)`` (sqlglot reads it as a numeric cast of this node)."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        args = (
            coerce_text(str(a.this), NUMERIC) if is_string_literal(a) else self.expr(a)
            for a in (node.this, node.expression)
            if a is not None
        )
        return Func("div", tuple(args))

    def _mod(self: Scalars, node: exp.Mod) -> X.Expr:
        """``a % b`` or ``mod(a, b)``, refused where PostgreSQL has none (42883, a double
        precision) or cannot choose one (42725, two unknown-typed arguments)."""
        from changeflow.adapter.sql.scalar import bare, is_string_literal

        a, b = self.pair(node.this, node.expression)
        kinds = tuple(
            NULLTYPE if e.type == TEXT and is_string_literal(bare(n)) else e.type
            for n, e in ((node.this, a), (node.expression, b))
        )
        try:
            MOD.resolve(kinds)
        except PlanError as e:
            if node.meta.get("name") == "mod":
                shown = ", ".join(map(str, kinds))
                verdict = "is not unique" if e.sqlstate == "42725" else "does not exist"
                raise PlanError(f"function mod({shown}) {verdict}", sqlstate=e.sqlstate) from None
            verdict = "is not unique" if e.sqlstate == "42725" else "does not exist"
            raise PlanError(
                f"operator {verdict}: {kinds[0]} % {kinds[1]}", sqlstate=e.sqlstate
            ) from None
        return X.Arith("%", a, b)

    def _bitwiseand(self: Scalars, node: exp.Expression) -> X.Expr:
        return self.func("int_and", [node.this, node.expression])

    def _bitwiseor(self: Scalars, node: exp.Expression) -> X.Expr:
        return self.func("int_or", [node.this, node.expression])

    def _bitwisexor(self: Scalars, node: exp.Expression) -> X.Expr:
        return self.func("int_xor", [node.this, node.expression])

    def _bitwiseleftshift(self: Scalars, node: exp.Expression) -> X.Expr:
        return self.func("int_shl", [node.this, node.expression])

    def _bitwiserightshift(self: Scalars, node: exp.Expression) -> X.Expr:
        return self.func("int_shr", [node.this, node.expression])

    def _bitwisenot(self: Scalars, node: exp.Expression) -> X.Expr:
        return self.func("int_not", [node.this])
