"""Expressions as PostgreSQL 15's ruleutils prints them, for every catalog that shows one:
column defaults (``pg_get_expr`` of pg_attrdef, information_schema.columns.column_default,
psql's ``\\d``) and CHECK constraints (``pg_get_constraintdef``).

An expression is typed first as PostgreSQL's parser leaves it
(:mod:`~changeflow.adapter.deparse_nodes`), then printed: each operator in parentheses, or,
pretty, only where precedence needs them; casts as ``::type`` with PostgreSQL's type names,
the implicit ones inside an operator or a call (``(0)::numeric``); constants as
``get_const_expr`` labels them (``'x'::text``, ``'-1'::integer``, ``1.5``); function names
lower case, the grammar's forms (``CURRENT_DATE``, ``COALESCE``) as written."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter import deparse_nodes as D
from changeflow.adapter import deparse_types as T_
from changeflow.compute.functions.chars import quote_ident

_NAMES = {
    16: "boolean",
    17: "bytea",
    19: "name",
    20: "bigint",
    21: "smallint",
    23: "integer",
    25: "text",
    114: "json",
    700: "real",
    701: "double precision",
    705: "unknown",
    1042: "bpchar",
    1043: "character varying",
    1082: "date",
    1083: "time without time zone",
    1114: "timestamp without time zone",
    1184: "timestamp with time zone",
    1186: "interval",
    1700: "numeric",
    2205: "regclass",
    2950: "uuid",
    3802: "jsonb",
    26: "oid",
}
T = exp.DataType.Type
_SQLGLOT = {
    T.BOOLEAN: 16,
    T.SMALLINT: 21,
    T.INT: 23,
    T.BIGINT: 20,
    T.DECIMAL: 1700,
    T.FLOAT: 700,
    T.DOUBLE: 701,
    T.TEXT: 25,
    T.VARCHAR: 1043,
    T.CHAR: 1042,
    T.BPCHAR: 1042,
    T.NAME: 19,
    T.DATE: 1082,
    T.TIME: 1083,
    T.TIMESTAMP: 1114,
    T.TIMESTAMPTZ: 1184,
    T.INTERVAL: 1186,
    T.JSON: 114,
    T.JSONB: 3802,
    T.UUID: 2950,
    T.VARBINARY: 17,
}
_OBJECTS = {"REGCLASS": 2205, "OID": 26}


def type_name(oid: int, typmod: int = -1) -> str:
    """format_type's name of a type OID and modifier."""
    element = T_.ELEMENTS.get(oid)
    if element is not None:
        return type_name(element) + "[]"
    if typmod >= 4:
        if oid == T_.NUMERIC:
            return f"numeric({(typmod - 4) >> 16},{(typmod - 4) & 0xFFFF})"
        if oid == T_.VARCHAR:
            return f"character varying({typmod - 4})"
        if oid == T_.BPCHAR:
            return f"character({typmod - 4})"
    return _NAMES.get(oid, "text")


def type_of(to: exp.Expression) -> tuple[int, int]:
    """A cast's target type as a type OID and modifier."""
    if isinstance(to, exp.ObjectIdentifier):
        return _OBJECTS.get(str(to.this).upper(), T_.TEXT), -1
    if not isinstance(to, exp.DataType):
        return T_.TEXT, -1
    if to.this == T.ARRAY and to.expressions:
        element, _ = type_of(to.expressions[0])
        return T_.ARRAYS.get(element, T_.TEXT), -1
    from changeflow.adapter.typmods import typmod

    oid = _SQLGLOT.get(to.this, T_.TEXT)
    mod = typmod(to) if to.expressions else -1
    return oid, mod


def normalize(text: str, oid: int) -> str:
    """A quoted literal as a constant of ``oid`` shows it (its type's output); as written
    where this module does not know the type or the text is no value of it."""
    from changeflow.compute import types as CT
    from changeflow.compute.scalars import from_text, to_text

    if oid == T_.REGCLASS:
        return text[len("public.") :] if text.startswith("public.") else text
    kinds = {16: CT.BOOL, 20: CT.INT8, 21: CT.INT2, 23: CT.INT4, 1700: CT.NUMERIC, 701: CT.FLOAT8}
    kinds |= {700: CT.FLOAT4, 1082: CT.DATE, 1114: CT.TIMESTAMP, 1184: CT.TIMESTAMPTZ}
    kinds |= {1083: CT.TIME, 1186: CT.INTERVAL, 3802: CT.JSONB, 2950: CT.UUID, 17: CT.BYTEA}
    kind = kinds.get(oid)
    element = T_.ELEMENTS.get(oid)
    if element is not None and element in kinds:
        kind = CT.array_of(kinds[element])
    if kind is None:
        return text
    try:
        return to_text(from_text(text, kind), kind)
    except Exception:  # noqa: BLE001 (a value the type refuses is shown as written)
        return text


def _parse(sql: str) -> exp.Expression:
    from changeflow.adapter.sql.dialect import PostgresCalls

    return sqlglot.parse_one(sql, read=PostgresCalls)


def stored_sql(node: exp.Expression) -> str:
    """An expression's SQL as the catalog keeps it (sqlglot's PostgreSQL), keeping the name
    of a call that sqlglot reads as another (``now()`` is not ``CURRENT_TIMESTAMP``), a unary
    ``+`` and ``IS UNKNOWN``."""
    from changeflow.adapter.sql.dialect import PostgresCalls

    def named(e: exp.Expression) -> exp.Expression:
        name = e.meta.get("name")
        if isinstance(e, exp.CurrentTimestamp) and name not in (None, "current_timestamp"):
            return exp.Anonymous(this=name, expressions=[])
        called = D.called_as(e)
        if called is not None:
            return exp.Anonymous(this=called[0], expressions=[a.copy() for a in called[1]])
        return e

    return node.copy().transform(named).sql(dialect=PostgresCalls)


def column_types(item: Any) -> dict[str, int]:
    """A catalog item's columns' type OIDs by name (varchar(n) and char(n) as PostgreSQL
    types them, though they hold text here)."""
    from changeflow.adapter.system_tables import TYPES
    from changeflow.adapter.typmods import text_types

    texts = text_types(item)
    out = {}
    for name, kind, _ in item.columns:
        if kind == "text":
            kind = texts.get(name, kind)
        out[name] = TYPES.get(kind, (T_.TEXT, -1, ""))[0]
    return out


def defaults_shown(item: Any) -> dict[str, tuple[str, str]]:
    """A table's columns' defaults (and generation expressions) as pg_get_expr shows them,
    plain and pretty, by column (a column without one, or with ``DEFAULT NULL``, left out)."""
    from changeflow.adapter.resolver import generated_of

    defaults = item.options.get("defaults") or [None] * len(item.columns)
    texts = [d or g for d, g in zip(defaults, generated_of(item), strict=False)]
    types = column_types(item)
    key = tuple(sorted(types.items()))
    out = {}
    for (name, _, _), sql in zip(item.columns, texts, strict=False):
        shown = _default_pair(sql, key, types[name]) if sql is not None else None
        if shown is not None:
            out[name] = shown
    return out


def checks_shown(item: Any, sql: str) -> tuple[str, str]:
    """A CHECK constraint of ``item`` as pg_get_constraintdef shows it: plain and pretty."""
    return _check_pair(sql, tuple(sorted(column_types(item).items())))


def default_shown(sql: str, base: int) -> str | None:
    """A DEFAULT of the type ``base`` (an OID) as PostgreSQL shows it (a domain's
    pg_type.typdefault, a function parameter's in pg_get_function_arguments)."""
    shown = _default_pair(sql, (), base)
    return None if shown is None else shown[0]


@lru_cache(maxsize=1024)
def domain_check_shown(sql: str, base: int) -> tuple[str, str]:
    """A domain's CHECK (its SQL reads the column ``value``) as pg_get_constraintdef shows it,
    plain and pretty, ``VALUE`` of the type ``base`` (an OID)."""
    from changeflow.adapter.checks import column_renamed

    shown = "changeflow_domain_value"  # VALUE while deparsed (a column's name)
    sql = stored_sql(column_renamed(_parse(sql), "value", shown))
    plain, pretty = _check_pair(sql, ((shown, base),))
    return plain.replace(shown, "VALUE"), pretty.replace(shown, "VALUE")


@lru_cache(maxsize=8192)
def _default_pair(
    sql: str, columns: tuple[tuple[str, int], ...], target: int
) -> tuple[str, str] | None:
    """A DEFAULT's (plain, pretty) text; None for ``DEFAULT NULL`` (PostgreSQL keeps no
    default then). Kept per text and column types: every catalog query shows them all."""
    try:
        tree = _parse(sql)
        while isinstance(tree, exp.Paren) and not tree.meta.get("plus"):
            tree = tree.this
        if isinstance(tree, exp.Null):
            return None
        node = D.coerce(D.Typer(dict(columns), normalize).node(tree), target, normalize)
        return Printer(False).expr(node, False), Printer(True).expr(node, False)
    except Exception:  # noqa: BLE001 (a catalog query never fails on a form not modelled)
        return sql, sql  # what this module cannot read, as stored


@lru_cache(maxsize=8192)
def _check_pair(sql: str, columns: tuple[tuple[str, int], ...]) -> tuple[str, str]:
    """A CHECK's (plain, pretty) ``CHECK (…)``."""
    try:
        node = D.Typer(dict(columns), normalize).node(_parse(sql))
        plain, pretty = (Printer(p).expr(node, False) for p in (False, True))
        return f"CHECK ({plain})", f"CHECK ({pretty})"
    except Exception:  # noqa: BLE001 (a catalog query never fails on a form not modelled)
        return f"CHECK ({sql})", f"CHECK ({sql})"


def pretty_texts(items: list[Any], defs: Mapping[int, tuple[str, str]]) -> dict[str, str]:
    """pg_get_expr's pretty text of each expression the catalogs hold (pg_attrdef.adbin's
    defaults and pg_constraint.conbin's checks, as their plain text) by that plain text;
    ``defs`` is pg_get_constraintdef's (plain, pretty) by constraint."""
    out = {
        plain[len("CHECK (") : -1]: shown[len("CHECK (") : -1]
        for plain, shown in defs.values()
        if plain.startswith("CHECK (")
    }
    for item in items:
        if item.kind == "table":
            out |= dict(defaults_shown(item).values())
    return out


class Printer:
    """ruleutils' printing of typed nodes (PRETTYFLAG_INDENT always; PRETTYFLAG_PAREN when
    ``pretty``)."""

    def __init__(self, pretty: bool) -> None:
        self.pretty = pretty
        self.indent = 0

    def expr(self, n: D.Node, implicit: bool) -> str:
        """``n`` (``implicit``: show the implicit casts, as inside an operator)."""
        return re.sub(r" +\n", "\n", self._expr(n, implicit))

    def _wrap(self, text: str) -> str:
        return text if self.pretty else f"({text})"

    def _paren(self, n: D.Node, parent: D.Node, implicit: bool = True) -> str:
        text = self._expr(n, implicit)
        return f"({text})" if self.pretty and not _simple(n, parent) else text

    def _expr(self, n: D.Node, implicit: bool) -> str:  # noqa: C901, PLR0911 (a dispatch)
        if isinstance(n, D.Const):
            return const_text(n)
        if isinstance(n, D.Var):
            return quote_ident(n.name)
        if isinstance(n, D.Op):
            if len(n.args) == 1:
                return self._wrap(f"{n.op} {self._paren(n.args[0], n)}")
            left, right = (self._paren(a, n) for a in n.args)
            return self._wrap(f"{left} {n.op} {right}")
        if isinstance(n, D.Cast):
            return self._cast(n, implicit)
        if isinstance(n, D.Bool):
            if n.op == "NOT":
                return self._wrap(f"NOT {self._paren(n.args[0], n, False)}")
            return self._wrap(f" {n.op} ".join(self._paren(a, n, False) for a in n.args))
        if isinstance(n, D.Test):
            return self._wrap(f"{self._paren(n.arg, n)} {n.what}")
        if isinstance(n, D.ArrayOf):
            if not n.elements:  # its type said, as ruleutils says it
                return f"ARRAY[]::{type_name(n.type)}"
            return "ARRAY[" + ", ".join(self._expr(e, True) for e in n.elements) + "]"
        if isinstance(n, D.AnyAll):
            left, right = self._paren(n.left, n), self._paren(n.right, n)
            return self._wrap(f"{left} {n.op} {'ALL' if n.all else 'ANY'} ({right})")
        if isinstance(n, D.Func):
            return self._func(n)
        if isinstance(n, D.Case):
            return self._case(n)
        if isinstance(n, D.Subscript):
            return f"{self._paren(n.arg, n)}[{self._expr(n.index, True)}]"
        assert isinstance(n, D.Raw)
        return n.text

    def _cast(self, n: D.Cast, implicit: bool) -> str:
        if n.implicit and not implicit:
            return self._paren(n.arg, n, False)
        name = type_name(n.type, n.typmod)
        arg = n.arg
        if isinstance(arg, D.Const) and arg.type == n.type and arg.typmod < 0:
            return f"{const_text(arg, -1)}::{name}"
        if self.pretty:
            return f"{self._paren(arg, n, False)}::{name}"
        return f"({self._expr(arg, False)})::{name}"

    def _func(self, n: D.Func) -> str:
        args = [self._expr(a, True) for a in n.args]
        if n.form == "keyword":
            return n.name
        if n.form == "upper":
            return f"{n.name}({', '.join(args)})"
        if n.form == "substring":
            return "SUBSTRING(" + " ".join(
                w + a for w, a in zip(("", "FROM ", "FOR "), args, strict=False)
            ) + ")"  # fmt: skip
        if n.form == "position":
            return f"POSITION(({args[0]}) IN ({args[1]}))"
        if n.form == "at_time_zone":
            left, right = (self._paren(a, n) for a in n.args)
            return f"({left} AT TIME ZONE {right})"
        if n.form == "extract":
            return f"{n.name} FROM {args[0]})"
        if n.form == "trim":
            chars = f" {args[0]}" if len(args) > 1 else ""
            return f"{n.name}{chars} FROM {args[-1]})"
        return f"{quote_ident(n.name)}({', '.join(args)})"

    def _case(self, n: D.Case) -> str:
        pad = " " * self.indent
        out = f"\n{pad}CASE"
        self.indent += 4
        inner = " " * self.indent
        for cond, result in n.whens:
            out += f"\n{inner}WHEN {self._expr(cond, False)} THEN {self._expr(result, True)}"
        default = n.default if n.default is not None else D.Const(n.type, None)
        out += f"\n{inner}ELSE {self._expr(default, True)}"
        self.indent -= 4
        return out + f"\n{pad}END"


def const_text(c: D.Const, showtype: int = 0) -> str:
    """get_const_expr: ``showtype`` -1 never labels the type, 0 where the text needs it."""
    name = type_name(c.type, c.typmod)
    if c.text is None:
        return "NULL" + (f"::{name}" if showtype >= 0 and c.type != T_.UNKNOWN else "")
    text, label = c.text, True
    quoted = "'" + text.replace("'", "''") + "'"
    if c.type == T_.INT4:
        label = text.startswith("-")
        shown = quoted if label else text
    elif c.type == T_.NUMERIC:
        looks_float = text[:1].isdigit() and any(ch in text for ch in ".eE")
        shown = text if looks_float else quoted
        label = not looks_float or c.typmod >= 0
    elif c.type == T_.BOOL:
        shown, label = text, False
    elif c.type == T_.UNKNOWN:
        shown, label = quoted, False
    else:
        shown = quoted
    return shown + (f"::{name}" if label and showtype >= 0 else "")


_FUNCTION_LIKE = (D.Var, D.Const, D.Func, D.ArrayOf, D.Subscript, D.Case, D.Raw)
_ARITH = ("+", "-", "*", "/", "%")


def _simple(n: D.Node, parent: D.Node) -> bool:  # noqa: PLR0911 (ruleutils' cases)
    """ruleutils' isSimpleNode (pretty): may ``n`` go without parentheses under ``parent``?"""
    if isinstance(n, _FUNCTION_LIKE):
        return True
    if isinstance(n, D.Cast):
        return isinstance(n.arg, D.Var | D.Const) or _simple(n.arg, n)
    if isinstance(n, D.Op) and isinstance(parent, D.Op):
        if len(n.args) != 2 or len(parent.args) != 2:
            return False
        if n.op not in _ARITH or parent.op not in _ARITH:
            return False
        high, high_parent = n.op in ("*", "/", "%"), parent.op in ("*", "/", "%")
        if high != high_parent:
            return high
        return n is parent.args[0]
    if isinstance(n, D.Bool):
        if isinstance(parent, D.Bool):
            if n.op in ("NOT", "AND"):
                return parent.op in ("AND", "OR")
            return parent.op == "OR"
        return isinstance(parent, D.Func | D.Subscript | D.ArrayOf | D.Case)
    if isinstance(n, D.Op | D.Test):
        return isinstance(parent, D.Bool | D.Func | D.Subscript | D.ArrayOf | D.Case)
    return False
