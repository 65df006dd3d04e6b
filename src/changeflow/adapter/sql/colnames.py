"""The names PostgreSQL gives unnamed select items (its ``FigureColname`` rules).

A column reference or a field gives its name, a function call the name it was written with,
a cast its operand's name if that has one, else its type's internal name (``int4``, ``text``),
a CASE its ELSE branch's name if that has one, else ``case``; a subscript names its array, a
scalar subquery its column; anything else (operators, constants) is ``?column?``.
"""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.sql.scalar import AGGREGATE_NODES
from changeflow.adapter.sql.scope import ident
from changeflow.compute import plan as P
from changeflow.errors import PlanError

T = exp.DataType.Type

# sqlglot's type ids as PostgreSQL names the types internally (pg_type.typname).
_TYPE_NAMES: dict[T, str] = {
    T.BOOLEAN: "bool",
    T.SMALLINT: "int2",
    T.INT: "int4",
    T.BIGINT: "int8",
    T.FLOAT: "float4",
    T.DOUBLE: "float8",
    T.DECIMAL: "numeric",
    T.TEXT: "text",
    T.VARCHAR: "varchar",
    T.CHAR: "bpchar",
    T.BPCHAR: "bpchar",
    T.NAME: "name",
    T.DATE: "date",
    T.TIME: "time",
    T.TIMESTAMP: "timestamp",
    T.TIMESTAMPTZ: "timestamptz",
    T.INTERVAL: "interval",
    T.UUID: "uuid",
    T.VARBINARY: "bytea",
    T.JSON: "json",
    T.JSONB: "jsonb",
    T.UINT: "oid",
}
# Calls whose written name sqlglot does not keep, by node.
_CALL_NAMES: dict[type, str] = {
    exp.Coalesce: "coalesce",
    exp.Nullif: "nullif",
    exp.Greatest: "greatest",
    exp.Least: "least",
    exp.CurrentDate: "current_date",
    exp.CurrentTimestamp: "current_timestamp",
    exp.CurrentUser: "current_user",
    exp.Explode: "unnest",
    exp.IntDiv: "div",
    exp.Localtime: "localtime",
    exp.Localtimestamp: "localtimestamp",
    exp.ToNumber: "to_number",
    exp.AtTimeZone: "timezone",
    exp.Overlay: "overlay",
    exp.ArrayToString: "array_to_string",
    exp.Replace: "replace",
}
_TRIMS = {"LEADING": "ltrim", "TRAILING": "rtrim"}

UNNAMED = "?column?"


def type_name(to: exp.Expression) -> str:
    """The internal name of a cast's target type, as a column named after it shows it."""
    if isinstance(to, exp.DataType):
        if to.this == T.ARRAY and to.expressions:
            return type_name(to.expressions[0])
        if to.this in _TYPE_NAMES:
            return _TYPE_NAMES[to.this]
        if to.this == T.USERDEFINED:
            return str(to.args.get("kind") or to.this).split(".")[-1].strip('"').lower()
    if isinstance(to, exp.ObjectIdentifier):
        return str(to.this).lower()
    return to.sql(dialect="postgres").lower()


def _call_name(node: exp.Func) -> str:
    if isinstance(node, exp.Trim):
        return _TRIMS.get(str(node.args.get("position") or "").upper(), "btrim")
    if "name" in node.meta:
        return str(node.meta["name"])
    if type(node) in _CALL_NAMES:
        return _CALL_NAMES[type(node)]
    if type(node) in AGGREGATE_NODES:
        return AGGREGATE_NODES[type(node)]
    return str(node.this).lower() if isinstance(node, exp.Anonymous) else node.sql_name().lower()


def _figure(node: exp.Expression) -> tuple[str, int]:
    """``node``'s column name and its strength: 2 a name of its own, 1 a fallback, 0 none."""
    if isinstance(node, exp.Alias):
        return ident(node.args.get("alias")), 2
    if node.meta.get("plus"):  # + x: an operator
        return UNNAMED, 0
    if isinstance(node, exp.Column):
        return (ident(node.this), 2) if not isinstance(node.this, exp.Star) else (UNNAMED, 0)
    if isinstance(node, exp.Dot):
        return ident(node.expression) if isinstance(node.expression, exp.Identifier) else (
            _figure(node.expression)[0]
        ), 2
    if isinstance(node, exp.Paren | exp.Filter | exp.Collate | exp.Bracket):
        return _figure(node.this)
    if isinstance(node, exp.Window):
        return _figure(node.this)
    if isinstance(node, exp.Cast | exp.TryCast):
        if "called" in node.meta:  # float8(x): named as a call
            return str(node.meta["called"]), 2
        name, strength = _figure(node.this)
        return (name, strength) if strength > 1 else (type_name(node.to), 1)
    if isinstance(node, exp.Case):
        default = node.args.get("default")
        name, strength = _figure(default) if default is not None else (UNNAMED, 0)
        return (name, strength) if strength > 1 else ("case", 1)
    if isinstance(node, exp.Exists):
        return "exists", 2
    if isinstance(node, exp.Subquery):
        inner = node.this
        selects = inner.selects if isinstance(inner, exp.Query) else []
        return (output_name(selects[0]) if selects else UNNAMED), 2
    if isinstance(node, exp.Array):
        return "array", 2  # as a call's name: ARRAY[…]::text is still "array"
    if isinstance(node, exp.Interval):
        return "interval", 1
    if isinstance(node, exp.ParseJSON):  # json 'text' (::t: sqlglot puts the cast inside)
        return (type_name(node.this.to), 1) if isinstance(node.this, exp.Cast) else ("json", 1)
    if "name" in node.meta:  # a call, as written (an operator's node has no name)
        return _call_name(node) if isinstance(node, exp.Func) else str(node.meta["name"]), 2
    if isinstance(node, exp.Anonymous) or type(node) in (*_CALL_NAMES, *AGGREGATE_NODES):
        return _call_name(node), 2
    return UNNAMED, 0


def output_name(node: exp.Expression) -> str:
    """The column name PostgreSQL gives the select item ``node``."""
    return _figure(node)[0]


def renamed(plan: P.Plan, names: list[str] | None, materialized: bool) -> P.Plan:
    """A view's columns under ``names``, the first ones (the rest keep theirs), each once."""
    given = names or []
    if len(given) > len(plan.schema):
        what = "too many column names were specified"
        what = what if materialized else "CREATE VIEW specifies more column names than columns"
        raise PlanError(what, sqlstate="42601")
    shown = each_once([*given, *(c.name for c in plan.schema[len(given) :])])
    return plan if names is None else P.Project(plan, tuple(range(len(shown))), tuple(shown))


def each_once(names: list[str]) -> list[str]:
    """``names``, each once (42701 for a repeated one, as a table's or a view's columns)."""
    if dup := next((n for n in names if names.count(n) > 1), None):
        raise PlanError(f'column "{dup}" specified more than once', sqlstate="42701")
    return names
