"""Pattern matching in SQL (``LIKE``/``ILIKE``, ``SIMILAR TO``, the regular-expression
operators and functions), mixed into :class:`~changeflow.adapter.sql.scalar.Scalars`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.adapter.sql.scope import unsupported
from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.functions.patterns import like_escape, similar_to_escape
from changeflow.compute.types import BYTEA, TEXT

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars


class PatternScalars:
    """The pattern forms of :class:`Scalars`."""

    def _like(
        self: Scalars,
        node: exp.Expression,
        case_insensitive: bool = False,
        escape: exp.Expression | None = None,
    ) -> X.Expr:
        """``a [NOT] [I]LIKE p [ESCAPE e]``: with ESCAPE, the pattern ``like_escape(p, e)``
        (backslash escapes, LIKE's default), computed now where both are known; of a bytea,
        PostgreSQL's ``bytealike``."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        if node.args.get("escape") is not None:
            raise unsupported("LIKE ... ESCAPE", node)
        negated = bool(node.args.get("negate"))
        if isinstance(node.expression, exp.Any | exp.All) and escape is None:  # [NOT] LIKE ANY
            op = ("!" if negated else "") + ("~~*" if case_insensitive else "~~")
            return self.any_all(op, node.this, node.expression)
        a, p = self.blank_padded(self.expr(node.this)), self.expr(node.expression)
        if a.type == BYTEA and not case_insensitive and escape is None:  # bytealike
            if is_string_literal(node.expression):
                p = coerce_text(str(node.expression.this), BYTEA)
            found = Func("bytealike", (a, p))
            return X.Not(found) if negated else found
        if escape is not None:
            args = [node.expression, escape]
            if all(isinstance(x, exp.Literal) and x.is_string for x in args):
                p = X.Lit(like_escape(*(str(x.this) for x in args)), TEXT)
            else:
                p = self.func("like_escape", args)
        return X.Like(a, p, negated=negated, case_insensitive=case_insensitive)

    def _ilike(self: Scalars, node: exp.ILike) -> X.Expr:
        return self._like(node, case_insensitive=True)

    def _escape(self: Scalars, node: exp.Escape) -> X.Expr:
        if isinstance(node.this, exp.SimilarTo):  # x SIMILAR TO p ESCAPE e
            return self._similarto(node.this, node.expression)
        if isinstance(node.this, exp.Like | exp.ILike):
            ci = isinstance(node.this, exp.ILike)
            return self._like(node.this, case_insensitive=ci, escape=node.expression)
        raise unsupported("ESCAPE", node)

    def _regexpreplace(self: Scalars, node: exp.RegexpReplace) -> X.Expr:
        """``regexp_replace(s, p, r [, start [, n]] [, flags])``: the arguments as written
        (the function's types tell a start from flags)."""
        rest = [node.args.get(k) for k in ("position", "occurrence", "modifiers")]
        args = [node.this, node.expression, node.args["replacement"]]
        return self.func("regexp_replace", args + [a for a in rest if a is not None])

    def _regexplike(self: Scalars, node: exp.RegexpLike) -> X.Expr:
        flags = node.args.get("flag")
        args = [node.this, node.expression] + ([flags] if flags is not None else [])
        return self.func("regexp_like", args)

    def _regexpilike(self: Scalars, node: exp.RegexpILike) -> X.Expr:
        return self.func("regexp_like", [node.this, node.expression, exp.Literal.string("i")])

    def _similarto(
        self: Scalars, node: exp.SimilarTo, escape: exp.Expression | None = None
    ) -> X.Expr:
        """``a SIMILAR TO p``: ``a`` matches the regular expression PostgreSQL makes of ``p``
        (``similar_to_escape``), whole."""
        args = [node.expression] + ([escape] if escape is not None else [])
        if all(isinstance(a, exp.Literal) and a.is_string for a in args):  # known now
            regex: X.Expr = X.Lit(similar_to_escape(*(str(a.this) for a in args)), TEXT)
        else:
            regex = self.func("similar_to_escape", args)
        return Func("regexp_like", (self.blank_padded(self.expr(node.this)), regex))

    def _overlay(self: Scalars, node: exp.Overlay) -> X.Expr:
        """``overlay(s PLACING r FROM n [FOR k])``: ``s`` with its ``k`` characters from the
        ``n``-th (``length(r)`` of them by default) replaced by ``r``, as PostgreSQL defines
        it (``substring(s, 1, n - 1) || r || substring(s, n + k)``)."""
        s, r, start = node.this, node.expression, node.args["from_"]
        count = node.args.get("for_") or exp.Anonymous(this="length", expressions=[r.copy()])
        head = exp.Substring(
            this=s.copy(),
            start=exp.Literal.number(1),
            length=exp.Sub(this=start.copy(), expression=exp.Literal.number(1)),
        )
        tail = exp.Substring(this=s.copy(), start=exp.Add(this=start.copy(), expression=count))
        whole = exp.DPipe(this=exp.DPipe(this=head, expression=r.copy()), expression=tail)
        return self.expr(whole)
