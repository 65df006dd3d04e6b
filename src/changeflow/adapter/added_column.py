"""The values ``ALTER TABLE … ADD COLUMN`` gives the rows the table has: its DEFAULT's, the
same for every row, or its generation expression's (``GENERATED ALWAYS AS (…) STORED``), each
row's own from its other columns, as PostgreSQL's table rewrite computes them. Each is an
update frame that retracts every row with NULL in the new column and adds it with its value.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.adapter.assign import assign
from changeflow.adapter.catalog import Item, split_name
from changeflow.adapter.column_defs import ColumnDef
from changeflow.adapter.resolver import generated_of, schema_of
from changeflow.adapter.rows import evaluate_once
from changeflow.adapter.sql.dml import default_plan
from changeflow.compute.types import Column, numeric_scale
from changeflow.compute.values import python_values
from changeflow.storage.frames import to_frame
from changeflow.updates import DIFF, TIME


def with_default(
    rows: pa.Table, schema: pa.Schema, value: Any, length: int | None, table: str
) -> pa.Table | None:
    """The update frame that gives ``rows`` (the table's contents, without the column
    ``schema`` appends) ``value`` in that column; None if there is nothing to change."""
    if value is None or not rows.num_rows:
        return None
    field = schema.field(len(schema) - 1)
    fitted = fit(value, field, length, table)
    return _rewritten(rows, schema, pa.array([fitted] * rows.num_rows, field.type), table)


def with_generated(
    rows: pa.Table, schema: pa.Schema, changed: Item, length: int | None
) -> pa.Table | None:
    """The update frame that gives each of ``rows`` its value of the generation expression
    of the column ``schema`` appends (the last of ``changed``, the table with it)."""
    from changeflow.adapter.sql.generated import generation

    if not rows.num_rows:
        return None
    columns = schema_of(changed)
    at, bare = len(columns) - 1, split_name(changed.name)[1]
    expression = generation(columns, list(generated_of(changed)), bare, at)
    data = [python_values(rows.column(n)) for n in rows.column_names if n not in (TIME, DIFF)]
    values = [((expression.eval((*row, None)),), 1) for row in zip(*data, strict=True)]
    field = schema.field(len(schema) - 1)
    fitted = [v for ((v,), _) in assign(values, pa.schema([field]), [length], changed.name)]
    return _rewritten(rows, schema, pa.array(fitted, field.type), changed.name)


def _rewritten(rows: pa.Table, schema: pa.Schema, values: pa.Array, table: str) -> pa.Table:
    data = [rows.column(n) for n in rows.column_names if n not in (TIME, DIFF)]
    n, counts = rows.num_rows, rows.column(DIFF)
    zero = pa.array([0] * n, pa.int64())
    names = [*schema.names, TIME, DIFF]
    nulls = pa.nulls(n, values.type)
    retract = pa.Table.from_arrays([*data, nulls, zero, pc.negate(counts)], names)
    add = pa.Table.from_arrays([*data, values, zero, counts], names)
    return to_frame(pa.concat_tables([retract, add]), schema, table)


def fit(value: Any, field: pa.Field, length: int | None, table: str) -> Any:
    """``value`` as the stored column ``field`` (of length limit ``length``) holds it."""
    ((fitted,), _) = assign([((value,), 1)], pa.schema([field]), [length], table)[0]
    return fitted


def default_value(column: ColumnDef) -> Any:
    """The value of ``column``'s DEFAULT for the rows the table has."""
    target = Column(column.name, column.kind, column.nullable, numeric_scale(column.arrow))
    rows = evaluate_once(default_plan(target, column.default), {}, 0)
    return next(iter(rows))[0]
