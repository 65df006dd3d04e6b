"""The oid type through a query: a view's oid columns (held as bigints) and casts to oid keep
the type through joins, CTEs, subqueries and aggregates that keep a value (min, max,
coalesce), as PostgreSQL's types flow, so the query shows its oid columns as oids; and where
PostgreSQL has no operator or function of an oid (``x + 0``, ``-x``, ``sum(x)``), the query is
refused as there (42883). sqlglot types a qualified copy of the query (oid is its UINT)."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from changeflow.adapter.catalog import CatalogState
from changeflow.adapter.sql.scope import table_name
from changeflow.errors import PlanError

T = exp.DataType.Type
# PostgreSQL's names of the types an operand of an oid may have
_NAMES = {T.UINT: "oid", T.INT: "integer", T.BIGINT: "bigint", T.SMALLINT: "smallint"}
_NAMES |= {T.DECIMAL: "numeric", T.DOUBLE: "double precision", T.FLOAT: "real", T.TEXT: "text"}
_OPERATORS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_OPERATORS |= {exp.IntDiv: "/", exp.BitwiseAnd: "&", exp.BitwiseOr: "|"}


def _is_oid(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Expression) and node.type is not None and node.type.this == T.UINT


def _name(node: exp.Expression) -> str:
    kind = node.type.this if node.type is not None else None
    return _NAMES.get(kind, "unknown" if kind in (None, T.UNKNOWN, T.NULL) else str(kind).lower())


def _schema(tree: exp.Expression, state: CatalogState) -> dict[str, dict[str, str]] | None:
    """The columns of the catalog's relations ``tree`` reads (oid as UINT); None if it reads
    no oid column and casts nothing to oid, or reads a relation the catalog has not."""
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    out: dict[str, dict[str, str]] = {}
    oids = any(c.to.this == T.UINT for c in tree.find_all(exp.Cast))
    for table in tree.find_all(exp.Table):
        name = table_name(table)
        if name in ctes or not name:
            continue
        item = state.find(name)
        if item is None or not item.columns:
            return None
        oids = oids or any(t == "oid" for _, t, _ in item.columns)
        out[table.name] = {c: ("UINT" if t == "oid" else t) for c, t, _ in item.columns}
    return out if oids else None


def oid_columns(tree: exp.Expression, state: CatalogState | None) -> tuple[int, ...] | None:
    """The output positions of ``tree``'s oid columns; None if sqlglot cannot type the query
    (then only its select list's own casts and reads are known). Raises 42883 for an
    operator or aggregate of an oid that PostgreSQL has not."""
    if state is None or not isinstance(tree, exp.Query):
        return None
    schema = _schema(tree, state)
    if schema is None:
        return None
    try:
        mapping = MappingSchema(schema, dialect="postgres")
        typed = annotate_types(
            qualify(tree.copy(), schema=mapping, dialect="postgres", quote_identifiers=False),
            schema=mapping,
        )
    except (SqlglotError, ValueError, KeyError):
        return None
    for node in typed.walk():
        op = _OPERATORS.get(type(node))
        if op is not None and (_is_oid(node.left) or _is_oid(node.right)):
            shown = f"{_name(node.left)} {op} {_name(node.right)}"
            raise PlanError(f"operator does not exist: {shown}", sqlstate="42883")
        if isinstance(node, exp.Neg) and _is_oid(node.this):
            raise PlanError("operator does not exist: - oid", sqlstate="42883")
        if isinstance(node, exp.Sum | exp.Avg) and _is_oid(node.this):
            name = "sum" if isinstance(node, exp.Sum) else "avg"
            raise PlanError(f"function {name}(oid) does not exist", sqlstate="42883")
    _typeof_oids(tree, typed)
    return tuple(i for i, e in enumerate(typed.selects) if _is_oid(e))


def _typeof_oids(tree: exp.Expression, typed: exp.Expression) -> None:
    """``pg_typeof(x)`` of an oid in ``tree`` as the text 'oid' (the plan holds a bigint);
    ``typed`` is its typed copy, whose calls come in the same order."""
    calls = [c for c in tree.find_all(exp.Anonymous) if c.name.lower() == "pg_typeof"]
    found = [c for c in typed.find_all(exp.Anonymous) if c.name.lower() == "pg_typeof"]
    if len(calls) != len(found):
        return
    for call, copy in zip(calls, found, strict=True):
        if len(copy.expressions) == 1 and _is_oid(copy.expressions[0]):
            named = isinstance(call.parent, exp.Select)  # the column keeps its name
            text = exp.Literal.string("oid")
            call.replace(exp.alias_(text, "pg_typeof") if named else text)
