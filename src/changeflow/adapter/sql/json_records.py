"""``json_to_record``, ``jsonb_to_record``, ``json_to_recordset`` and ``jsonb_to_recordset``
in FROM, with their column definition list (``AS x(a int, b text)``), and the
``json[b]_populate_record[set](NULL::t, j)`` forms with a table's columns, as the subquery they
mean, the argument and each element checked as PostgreSQL checks them: each column the
object's field of its name read as the column's type (``->>`` then a cast, as PostgreSQL reads
a scalar with the type's input function; ``->`` for a json or jsonb column; a missing field is
NULL), of the one object or of each element of the array (json's read as jsonb: a nested
object's text is jsonb's). A reference to another FROM item's column makes it LATERAL. A json
array bound for an array column is refused (PostgreSQL makes an array of it)."""

from __future__ import annotations

from sqlglot import exp, parse_one

from changeflow.adapter.sql.scope import ident
from changeflow.compute.types import NUMERIC, Column, Schema
from changeflow.errors import PlanError

RECORD_FUNCTIONS = ("json_to_record", "jsonb_to_record", "json_to_recordset", "jsonb_to_recordset")
POPULATE_FUNCTIONS = tuple(f.replace("_to_", "_populate_") for f in RECORD_FUNCTIONS)


def json_record(node: exp.Anonymous) -> exp.Expression | None:
    """Rewrite the call ``node`` (one of :data:`RECORD_FUNCTIONS`) where it is a FROM item;
    the FROM item it became."""
    name, args = str(node.this).lower(), node.expressions
    table = node.parent
    if len(args) != 1 or not (isinstance(table, exp.Table | exp.Lateral) and table.this is node):
        return  # elsewhere (or another number of arguments): the planner says what is wrong
    alias = table.args.get("alias")
    defined = [
        c for c in (alias.columns if alias is not None else []) if isinstance(c, exp.ColumnDef)
    ]
    if alias is None or not defined or len(defined) != len(alias.columns):
        raise PlanError(
            'a column definition list is required for functions returning "record"',
            sqlstate="42601",
        )
    kind = "jsonb" if name.startswith("jsonb") else "json"
    value: exp.Expression = exp.Cast(this=args[0].copy(), to=exp.DataType.build(kind))
    value = _checked("json_record_of", value, name)
    if name.endswith("set"):  # each element of the array (json's as jsonb: its elements)
        value = exp.Cast(this=value, to=exp.DataType.build("jsonb"))
        element = _checked("json_record_element", exp.column("value", table="_record"), name)
    else:
        element = value
    fields = [_field(element, c) for c in defined]
    select = exp.Select(expressions=fields)
    if name.endswith("set"):
        call = exp.Anonymous(this="jsonb_array_elements", expressions=[value])
        select = select.from_(
            exp.Table(this=call, alias=exp.TableAlias(this=exp.to_identifier("_record")))
        )
    label = alias.this.copy() if alias.this is not None else exp.to_identifier(name)
    names = exp.TableAlias(this=label, columns=[c.this.copy() for c in defined])
    found: exp.Expression = exp.Subquery(this=select, alias=names)
    if args[0].find(exp.Column) is not None or isinstance(table, exp.Lateral):
        found = exp.Lateral(this=exp.Subquery(this=select), alias=names)
    table.replace(found)
    return found


def is_populate(node: exp.Expression) -> bool:
    """Is ``node`` a FROM item calling one of :data:`POPULATE_FUNCTIONS`?"""
    call = node.this if isinstance(node, exp.Table | exp.Lateral) else None
    return isinstance(call, exp.Anonymous) and str(call.this).lower() in POPULATE_FUNCTIONS


def base_type(node: exp.Expression) -> str:
    """The relation whose row type the populate call's first argument names (``NULL::t``)."""
    base = node.this.expressions[0] if node.this.expressions else None
    if not (isinstance(base, exp.Cast) and isinstance(base.this, exp.Null)):
        raise PlanError(
            f"{node.this.name}() with a base row other than NULL::type is not supported",
            sqlstate="0A000",
            hint="Give NULL cast to the table's row type; missing fields are NULL.",
        )
    kind = base.to.args.get("kind")
    if base.to.this != exp.DataType.Type.USERDEFINED or kind is None:
        raise PlanError(f"first argument of {node.this.name} must be a row type", sqlstate="42804")
    return ident(kind) if isinstance(kind, exp.Identifier) else str(kind.name).lower()


def populate(node: exp.Expression, columns: Schema) -> exp.Expression:
    """``json[b]_populate_record[set](NULL::t, j)`` (the FROM item ``node``) as the
    ``json[b]_to_record[set](j)`` of ``t``'s ``columns``; the FROM item it became."""
    call = node.this
    name = str(call.this).lower().replace("populate_", "to_")
    if len(call.expressions) != 2:
        raise PlanError(f"function {call.this}() does not exist", sqlstate="42883")
    alias = node.args.get("alias")
    label = alias.this.copy() if alias is not None and alias.this is not None else None
    defs = [
        exp.ColumnDef(
            this=exp.to_identifier(c.name, quoted=True),
            kind=exp.DataType.build(_declared(c), dialect="postgres"),
        )
        for c in columns
    ]
    made = exp.Anonymous(this=name, expressions=[call.expressions[1].copy()])
    item = (exp.Lateral if isinstance(node, exp.Lateral) else exp.Table)(
        this=made,
        alias=exp.TableAlias(this=label or exp.to_identifier(str(call.this)), columns=defs),
    )
    node.replace(item)
    return json_record(made) or item


def _declared(column: Column) -> str:
    """A column's type as its declaration names it."""
    n = column.typmod - 4
    if column.text_type in ("varchar", "bpchar") and n >= 0:
        return f"{'character varying' if column.text_type == 'varchar' else 'character'}({n})"
    if column.type is NUMERIC and n >= 0:
        return f"numeric({n >> 16},{n & 0xFFFF})"
    return column.type.name


def _checked(check: str, value: exp.Expression, name: str) -> exp.Expression:
    return exp.Anonymous(this=check, expressions=[value, exp.Literal.string(name)])


def _field(record: exp.Expression, column: exp.ColumnDef) -> exp.Expression:
    """The column ``column`` of the object ``record``: its field of the column's name."""
    kind = column.args["kind"]
    if kind.this == exp.DataType.Type.ARRAY or kind.args.get("nested"):
        raise PlanError(
            f'json_to_record of an array column ("{ident(column.this)}") is not supported',
            sqlstate="0A000",
        )
    from changeflow.adapter.sql.dialect import PostgresCalls  # (which reads this module)

    json = kind.this in (exp.DataType.Type.JSON, exp.DataType.Type.JSONB)
    key = exp.Literal.string(ident(column.this)).sql()
    read = parse_one(f"_record_of {'->' if json else '->>'} {key}", read=PostgresCalls)
    read.find(exp.Column).replace(record.copy())  # type: ignore[union-attr]
    return exp.Alias(this=exp.Cast(this=read, to=kind.copy()), alias=column.this.copy())
