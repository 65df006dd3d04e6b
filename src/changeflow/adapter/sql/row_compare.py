"""Row constructor comparisons, ``(a, b) = (1, 2)``, as PostgreSQL defines them: ``=`` is
each pair equal (AND), ``<>`` some pair different (OR), ``<``, ``<=``, ``>``, ``>=`` compare
the pairs in order (the first pair that differs decides); ``(a, b) IS [NOT] NULL`` is every
field NULL (not NULL). A row compared with a subquery of as many columns, ``(a, b) = (SELECT x,
y …)``, compares with each column as a scalar subquery (no row: NULLs; more: 21000). Rewritten
into comparisons of the fields before planning."""

from __future__ import annotations

from sqlglot import exp

from changeflow.errors import PlanError

_ORDERED = {exp.LT: exp.LT, exp.LTE: exp.LT, exp.GT: exp.GT, exp.GTE: exp.GT}


def _fields(node: exp.Expression) -> list[exp.Expression] | None:
    """A row constructor's fields; a subquery's of several columns as one scalar subquery
    each, over the same rows (a DISTINCT one's read from its rows once), else None."""
    if isinstance(node, exp.Tuple):
        return node.expressions
    inner = node.this if isinstance(node, exp.Subquery) else None
    if not isinstance(inner, exp.Select) or len(inner.expressions) < 2:
        return None
    if any(e.find(exp.Star) for e in inner.expressions):
        return None
    width = range(len(inner.expressions))
    if inner.args.get("distinct"):
        named = inner.copy()
        named.set("expressions", [exp.alias_(e, f"f{k}") for k, e in enumerate(named.expressions)])
        rows = named.subquery("row_fields")
        return [exp.select(f"row_fields.f{k}").from_(rows.copy()).subquery() for k in width]
    out = []
    for e in inner.expressions:
        one = inner.copy()
        one.set("expressions", [e.copy()])
        out.append(exp.Subquery(this=one))
    return out


def _pairs(node: exp.Binary) -> list[tuple[exp.Expression, exp.Expression]] | None:
    """A comparison's pairs of fields: a row constructor's with another's or with a subquery's
    columns (on the right, as PostgreSQL reads a row subquery)."""
    a, b = node.this, node.expression
    fb = _fields(b) if isinstance(a, exp.Tuple) else None
    if fb is None:
        return None
    if len(a.expressions) != len(fb):
        if isinstance(b, exp.Tuple):
            raise PlanError("unequal number of entries in row expressions", sqlstate="42601")
        few = len(fb) < len(a.expressions)
        raise PlanError(f"subquery has too {'few' if few else 'many'} columns", sqlstate="42601")
    return list(zip(a.expressions, fb, strict=True))


def _lexicographic(
    node: exp.Binary, pairs: list[tuple[exp.Expression, exp.Expression]]
) -> exp.Expression:
    (x, y), rest = pairs[0], pairs[1:]
    if not rest:
        return type(node)(this=x.copy(), expression=y.copy())
    strict = _ORDERED[type(node)](this=x.copy(), expression=y.copy())
    tie = exp.and_(exp.EQ(this=x.copy(), expression=y.copy()), _lexicographic(node, rest))
    return exp.paren(exp.or_(strict, exp.paren(tie)))


def rewrite_row_comparisons(tree: exp.Expression) -> None:
    """Rewrite ``tree``'s comparisons of two row constructors in place."""
    for node in list(tree.find_all(exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)):
        pairs = _pairs(node)
        if pairs is None:
            continue
        if isinstance(node, exp.EQ | exp.NEQ):
            parts = [type(node)(this=x.copy(), expression=y.copy()) for x, y in pairs]
            joined = exp.and_(*parts) if isinstance(node, exp.EQ) else exp.or_(*parts)
            node.replace(exp.paren(joined))
        else:
            node.replace(_lexicographic(node, pairs))
    for node in list(tree.find_all(exp.Is)):
        if not isinstance(node.this, exp.Tuple) or not isinstance(node.expression, exp.Null):
            continue
        tests = [exp.Is(this=e.copy(), expression=exp.Null()) for e in node.this.expressions]
        each = [exp.Not(this=t) for t in tests] if node.args.get("negate") else tests
        node.replace(exp.paren(exp.and_(*each)))  # NOT (row IS NULL) stays its negation
