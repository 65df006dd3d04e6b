"""``json_to_record``, ``jsonb_to_record``, ``json_to_recordset`` and ``jsonb_to_recordset``
in FROM, with their column definition list (``AS x(a int, b text)``), as the subquery they
mean, the argument and each element checked as PostgreSQL checks them: each column the
object's field of its name read as the column's type (``->>`` then a cast, as PostgreSQL reads
a scalar with the type's input function; ``->`` for a json or jsonb column; a missing field is
NULL), of the one object or of each element of the array (json's read as jsonb: a nested
object's text is jsonb's). A reference to another FROM item's column makes it LATERAL. A json
array bound for an array column is refused (PostgreSQL makes an array of it)."""

from __future__ import annotations

from sqlglot import exp, parse_one

from changeflow.adapter.sql.scope import ident
from changeflow.errors import PlanError

RECORD_FUNCTIONS = ("json_to_record", "jsonb_to_record", "json_to_recordset", "jsonb_to_recordset")


def json_record(node: exp.Anonymous) -> None:
    """Rewrite the call ``node`` (one of :data:`RECORD_FUNCTIONS`) where it is a FROM item."""
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
