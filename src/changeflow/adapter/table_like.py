"""CREATE TABLE's definitions as the table is made from them: ``LIKE source`` copies the
source table's columns (names, declared types, NOT NULL; defaults with INCLUDING DEFAULTS),
as PostgreSQL does; the forms changeflow does not take (INHERITS, PARTITION OF, LIKE's other
INCLUDING options) are refused with 0A000 rather than read as a table without columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from changeflow.adapter.sql.dialect import PostgresCalls, sql_text
from changeflow.adapter.sql.scope import table_name
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment
    from changeflow.adapter.sql.statements import Statement

# INCLUDING options about storage only: nothing to copy here.
_PHYSICAL = {"STORAGE", "COMPRESSION", "STATISTICS"}
# A serial column's type as LIKE copies it (its sequence's default is not copied).
_SERIALS = {
    exp.DataType.Type.SERIAL: "int",
    exp.DataType.Type.BIGSERIAL: "bigint",
    exp.DataType.Type.SMALLSERIAL: "smallint",
}


def table_definitions(env: Environment, stmt: Statement) -> tuple[list[exp.Expression], str]:
    """The column and constraint definitions of the CREATE TABLE ``stmt``, each LIKE replaced
    by the columns it copies, and the statement's text as the catalog keeps it (with the
    copied columns written out)."""
    create = stmt.ast
    props = create.args.get("properties")
    for p in props.expressions if props is not None else []:
        if isinstance(p, exp.InheritsProperty):
            raise PlanError("table inheritance (INHERITS) is not supported", sqlstate="0A000")
        if isinstance(p, exp.PartitionedOfProperty):
            raise PlanError(
                "CREATE TABLE … PARTITION OF is not supported: partitions are not kept here; "
                "create a table of its own",
                sqlstate="0A000",
            )
    schema = create.this
    defs = schema.expressions if isinstance(schema, exp.Schema) else []
    if not any(isinstance(d, exp.LikeProperty) for d in defs):
        return defs, stmt.text
    out: list[exp.Expression] = []
    for d in defs:
        out.extend(_like(env, d) if isinstance(d, exp.LikeProperty) else [d])
    schema.set("expressions", out)
    return out, sql_text(create)


def _like(env: Environment, like: exp.LikeProperty) -> list[exp.Expression]:
    """The column definitions ``LIKE source [INCLUDING | EXCLUDING option …]`` copies."""
    defaults = False
    for option in like.expressions:
        how, what = str(option.this).upper(), option.text("value").upper()
        if what == "DEFAULTS":
            defaults = how == "INCLUDING"
        elif how == "INCLUDING" and what not in _PHYSICAL:
            raise PlanError(
                f"LIKE … INCLUDING {what} is not supported: only INCLUDING DEFAULTS is",
                sqlstate="0A000",
            )
    name = table_name(like.this)
    item = env.catalog.load().find(name)
    if item is None:
        raise PlanError(f'relation "{name}" does not exist', sqlstate="42P01")
    if item.kind != "table":
        raise PlanError(
            f'LIKE "{name}" is not supported: it is a {item.kind}, not a table', sqlstate="0A000"
        )
    source = sqlglot.parse_one(item.sql, read=PostgresCalls)
    declared = {_ident(d): d for d in source.find_all(exp.ColumnDef)}
    out: list[exp.Expression] = []
    for column, _, nullable in item.columns:
        d = declared[column]
        constraints: list[exp.Expression] = []
        if not nullable:
            constraints.append(exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
        for c in d.args.get("constraints") or []:
            if defaults and isinstance(c.args.get("kind"), exp.DefaultColumnConstraint):
                constraints.append(c.copy())
        kind = d.args["kind"]
        serial = _SERIALS.get(kind.this) if isinstance(kind, exp.DataType) else None
        kind = exp.DataType.build(serial) if serial else kind.copy()
        out.append(
            exp.ColumnDef(
                this=exp.to_identifier(column, quoted=True), kind=kind, constraints=constraints
            )
        )
    return out


def _ident(d: exp.ColumnDef) -> str:
    ident = d.this
    return ident.this if ident.quoted else ident.this.lower()
