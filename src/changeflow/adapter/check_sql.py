"""A CHECK constraint's expression as PostgreSQL's ``pg_get_constraintdef`` prints it: every
operator in parentheses (``CHECK ((x > 0))``), or, pretty, only where precedence needs them
(``CHECK (x > 0 AND y < x)``); a string constant with its type (``'a'::text``), a negative
number quoted (``'-1'::integer``)."""

from __future__ import annotations

from sqlglot import exp

from changeflow.compute.functions.chars import quote_ident

_BINARY = {
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.And: "AND",
    exp.Or: "OR",
    exp.Like: "~~",
}
_ARITH = ("+", "-", "*", "/", "%")
_BOOL = (exp.And, exp.Or, exp.Not)


def constraint_def(sql: str, pretty: bool) -> str:
    """``CHECK (…)`` of the check expression ``sql`` (PostgreSQL's dialect)."""
    import sqlglot

    tree = _bare(sqlglot.parse_one(sql, read="postgres"))
    text = _deparse(tree, pretty)
    return f"CHECK ({text})" if pretty or not _operator(tree) else f"CHECK (({text}))"


def _bare(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _operator(node: exp.Expression) -> bool:
    return type(node) in _BINARY or isinstance(node, exp.Not | exp.Is)


def _deparse(node: exp.Expression, pretty: bool) -> str:
    """``node`` as PostgreSQL's ruleutils prints it, its operands in parentheses where
    :func:`_simple` says they need them."""
    op = _BINARY.get(type(node))
    if op is not None:
        left = _child(node.this, node, pretty, True)
        return f"{left} {op} {_child(node.expression, node, pretty, False)}"
    if isinstance(node, exp.Not):
        inner = _bare(node.this)
        if isinstance(inner, exp.Is):
            return _is(inner, pretty, not inner.args.get("negate"))
        return f"NOT {_child(inner, node, pretty, True)}"
    if isinstance(node, exp.Is):
        return _is(node, pretty, bool(node.args.get("negate")))
    if isinstance(node, exp.Column):
        name = node.this.this if node.this.quoted else node.this.this.lower()
        return quote_ident(name)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return f"'-{node.this.this}'::{_number_type(node.this.this)}"
    if isinstance(node, exp.Literal):
        if node.is_string:
            return "'" + node.this.replace("'", "''") + "'::text"
        return node.this
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Null):
        return "NULL"
    return node.sql(dialect="postgres")


def _child(node: exp.Expression, parent: exp.Expression, pretty: bool, left: bool) -> str:
    node = _bare(node)
    text = _deparse(node, pretty)
    if not _operator(node) or (pretty and _simple(node, parent, left)):
        return text
    return f"({text})"


def _simple(node: exp.Expression, parent: exp.Expression, left: bool) -> bool:
    """PostgreSQL's isSimpleNode for pretty output: may ``node`` go without parentheses
    as an operand of ``parent``?"""
    if isinstance(parent, exp.Not) and isinstance(node, exp.And | exp.Or):
        return False
    if isinstance(parent, _BOOL):
        return isinstance(parent, exp.Or) if isinstance(node, exp.Or) else True
    op, outer = _BINARY.get(type(node)), _BINARY.get(type(parent))
    if op not in _ARITH or outer not in _ARITH:
        return False
    high, high_parent = op in ("*", "/", "%"), outer in ("*", "/", "%")
    if high != high_parent:
        return high
    return left


def _is(node: exp.Is, pretty: bool, negated: bool) -> str:
    what = "NULL" if isinstance(node.expression, exp.Null) else node.expression.sql("postgres")
    operand = _child(node.this, node, pretty, True)
    return f"{operand} IS {'NOT ' if negated else ''}{what}"


def _number_type(text: str) -> str:
    if "." in text or "e" in text.lower():
        return "numeric"
    return "integer" if abs(int(text)) < 2**31 else "bigint"
