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
_PRECEDENCE = {"OR": 1, "AND": 2, "NOT": 3}  # comparisons 4, arithmetic above


def _level(op: str) -> int:
    if op in _PRECEDENCE:
        return _PRECEDENCE[op]
    return 6 if op in ("*", "/", "%") else 5 if op in ("+", "-") else 4


def constraint_def(sql: str, pretty: bool) -> str:
    """``CHECK (…)`` of the check expression ``sql`` (PostgreSQL's dialect)."""
    import sqlglot

    tree = sqlglot.parse_one(sql, read="postgres")
    text = _deparse(tree, pretty, 0)
    return f"CHECK ({text})" if pretty else f"CHECK ({_wrap(tree, text)})"


def _wrap(node: exp.Expression, text: str) -> str:
    """Non-pretty output parenthesizes an operator expression even at the top."""
    while isinstance(node, exp.Paren):
        node = node.this
    return f"({text})" if type(node) in _BINARY or isinstance(node, exp.Not | exp.Is) else text


def _deparse(node: exp.Expression, pretty: bool, outer: int) -> str:
    if isinstance(node, exp.Paren):
        return _deparse(node.this, pretty, outer)
    op = _BINARY.get(type(node))
    if op is not None:
        level = _level(op)
        left = _deparse(node.this, pretty, level)
        right = _deparse(node.expression, pretty, level + 1)
        return _paren(f"{left} {op} {right}", pretty, level, outer)
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is):
            return _is(inner, pretty, outer, True)
        return _paren(f"NOT {_deparse(inner, pretty, 3)}", pretty, 3, outer)
    if isinstance(node, exp.Is):
        return _is(node, pretty, outer, bool(node.args.get("negate")))
    if isinstance(node, exp.Column):
        name = node.this.this if node.this.quoted else node.this.this.lower()
        return quote_ident(name)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return f"'-{node.this.this}'::{_number_type(node.this.this)}"
    if isinstance(node, exp.Literal):
        if node.is_string:
            return "'" + node.this.replace("'", "''") + "'::text"
        return node.this if _number_type(node.this) == "integer" else f"{node.this}"
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Null):
        return "NULL"
    return node.sql(dialect="postgres")


def _is(node: exp.Is, pretty: bool, outer: int, negated: bool) -> str:
    what = "NULL" if isinstance(node.expression, exp.Null) else node.expression.sql("postgres")
    text = f"{_deparse(node.this, pretty, 4)} IS {'NOT ' if negated else ''}{what}"
    return _paren(text, pretty, 4, outer)


def _number_type(text: str) -> str:
    if "." in text or "e" in text.lower():
        return "numeric"
    return "integer" if abs(int(text)) < 2**31 else "bigint"


def _paren(text: str, pretty: bool, level: int, outer: int) -> str:
    if not pretty:
        return f"({text})" if outer else text
    return f"({text})" if level < outer else text
