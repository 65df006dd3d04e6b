"""char(n) in expressions, and ``||`` of bytea, mixed into
:class:`~changeflow.adapter.sql.scalar.Scalars`.

A char(n) value is held without its trailing blanks (:mod:`changeflow.compute.pads`), which
is how PostgreSQL's comparisons, ``||``, ``length()``, ``::text`` and the text functions see
it. What PostgreSQL reads blank-padded (LIKE, ILIKE and SIMILAR TO, ``octet_length``, and the
functions that print their arguments: ``concat``, ``concat_ws``, ``format``) is given the value
padded to n; a quoted literal compared with char(n) is char(n), so its trailing blanks drop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.types import BYTEA, NULLTYPE, TEXT
from changeflow.compute.typmods import NONE, Mod, mod_of, unsized_bpchar

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars

TYPE_NAMES = {"bpchar": "character", "varchar": "character varying", "name": "name"}
PADDED_ARGS = frozenset({"octet_length", "concat", "concat_ws", "format"})


class CharScalars:
    """The char(n) forms of :class:`Scalars`."""

    def mod(self: Scalars, e: X.Expr) -> Mod:
        """``e``'s type modifier over this clause's columns."""
        try:
            return mod_of(e, self.schema)
        except IndexError:  # a column of another clause's schema (an aggregate's output)
            return NONE

    def bytea_cat(self: Scalars, node: exp.DPipe) -> X.Expr | None:
        """``a || b`` of two bytea values (a quoted literal or NULL beside one is bytea, as
        PostgreSQL resolves the operator); None otherwise."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        sides = (node.this, node.expression)
        exprs = [self.expr(n) for n in sides]
        if BYTEA not in (e.type for e in exprs):
            return None
        for i, (n, e) in enumerate(zip(sides, exprs, strict=True)):
            if e.type is not BYTEA and not (is_string_literal(n) or e.type is NULLTYPE):
                return None
            if is_string_literal(n):
                exprs[i] = coerce_text(str(n.this), BYTEA)
        return Func("byteacat", tuple(exprs))

    def pad(self: Scalars, e: X.Expr) -> int | None:
        """n if ``e`` is char(n) over this clause's columns, else None."""
        return self.mod(e).pad

    def text_typeof(
        self: Scalars, name: str, values: list[X.Expr], args: list[exp.Expression]
    ) -> X.Expr | None:
        """``pg_typeof`` of a char(n) or varchar value: its type's name (held as text); of a
        quoted literal, ``unknown``."""
        if name.lower() != "pg_typeof" or len(values) != 1:
            return None
        if isinstance(args[0], exp.Literal) and args[0].is_string:
            return X.lit("unknown")
        found = TYPE_NAMES.get(self.mod(values[0]).text_type)
        return None if found is None else X.lit(found)

    def blank_padded(self: Scalars, e: X.Expr) -> X.Expr:
        """``e`` as PostgreSQL shows it: a char(n) value padded with blanks to n."""
        n = self.pad(e)
        return e if n is None else Func("rpad", (e, X.lit(n)))

    def as_text(self: Scalars, e: X.Expr) -> X.Expr:
        """``e`` as text: a bpchar without a length (held with its blanks) without its
        trailing blanks, as PostgreSQL's bpchar comparisons and its cast to text see it."""
        return Func("rtrim", (e, X.lit(" "))) if self.mod(e) == (-1, "bpchar") else e

    def shown_args(self: Scalars, name: str, values: list[X.Expr]) -> list[X.Expr]:
        """A call's arguments: char(n) ones padded for the functions that read them so, a
        bpchar without a length trimmed for the others (they take it as text)."""
        if name.lower() == "pg_typeof":
            return values
        if name.lower() not in PADDED_ARGS:
            return [self.as_text(v) for v in values]
        return [self.blank_padded(v) for v in values]

    def blank_literals(
        self: Scalars, a: exp.Expression, b: exp.Expression, ea: X.Expr, eb: X.Expr
    ) -> tuple[X.Expr, X.Expr]:
        """Two operands, a quoted literal beside a bpchar without its trailing blanks."""
        return _unpadded(self, a, ea, eb), _unpadded(self, b, eb, ea)

    def cast_text(self: Scalars, value: X.Expr, to: exp.Expression) -> X.Expr:
        """A cast's value: char(n) cast to text or varchar is text (shown unpadded); cast to
        bpchar without a length it keeps its blanks."""
        if not isinstance(to, exp.DataType):
            return value
        mod = self.mod(value)
        if to.this == exp.DataType.Type.BPCHAR and not to.expressions:
            return unsized_bpchar(value, mod)
        texts = (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR)
        if to.this in texts and mod.text_type == "bpchar":
            return Func("rtrim", (value, X.lit(" ")))
        return value

    def char_branches(self: Scalars, nodes: list[exp.Expression], exprs: list[X.Expr]) -> list:
        """CASE's or COALESCE's branches: of char(n) beside quoted literals or another width,
        bpchar without a length, each value with its own blanks (PostgreSQL's result)."""
        from changeflow.adapter.sql.scalar import bare, is_string_literal

        null = [isinstance(e, X.Lit) and e.value is None for e in exprs]
        literal = [is_string_literal(bare(n)) for n in nodes]
        mods = {self.mod(e) for e, n, q in zip(exprs, null, literal, strict=True) if not n | q}
        if not mods or any(m.text_type != "bpchar" for m in mods):
            return exprs
        if len(mods) == 1 and not any(literal):
            return exprs
        return [
            e if n else unsized_bpchar(e, self.mod(e) if not q else NONE)
            for e, n, q in zip(exprs, null, literal, strict=True)
        ]

    def compared_literal(self: Scalars, a: X.Expr, item: exp.Expression) -> X.Expr:
        """An item of ``a IN (…)``: a quoted literal takes ``a``'s type (char(n)'s too)."""
        from changeflow.adapter.sql.scalar import is_string_literal

        e = self.expr(item)
        if is_string_literal(item) and a.type not in (TEXT, NULLTYPE):
            return self.retype(str(item.this), a)
        return _unpadded(self, item, e, a)

    def boolean_operand(self: Scalars, node: exp.Expression) -> X.Expr:
        """An operand of AND, OR or NOT: a quoted literal (``'t'``, ``'yes'``) read as a
        boolean, as PostgreSQL reads an unknown-typed constant there."""
        from changeflow.adapter.sql.scalar import bare, is_string_literal

        if is_string_literal(bare(node)):
            return self.expr(exp.cast(bare(node).copy(), exp.DataType.build("boolean")))
        return self.expr(node)


def _unpadded(scalars: Scalars, node: exp.Expression, e: X.Expr, other: X.Expr) -> X.Expr:
    from changeflow.adapter.sql.scalar import bare, is_string_literal

    literal = is_string_literal(bare(node)) and isinstance(e, X.Lit) and isinstance(e.value, str)
    if literal and scalars.mod(other).text_type == "bpchar":
        return X.Lit(e.value.rstrip(" "), TEXT)  # type: ignore[attr-defined]
    return scalars.as_text(e)
