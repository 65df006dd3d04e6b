"""Types and arrays in catalog queries (:mod:`changeflow.adapter.system`).

A catalog query's result columns get PostgreSQL's types (``oid``, ``name``, ``"char"``,
``smallint``, ``oid[]``, ``text[]``…): the system relations declare them, and sqlglot's type
annotation carries them through subqueries, CTEs, casts and aggregates; a column it cannot
type is typed by its values. In SQLite an array is JSON text: ``x = ANY(array)`` is
``array_contains(array, x)``, ``array_agg(x ORDER BY k)`` an aggregate that sorts by its keys,
and an array literal (``'{1,2}'::oid[]``) a JSON literal.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from changeflow.adapter.sql.dialect import PostgresCalls
from changeflow.adapter.system_tables import INFO_TABLES, TABLES
from changeflow.compute.scalars import array_from_text
from changeflow.compute.types import (
    ARRAYS,
    BOOL,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    TEXT,
    Column,
    Schema,
    SqlType,
)


class CatalogSql(Postgres):
    """PostgreSQL's dialect, with the project's reading of ``oid`` (``$1::oid[]``)."""

    Tokenizer = PostgresCalls.Tokenizer
    Generator = PostgresCalls.Generator


OID_TYPE = SqlType("oid", pa.int64())
NAME_TYPE = SqlType("name", pa.string())
CHAR_TYPE = SqlType('"char"', pa.string())
OIDS_TYPE = SqlType("oid[]", pa.list_(pa.int64()), element=OID_TYPE)

# a system relation's declared column type -> (SQLite's column type, sqlglot's type)
DECLARED = {
    "INTEGER": ("INTEGER", "BIGINT"),
    "OID": ("INTEGER", "UINT"),
    "INT2": ("INTEGER", "SMALLINT"),
    "INT4": ("INTEGER", "INT"),
    "NAME": ("TEXT", "NAME"),
    "CHAR": ("TEXT", "CHAR"),
    "TEXT": ("TEXT", "TEXT"),
    "BOOL": ("BOOL", "BOOLEAN"),
    "REAL": ("REAL", "DOUBLE"),
}
_T = exp.DataType.Type
_SCALARS: dict[Any, SqlType] = {
    _T.UINT: OID_TYPE,
    _T.NAME: NAME_TYPE,
    _T.CHAR: CHAR_TYPE,
    _T.SMALLINT: INT2,
    _T.INT: INT4,
    _T.BIGINT: INT8,
    _T.BOOLEAN: BOOL,
    _T.DOUBLE: FLOAT8,
    _T.FLOAT: FLOAT8,
    _T.TEXT: TEXT,
    _T.VARCHAR: TEXT,
}
_PYTHON = {OID_TYPE: int, INT2: int, INT4: int, INT8: int, FLOAT8: float, BOOL: int}


def sqlite_columns(columns: str) -> str:
    """A system relation's column list as SQLite declares it."""
    return ", ".join(
        f"{name} {DECLARED[kind][0]}" for name, kind in (c.split() for c in columns.split(", "))
    )


def system_columns(name: str) -> Schema | None:
    """The columns of the system relation ``name`` (``pg_class``, ``pg_catalog.pg_class``,
    ``information_schema.tables``), as their PostgreSQL types; None if it is none."""
    schema, _, bare = name.lower().rpartition(".")
    if schema == "information_schema":
        columns = INFO_TABLES.get(bare)
    else:
        columns = TABLES.get(bare) if schema in ("", "pg_catalog") else None
    if columns is None:
        return None
    pairs = (c.split() for c in columns.split(", "))
    return tuple(Column(n, _SCALARS[_T[DECLARED[k][1]]]) for n, k in pairs)


def _sql_type(dt: exp.DataType | None) -> SqlType | None:
    if dt is None:
        return None
    if dt.this == _T.ARRAY and dt.expressions:
        element = _sql_type(dt.expressions[0])
        if element is OID_TYPE:
            return OIDS_TYPE
        if element is NAME_TYPE:  # name[] as text[] (array_agg(enumlabel))
            return ARRAYS.get(TEXT)
        return ARRAYS.get(element) if element is not None else None
    return _SCALARS.get(dt.this)


# the result types of catalog functions that sqlglot does not know
_CALL_TYPES = dict.fromkeys(
    ("pg_get_indexdef", "pg_get_expr", "pg_get_constraintdef", "pg_get_viewdef", "format_type"),
    "TEXT",
) | dict.fromkeys(("obj_description", "col_description", "shobj_description"), "TEXT")
_CALL_TYPES["pg_type_is_visible"] = "BOOLEAN"


def _typed_call(node: exp.Expression) -> exp.Expression:
    """A catalog function's call as a NULL of its result type (for the annotation only)."""
    call = node.expression if isinstance(node, exp.Dot) else node
    if isinstance(call, exp.Anonymous) and str(call.this).lower() in _CALL_TYPES:
        kind = _CALL_TYPES[str(call.this).lower()]
        return exp.Cast(this=exp.Null(), to=exp.DataType.build(kind))
    if isinstance(node, exp.Array) and any(isinstance(e, exp.Query) for e in node.expressions):
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("ARRAY<TEXT>"))  # of names
    return node


@functools.lru_cache(maxsize=256)
def annotated(text: str) -> tuple[SqlType | None, ...]:
    """The PostgreSQL types of the catalog query's result columns, where sqlglot can tell
    them (they depend on the text alone: kept for the text's next Describe or Execute)."""
    tables = TABLES | {f"information_schema.{k}": v for k, v in INFO_TABLES.items()}
    schema = {
        name.split(".")[-1]: {c.split()[0]: DECLARED[c.split()[1]][1] for c in columns.split(", ")}
        for name, columns in tables.items()
    }
    try:
        mapping = MappingSchema(schema, dialect=CatalogSql)
        typed = annotate_types(
            qualify(
                sqlglot.parse_one(text, read=CatalogSql).transform(_typed_call),
                schema=mapping,
                dialect=CatalogSql,
                validate_qualify_columns=False,
            ),
            schema=mapping,
        )
        return (
            tuple(_sql_type(e.type) for e in typed.selects) if isinstance(typed, exp.Query) else ()
        )
    except (
        sqlglot.errors.SqlglotError,
        KeyError,
        ValueError,
        TypeError,
        AttributeError,
        RecursionError,
    ):
        return ()


def fits(kind: SqlType, values: list[Any]) -> bool:
    """Are the (non-NULL) ``values`` SQLite gave of the Python type ``kind`` needs?"""
    if kind.element is not None:
        return all(isinstance(v, str) and v.startswith("[") for v in values)
    want = _PYTHON.get(kind, str)
    return all(isinstance(v, want) and (kind is not BOOL or v in (0, 1)) for v in values)


def from_sqlite(value: Any, kind: SqlType) -> Any:
    """A value SQLite returned, as the value of ``kind``."""
    if value is None:
        return None
    if kind.element is not None:
        return tuple(json.loads(value))
    return bool(value) if kind is BOOL else value


# -- arrays in SQLite --------------------------------------------------------------------------


def array_literal(text: str, element: SqlType | None) -> str:
    """PostgreSQL's array text (``{1,2}``, ``{"a b",NULL}``) as JSON text (22P02 if
    malformed); an oid is read as a bigint, an element of another type as its text."""
    kind = INT8 if element is OID_TYPE else (element if element in _PYTHON else TEXT)
    return json.dumps(list(array_from_text(text, kind)))


def array_contains(array: Any, value: Any) -> int | None:
    """``value = ANY(array)`` with SQL's NULLs."""
    if array is None or value is None:
        return None
    text = str(array)
    if text.startswith("["):
        items = json.loads(text)
    else:  # an int2vector or oidvector (pg_index.indkey): numbers between spaces
        items = [int(v) if v.lstrip("-").isdigit() else v for v in text.split()]
    if value in items:
        return 1
    return None if None in items else 0


class ArrayAgg:
    """``array_agg(x [ORDER BY k [DESC], …])``: its arguments are ``x`` then each key and a
    flag (1 descending); NULL keys sort last ascending, first descending, as PostgreSQL's."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def step(self, value: Any, *keys: Any) -> None:
        self.rows.append((value, *keys))

    def finalize(self) -> str | None:
        if not self.rows:
            return None
        rows = self.rows
        width = len(rows[0])
        for i in range(width - 2, 0, -2):  # stable sorts, the last key first
            rows = sorted(
                rows,
                key=lambda r: (r[i] is None, r[i] if r[i] is not None else 0),
                reverse=bool(rows[0][i + 1]),
            )
        return json.dumps([r[0] for r in rows])


def rewrite_array(node: exp.Expression) -> exp.Expression | None:
    """``node`` as SQLite runs it if it is an array construct (else None)."""
    if isinstance(node, exp.EQ) and isinstance(node.expression, exp.Any):
        inner = node.expression.this
        inner = inner.this if isinstance(inner, exp.Paren) else inner
        if isinstance(inner, exp.Array):
            return exp.In(this=node.this, expressions=inner.expressions)
        return exp.Anonymous(this="array_contains", expressions=[inner, node.this])
    if isinstance(node, exp.Cast) and node.to.is_type(_T.ARRAY):
        element = _sql_type(node.to.expressions[0]) if node.to.expressions else None
        if isinstance(node.this, exp.Literal) and node.this.is_string:
            return exp.Literal.string(array_literal(node.this.this, element))
        return node.this
    if isinstance(node, exp.Anonymous) and node.name.lower() == "array_to_string":
        collected = node.expressions[0] if node.expressions else None
        if isinstance(collected, exp.Array) and len(collected.expressions) == 1:
            query = collected.expressions[0]
            plain = not any(query.args.get(k) for k in ("group", "limit", "distinct"))
            if isinstance(query, exp.Select) and len(query.expressions) == 1 and plain:
                collected.replace(exp.Subquery(this=_aggregated(query)))
        return node
    if isinstance(node, exp.ArrayAgg):
        arg = node.this
        keys: list[exp.Expression] = []
        if isinstance(arg, exp.Order):
            for ordered in arg.expressions:
                keys += [ordered.this, exp.Literal.number(int(bool(ordered.args.get("desc"))))]
            arg = arg.this
        return exp.Anonymous(this="array_agg", expressions=[arg, *keys])
    return None


def array_of_rows(node: exp.Array) -> exp.Expression:
    """``ARRAY(SELECT x FROM …)`` as a JSON array (``[]`` for no rows), as :func:`_aggregated`
    makes it; NULL for a query it cannot run so."""
    query = node.expressions[0]
    plain = not any(query.args.get(k) for k in ("group", "limit", "distinct"))
    if len(node.expressions) != 1 or not isinstance(query, exp.Select) or not plain:
        return exp.Null()
    if len(query.expressions) != 1 or query.find(exp.Unnest, exp.Explode) is not None:
        return exp.Null()  # (psql's lists of options: the catalogs hold none)
    rows = exp.Subquery(this=_aggregated(query.copy()))
    return exp.Coalesce(this=rows, expressions=[exp.Literal.string("[]")])


def _aggregated(query: exp.Select) -> exp.Select:
    """``ARRAY(SELECT x FROM … ORDER BY k)`` as ``SELECT array_agg(x ORDER BY k) FROM …``
    (as :func:`rewrite_array` runs it: an array held as JSON)."""
    order = query.args.get("order")
    query.set("order", None)
    value = query.expressions[0].unalias()
    keys = exp.Order(this=value.copy(), expressions=order.expressions) if order else value.copy()
    query.set("expressions", [exp.ArrayAgg(this=keys)])
    return query


def rewrite_unnest(select: exp.Select) -> None:
    """A select list's ``unnest(a)`` and ``generate_subscripts(a, 1)`` as SQLite runs them:
    a join of ``json_each`` over the first array unnested, its value and position; another
    array unnested beside it is zipped with it by position, as PostgreSQL does."""
    first: list[exp.Expression] = []

    def each() -> str:
        return "_unnest"

    def value(array: exp.Expression) -> exp.Expression:
        if not first:
            first.append(array)
            call = exp.Anonymous(
                this="json_each",
                expressions=[exp.Anonymous(this="array_json", expressions=[array.copy()])],
            )
            table = exp.Table(this=call, alias=exp.TableAlias(this=exp.to_identifier(each())))
            select.append("joins", exp.Join(this=table, kind="CROSS"))
        if array.sql() == first[0].sql():
            return exp.column("value", each())
        path = exp.DPipe(
            this=exp.DPipe(this=exp.Literal.string("$["), expression=exp.column("key", each())),
            expression=exp.Literal.string("]"),
        )
        json = exp.Anonymous(this="array_json", expressions=[array.copy()])
        return exp.Anonymous(this="json_extract", expressions=[json, path])

    for item in select.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Explode):
            node.replace(value(node.this))
        elif isinstance(node, exp.Anonymous) and str(node.this).lower() == "generate_subscripts":
            value(node.expressions[0])
            position = exp.Add(this=exp.column("key", each()), expression=exp.Literal.number(1))
            node.replace(position)


def array_json(value: Any) -> str:
    """An array as SQLite holds it here (``{1,2}``, an int2vector's ``1 2``, JSON) as JSON."""
    if value is None:
        return "[]"
    text = str(value).strip()
    if text.startswith("["):
        return text
    parts = text.strip("{}").replace(",", " ").split()
    return json.dumps([int(p) if p.lstrip("-").isdigit() else p for p in parts])
