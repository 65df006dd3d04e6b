"""``ALTER TABLE … ADD COLUMN c serial`` (or an identity column): the column's sequence is
created first, each of the table's rows (each copy of a row) takes its next value, as
PostgreSQL's table rewrite gives them, and the sequence is owned by the column once the
column exists (dropped again if adding the column fails)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from changeflow.adapter.catalog import Item
from changeflow.adapter.sequence_options import SequenceOptions
from changeflow.adapter.sequences import _blocks, add_sequence, serial_column
from changeflow.errors import PlanError
from changeflow.storage.frames import to_frame
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment


def add_serial(env: Environment, table: Item, d: exp.ColumnDef) -> Item | None:
    """The sequence of the column ``d`` added to ``table`` if it is a serial or identity
    column (``d`` made an integer with its DEFAULT), created now; else None."""
    found = serial_column(d, table.name)
    if found is None:
        return None
    column, name, options = found
    if env.catalog.load().by_name(name) is not None:
        raise PlanError(f'relation "{name}" already exists', sqlstate="42P07")
    sql = f"CREATE SEQUENCE {name} OWNED BY {table.name}.{column}"
    add_sequence(env, name, sql, {"owned_by": column, **options})
    return env.catalog.load().by_name(name)


def discard(env: Environment, sequence: Item) -> None:
    """Drop the sequence of a column that was not added."""
    env.catalog.change(lambda s: (s.without([sequence.id]), None))


def numbered(
    env: Environment, sequence: Item, rows: pa.Table, schema: pa.Schema, table: str
) -> pa.Table | None:
    """The update frame that gives each of ``rows`` (the table's contents, with their
    counts, without the column ``schema`` appends) its own next value of ``sequence`` there;
    None if the table is empty."""
    if not rows.num_rows:
        return None
    counts = rows.column(DIFF)
    positions = pa.array([i for i, c in enumerate(counts.to_pylist()) for _ in range(c)])
    options = SequenceOptions.of(sequence.options)
    blocks = _blocks(env.catalog)
    values = [blocks.next(sequence.id, lambda: options, sequence.name) for _ in positions]
    field = schema.field(len(schema) - 1)
    data = [rows.column(n) for n in rows.column_names if n not in (TIME, DIFF)]
    names = [*schema.names, TIME, DIFF]
    n, m = rows.num_rows, len(positions)
    retract = [*data, pa.nulls(n, field.type), pa.array([0] * n, pa.int64()), pc.negate(counts)]
    add = [c.take(positions) for c in data]
    add += [pa.array(values, field.type), pa.array([0] * m, pa.int64())]
    add += [pa.array([1] * m, pa.int64())]
    frames = [pa.Table.from_arrays(retract, names), pa.Table.from_arrays(add, names)]
    return to_frame(pa.concat_tables(frames), schema, table)
