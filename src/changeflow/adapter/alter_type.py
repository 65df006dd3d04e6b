"""ALTER TABLE … ALTER COLUMN … [SET DATA] TYPE … [USING …]: a column's values rewritten.

As in PostgreSQL, each row's value is converted by the assignment cast to the new type (an
error 42804 where there is none, unless ``USING`` gives the new value from the row), and the
table is rewritten. Stored batches keep their old values under the column's old stored name,
so the new values go under a fresh one (:mod:`changeflow.adapter.alter`): one write retracts
each row as it reads in the new layout (the new column NULL) and adds it with its new value.
Everything is computed before anything changes: a value that does not convert (22P02), a NULL
in a NOT NULL column (23502) or a key made duplicate (23505) changes nothing. The table's
indexes are built again from its new rows, as PostgreSQL rebuilds them; a table that views,
sinks or cluster-tier indexes read cannot change a column's type (0A000).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa
from sqlglot import exp

from changeflow.adapter.alter import (
    TAG,
    _contents,
    _edit_sql,
    _per_column,
    change_rebuilding,
    layout,
    readers_of,
)
from changeflow.adapter.assign import assign
from changeflow.adapter.catalog import CatalogState, Item
from changeflow.adapter.column_defs import table_columns
from changeflow.adapter.constraints import Unique, check_build
from changeflow.adapter.ddl import quote_ident, quote_name
from changeflow.adapter.domains import values_pass
from changeflow.adapter.resolver import CatalogResolver
from changeflow.adapter.result import Result
from changeflow.adapter.rows import counted, evaluate_once
from changeflow.adapter.sql.dialect import parse_sql
from changeflow.adapter.sql.dml import assign as assign_cast
from changeflow.adapter.sql.query import plan_query
from changeflow.adapter.sql.rows import col_of
from changeflow.compute import plan as P
from changeflow.compute.types import Column, numeric_scale
from changeflow.errors import PlanError
from changeflow.storage.frames import to_frame
from changeflow.storage.state import encode_schema


def alter_type(env: Any, state: CatalogState, item: Item, g: dict[str, Any]) -> Result:
    """Change the type of column ``g["column"]`` of table ``item`` to ``g["type"]``."""
    names = [c[0] for c in item.columns]
    name = g["column"]
    if name not in names:
        raise PlanError(
            f'column "{name}" of relation "{item.name}" does not exist', sqlstate="42703"
        )
    indexes, readers = readers_of(state, item)  # the indexes rebuilt with the new values
    if readers:
        raise PlanError(
            f"cannot alter type of a column used by a view or rule: {readers[0].kind} "
            f'"{readers[0].name}" reads table "{item.name}"; drop it first and create it again '
            "after",
            sqlstate="0A000",
        )
    i = names.index(name)
    node = parse_sql(f"CREATE TABLE x ({quote_ident(name)} {g['type']})").this.expressions[0]
    (column,) = table_columns([node])
    nullable = bool(item.columns[i][2])
    target = Column(name, column.kind, nullable, numeric_scale(column.arrow))
    ts, rows = _contents(env, item)
    using = g.get("using")
    if using is not None and isinstance(parse_sql(f"SELECT {using}").selects[0], exp.Null):
        using = f"CAST(NULL AS {g['type']})"  # NULL has the column's type, as a literal would
    changed_rows = _converted(state, item, i, using, target, counted(rows), ts)
    old = layout(env, item)
    used = set(old.names) | set(item.options.get("retired") or [])
    stored, n = name, 1
    while stored in used:  # older batches hold the old values under the old stored name
        stored, n = f"{name}_{n}", n + 1
    new = old.set(i, pa.field(stored, column.arrow, True))
    o = item.options
    lengths = list(_per_column(o, "lengths", item))
    lengths[i] = column.length
    scales = list(_per_column(o, "scales", item))
    scales[i] = numeric_scale(column.arrow)
    triples = []
    for row, count in changed_rows:
        cleared = (*row[:i], None, *row[i + 1 :])
        triples += [(cleared, 0, -count), (row, 0, count)]
    named = pa.schema([f.with_name(c) for f, c in zip(new, names, strict=True)])  # for errors
    fitted = assign([(r, c) for r, _, c in triples], named, lengths, item.name)
    if not nullable and any(row[i] is None for row, c in fitted if c > 0):
        raise PlanError(
            f'column "{name}" of relation "{item.name}" contains null values', sqlstate="23502"
        )
    _check_unique(item, i, [(r, c) for r, c in fitted if c > 0])
    values_pass(state, column.type_name, (r[i] for r, c in fitted if c > 0))  # of a domain
    rewrite = to_frame([(r, 0, c) for r, c in fitted], new, item.name) if fitted else None

    def retyped(defs: list[exp.Expression]) -> list[exp.Expression]:
        for d in defs:
            if isinstance(d, exp.ColumnDef) and d.name == name:
                d.set("kind", node.args["kind"])
        return defs

    options = {
        **o,
        "lengths": lengths,
        "scales": scales,
        "layout": encode_schema(new),
        "retired": [*(o.get("retired") or []), old.names[i]],
    }
    columns = list(item.columns)
    columns[i] = (name, column.type_name, nullable)
    changed = replace(
        item, columns=tuple(columns), options=options, sql=_edit_sql(item.sql, retyped)
    )
    change_rebuilding(env, item, changed, indexes, old, new, ts, rewrite)
    return Result(TAG)


def _converted(
    state: CatalogState,
    item: Item,
    i: int,
    using: str | None,
    target: Column,
    contents: dict[tuple[Any, ...], int],
    ts: int,
) -> list[tuple[tuple[Any, ...], int]]:
    """The table's rows with column ``i`` converted (by ``using``, else the column itself,
    then the assignment cast to ``target``), with their counts."""
    value = using if using is not None else quote_ident(target.name)
    query = plan_query(
        parse_sql(f"SELECT *, ({value}) FROM {quote_name(item.name)}"), CatalogResolver(state)
    )
    width = len(item.columns)
    e = col_of(query.plan, width)
    try:
        cast = assign_cast(e, None, target)
    except PlanError as err:
        what = "result of USING clause for column" if using is not None else "column"
        raise PlanError(
            f'{what} "{target.name}" cannot be cast automatically to type {target.type}',
            sqlstate="42804",
            hint=f'You might need to specify "USING {target.name}::{target.type}".',
        ) from err
    plan = P.Map(query.plan, ((target.name, cast),))
    out = evaluate_once(plan, {item.id: contents}, ts)
    return [((*row[:i], row[-1], *row[i + 1 : width]), c) for row, c in out.items()]


def _check_unique(item: Item, i: int, rows: list[tuple[tuple[Any, ...], int]]) -> None:
    """23505 if the new values make a PRIMARY KEY or UNIQUE constraint on the column fail."""
    names = [c[0] for c in item.columns]
    for u in (Unique.from_json(u) for u in item.options.get("unique") or []):
        if i in u.columns:
            check_build(u, rows, item.name, names)
