"""Generated columns (``b int GENERATED ALWAYS AS (a * 2) STORED``), as PostgreSQL 15 has
them: each write computes them from the row's other columns as it stores it (INSERT, UPDATE,
INSERT … ON CONFLICT DO UPDATE, MERGE, COPY); a value given for one is refused (428C9) unless
it is DEFAULT; the expression reads only the row's own plain columns and is immutable."""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter.checks import checks_renamed, checks_without, column_renamed
from changeflow.adapter.relations import Relation
from changeflow.adapter.resolver import generated_of
from changeflow.adapter.sql.dialect import PostgresCalls
from changeflow.adapter.sql.scalar import Scalars
from changeflow.adapter.sql.scope import Field, Scope, ident
from changeflow.compute import expr as X
from changeflow.compute.types import Schema
from changeflow.errors import PlanError

CLAUSE = "column generation expressions"
# calls whose value is not a function of their arguments (PostgreSQL's non-immutable ones)
_NOT_IMMUTABLE = (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.Rand, exp.Uuid)
_NOT_IMMUTABLE_NAMES = {
    "now",
    "random",
    "gen_random_uuid",
    "nextval",
    "currval",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "mz_now",
    "setval",
    "uuid_generate_v4",
}


def generation(schema: Schema, generated: list[str | None], table: str, index: int) -> X.Expr:
    """The generation expression of column ``index`` over the row's columns (``schema``),
    as the column stores it; PostgreSQL's errors for what it may not read or call."""
    from changeflow.adapter.sql.dml import assign  # (which reads this module)

    node = sqlglot.parse_one(generated[index], read=PostgresCalls)  # type: ignore[arg-type]
    for found in node.walk():
        name = found.name.lower() if isinstance(found, exp.Func) else ""
        if isinstance(found, _NOT_IMMUTABLE) or (
            isinstance(found, exp.Anonymous | exp.Func) and name in _NOT_IMMUTABLE_NAMES
        ):
            raise PlanError("generation expression is not immutable", sqlstate="42P17")
        if isinstance(found, exp.Query):
            raise PlanError("cannot use subquery in column generation expression", sqlstate="0A000")
        if isinstance(found, exp.Column):
            at = [i for i, c in enumerate(schema) if c.name == found.name]
            if at and generated[at[0]] is not None:
                raise PlanError(
                    f'cannot use generated column "{found.name}" in column generation expression',
                    sqlstate="42P17",
                    detail="A generated column cannot reference another generated column.",
                )
    fields = [Field(table, c.name, i) for i, c in enumerate(schema)]
    value = Scalars(Scope(fields), schema, CLAUSE)(node)
    return assign(value, node, schema[index])


def with_generated(relation: Relation, values: list[X.Expr]) -> list[X.Expr]:
    """``values`` (a new row of ``relation``, one expression a column) with its generated
    columns computed from the others."""
    generated = _texts(relation)
    if not any(generated):
        return values
    schema, table = relation.plan.schema, relation.name.rpartition(".")[2]
    return [
        value if text is None else X.with_columns(generation(schema, generated, table, i), values)
        for i, (value, text) in enumerate(zip(values, generated, strict=True))
    ]


def refuse_value(relation: Relation, name: str, update: bool) -> None:
    """428C9 for a value given for generated column ``name`` (other than DEFAULT)."""
    names = [c.name for c in relation.plan.schema]
    if name not in names or _texts(relation)[names.index(name)] is None:
        return
    message = (
        f'column "{name}" can only be updated to DEFAULT'
        if update
        else f'cannot insert a non-DEFAULT value into column "{name}"'
    )
    raise PlanError(message, sqlstate="428C9", detail=f'Column "{name}" is a generated column.')


def generated_columns(columns: list, schema: Schema, table: str) -> dict[str, list[str | None]]:
    """CREATE TABLE's generated columns checked (``columns`` have ``name``, ``default`` and
    ``generated``): the catalog options that keep them (none without any)."""
    generated = [c.generated for c in columns]
    if not any(generated):
        return {}
    bare = table.rpartition(".")[2]
    for i, c in enumerate(columns):
        if c.generated is None:
            continue
        if c.default is not None:
            raise PlanError(
                f'both default and generation expression specified for column "{c.name}" of '
                f'table "{bare}"',
                sqlstate="42601",
            )
        generation(schema, generated, bare, i)
    return {"generated": generated}


def added_generated(item: Any, column: Any) -> dict[str, list[str | None]]:
    """The options of a table's generation expressions once ADD COLUMN adds ``column`` (a
    :class:`~changeflow.adapter.column_defs.ColumnDef`), checked (none if none has one)."""
    generated = [*generated_of(item), column.generated]
    if not any(generated):
        return {}
    if column.generated is not None and column.default is not None:
        raise PlanError(
            f'both default and generation expression specified for column "{column.name}" of '
            f'table "{item.name.rpartition(".")[2]}"',
            sqlstate="42601",
        )
    return {"generated": generated}


def _reads(text: str) -> set[str]:
    node = sqlglot.parse_one(text, read=PostgresCalls)
    return {ident(c.this) for c in node.find_all(exp.Column)}


def expressions_without(item: Any, column: str, index: int) -> dict[str, Any]:
    """The options of a table's CHECK constraints and generation expressions once its
    column ``column`` (at ``index``) is dropped: 2BP01 if a generated column reads it."""
    generated = list(generated_of(item))
    for name, text in zip((c[0] for c in item.columns), generated, strict=True):
        if text is not None and name != column and column in _reads(text):
            raise PlanError(
                f"cannot drop column {column} of table {item.name} because other objects depend "
                f"on it (column {name} is generated from it); drop that column first",
                sqlstate="2BP01",
            )
    kept = generated[:index] + generated[index + 1 :]
    return {"checks": checks_without(item, column), **({"generated": kept} if any(kept) else {})}


def expressions_renamed(item: Any, old: str, new: str) -> dict[str, Any]:
    """The options of a table's CHECK constraints and generation expressions once its column
    ``old`` is named ``new``."""
    from changeflow.adapter.deparse import stored_sql

    generated = []
    for text in generated_of(item):
        if text is not None:
            text = stored_sql(column_renamed(sqlglot.parse_one(text, read=PostgresCalls), old, new))
        generated.append(text)
    renamed = {"generated": generated} if any(generated) else {}
    return {"checks": checks_renamed(item, old, new), **renamed}


def copied_columns(relation: Relation, names: list[str] | None) -> list[str] | None:
    """The columns COPY FROM fills: those named (a generated one is 42P10), or, of a table
    with generated columns, the others."""
    generated = {c.name for c, g in zip(relation.plan.schema, _texts(relation), strict=True) if g}
    if not generated:
        return names
    if names is None:
        return [c.name for c in relation.plan.schema if c.name not in generated]
    for name in names:
        if name in generated:
            raise PlanError(
                f'column "{name}" is a generated column',
                sqlstate="42P10",
                detail="Generated columns cannot be used in COPY.",
            )
    return names


def _texts(relation: Relation) -> list[str | None]:
    """Per column of ``relation``, its generation expression's SQL (None: not generated)."""
    return list(relation.generated) or [None] * len(relation.plan.schema)
