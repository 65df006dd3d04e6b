"""Prepared statements: the extended protocol's (Parse) and SQL's (``PREPARE``, ``EXECUTE``,
``DEALLOCATE [ALL]``), and the types of their parameters.

A parameter the client declares with OID 0 gets the type PostgreSQL would infer from where it
stands: an INSERT's target column, the column an UPDATE sets, the column on the other side of a
comparison or ``IN``, or a cast. Describe reports those types and Bind decodes by them (asyncpg
sends parameters in binary by the described types). Any other parameter is text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from changeflow.adapter.sql.array_scalars import is_any_all
from changeflow.adapter.sql.dialect import PostgresCalls
from changeflow.adapter.sql.scope import table_name
from changeflow.adapter.sql.statements import NAME, commas, name
from changeflow.adapter.sql.types import cast_target
from changeflow.adapter.system_types import OID_TYPE, OIDS_TYPE
from changeflow.compute.types import Schema, SqlType, array_of
from changeflow.errors import ChangeflowError, PlanError
from changeflow.server.values import TEXT, oid_of

_FLAGS = re.IGNORECASE | re.DOTALL
PREPARE = re.compile(
    rf"PREPARE\s+(?P<name>{NAME})\s*(?:\((?P<types>[^)]*)\))?\s*AS\s+(?P<query>.+)", _FLAGS
)
EXECUTE = re.compile(rf"EXECUTE\s+(?P<name>{NAME})\s*(?:\((?P<args>.*)\))?", _FLAGS)
DEALLOCATE = re.compile(rf"DEALLOCATE\s+(?:PREPARE\s+)?(?P<name>{NAME})", _FLAGS)
UNREAD = object()  # a prepared statement's text not read for a plain INSERT yet


@dataclass
class Prepared:
    """A prepared statement: its text and parameter type OIDs (0: not known yet), and what
    its Binds and Describes work out from it, kept for the next ones: a plain INSERT's
    target (its text read once) and that table's columns on the catalog version
    ``catalog`` (looked up again when the catalog changes), and the statement's
    Describe on the catalog version and search path it was made on."""

    text: str
    oids: list[int]
    columns: Any = None  # a plain INSERT's target columns, once looked up (server/batch.py)
    catalog: Any = None  # the catalog version ``columns`` were looked up on
    found: Any = UNREAD  # the plain INSERT's :class:`~changeflow.server.batch.Target`, or None
    described: Any = None  # (catalog version, search path, parameter OIDs, its columns)


def statement_name(raw: str) -> str:
    return name(raw)


def type_oids(types: str | None) -> list[int]:
    """The OIDs of ``PREPARE name (type, …)``'s type list."""
    out = []
    for part in commas(types or ""):
        if part.strip():
            try:
                dt = exp.DataType.build(part.strip(), dialect="postgres")
            except Exception:
                raise PlanError(f'type "{part.strip()}" does not exist', sqlstate="42704") from None
            out.append(oid_of(cast_target(dt)[0])[0])
    return out


def arguments(args: str | None) -> list[str]:
    """``EXECUTE name (a, b)``'s argument expressions, as SQL text."""
    return [a.strip() for a in commas(args or "") if a.strip()]


def infer_oids(text: str, oids: list[int], columns_of: Callable[[str], Schema | None]) -> list[int]:
    """``oids`` with each 0 replaced by the OID of the type the parameter's place implies
    (text where nothing does). ``columns_of`` gives a relation's columns (None if unknown)."""
    if all(oids):
        return list(oids)
    try:
        tree = PostgresCalls().parse(text)[0]
    except Exception:  # the statement's own error comes when it runs
        tree = None
    found = _infer(tree, columns_of) if tree is not None else {}
    return [o or (oid_of(found[i])[0] if i in found else TEXT) for i, o in enumerate(oids, 1)]


def _param(node: exp.Expression | None) -> int | None:
    if isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal):
        try:
            return int(node.this.this)
        except ValueError:
            return None
    return None


def _array_of(kind: SqlType | None) -> SqlType | None:
    try:
        return None if kind is None else array_of(kind)
    except PlanError:
        return None


def _cast_type(dt: exp.DataType) -> SqlType | None:
    if dt.is_type(exp.DataType.Type.UINT):
        return OID_TYPE
    if dt.is_type(exp.DataType.Type.ARRAY) and dt.expressions[0].is_type(exp.DataType.Type.UINT):
        return OIDS_TYPE
    try:
        return cast_target(dt)[0]
    except PlanError:
        return None


def _infer(tree: exp.Expression, columns_of: Callable[[str], Schema | None]) -> dict[int, SqlType]:
    tables: dict[str, dict[str, SqlType]] = {}
    for table in tree.find_all(exp.Table):
        try:
            schema = columns_of(table_name(table))
        except ChangeflowError:
            schema = None
        if schema:
            tables[table.name.lower()] = {c.name: c.type for c in schema}
            if table.alias:
                tables[table.alias.lower()] = tables[table.name.lower()]

    def column(node: exp.Expression) -> SqlType | None:
        if not isinstance(node, exp.Column):
            return None
        if node.table:
            return tables.get(node.table.lower(), {}).get(node.name)
        for cols in tables.values():
            if node.name in cols:
                return cols[node.name]
        return None

    found: dict[int, SqlType] = {}

    def give(node: exp.Expression | None, kind: SqlType | None) -> None:
        n = _param(node)
        if n is not None and kind is not None:
            found.setdefault(n, kind)

    if isinstance(tree, exp.Insert):
        target = tree.this
        table = target.this if isinstance(target, exp.Schema) else target
        cols = tables.get(table.name.lower(), {}) if isinstance(table, exp.Table) else {}
        names = (
            [c.name for c in target.expressions] if isinstance(target, exp.Schema) else list(cols)
        )
        values = tree.expression
        if isinstance(values, exp.Values):
            for row in values.expressions:
                for i, item in enumerate(row.expressions if isinstance(row, exp.Tuple) else [row]):
                    if i < len(names):
                        give(item, cols.get(names[i]))
    for node in tree.walk():
        if isinstance(node, exp.Cast):
            give(node.this, _cast_type(node.to))
        elif isinstance(node, (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)):
            if is_any_all(node.expression):  # x = ANY($1): an array of x's type
                inner = node.expression
                kind = column(node.this)
                arg = inner.this if isinstance(inner, exp.Any) else inner.expressions[0]
                give(arg, _array_of(kind))
                array = column(arg.this if isinstance(arg, exp.Paren) else arg)
                give(node.this, array.element if array is not None else None)  # $1 = ANY(xs)
            give(node.expression, column(node.this))
            give(node.this, column(node.expression))
        elif isinstance(node, exp.In):
            for item in node.expressions:
                give(item, column(node.this))
        elif isinstance(node, exp.Between):
            give(node.args.get("low"), column(node.this))
            give(node.args.get("high"), column(node.this))
    return found
