"""ALTER TABLE of the columns of a table that the transaction running it has written: the
transaction's buffered rows, framed in the table's old stored columns, are carried to the new
ones as the change carried the table's rows. An added column gets its DEFAULT's value (or
NULL) in every buffered row, retractions too (they retract rows the change gave that value);
a dropped column is left out; a rename or a dropped NOT NULL changes no stored value. An added
NOT NULL column without a DEFAULT fails (23502) if the transaction has added rows, as the
table's own rows make it fail. Other changes of columns (a type, a serial or identity column,
a column with a key, a foreign key or a check of its own, several actions) stay refused there
(25001).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from changeflow.adapter.sql.dialect import parse_sql
from changeflow.errors import EvalError
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from changeflow.adapter.column_defs import ColumnDef
    from changeflow.adapter.environment import Environment
    from changeflow.adapter.session import Transaction

_OWN_CONSTRAINTS = (
    exp.PrimaryKeyColumnConstraint,
    exp.UniqueColumnConstraint,
    exp.Reference,
    exp.CheckColumnConstraint,
    exp.ComputedColumnConstraint,
)


def rewrites_rows(g: dict[str, Any]) -> bool:
    """Does ALTER TABLE's action ``g`` write the table's rows again (an added column with a
    DEFAULT or a serial one, a changed type)? A transaction that has read reads at a time
    before that write, so it refuses such a change (25001) rather than read the rows without
    it."""
    from changeflow.adapter.alter import is_constraint
    from changeflow.adapter.sequences import serial_column

    if g["action"] == "many":
        return any(rewrites_rows(a.args) for a in g["actions"])
    if g["action"] == "type":
        return True
    if g["action"] != "add" or is_constraint(g["column"]):
        return False
    node = _column_node(g["column"])
    if node is None or serial_column(node.copy(), "t") is not None:
        return node is not None
    default = node.find(exp.DefaultColumnConstraint)
    return default is not None and not isinstance(default.this, exp.Null)


def carried(g: dict[str, Any]) -> bool:
    """Can a transaction's buffered rows follow ALTER TABLE's action ``g``?"""
    from changeflow.adapter.alter import is_constraint
    from changeflow.adapter.sequences import serial_column

    if g["action"] in ("rename", "drop", "column"):
        return True  # (of "column", only DROP NOT NULL changes the layout)
    if g["action"] != "add" or is_constraint(g["column"]):
        return g["action"] == "add"
    node = _column_node(g["column"])
    if node is None or node.find(*_OWN_CONSTRAINTS):
        return False
    return serial_column(node.copy(), "t") is None


def carry(env: Environment, txn: Transaction, table_id: str, table: str, g: dict[str, Any]) -> None:
    """Frame ``txn``'s buffered rows of table ``table_id`` (named ``table``) in its stored
    columns after ALTER TABLE's action ``g``, which :func:`carried` allowed."""
    frames = txn.writes.get(table_id)
    if not frames:
        return
    layout = env.storage.state(table_id).schema
    column = _added(g)
    filled = None
    if column is not None and column.default is not None:
        from changeflow.adapter.added_column import default_value, fit

        field = layout.field(len(layout) - 1)
        filled = fit(default_value(column), field, column.length, table)
    carried_frames = [_framed(f, layout, filled) for f in frames]
    added = any(pc.any(pc.greater(f.column(DIFF), 0)).as_py() for f in carried_frames)
    if column is not None and not column.nullable and filled is None and added:
        raise EvalError(
            f'column "{column.name}" of relation "{table}" contains null values',
            sqlstate="23502",
        )
    txn.writes[table_id] = carried_frames
    txn.written.pop(table_id, None)  # counted again in the new columns


def _framed(frame: pa.Table, layout: pa.Schema, filled: Any) -> pa.Table:
    """``frame`` in the stored columns ``layout``: a column it lacks (the added one) holds
    ``filled`` in every row; one ``layout`` lacks (a dropped one) is left out."""
    n = frame.num_rows
    columns = []
    for f in layout:
        if f.name in frame.column_names:
            columns.append(frame.column(f.name).cast(f.type))
        else:
            columns.append(pa.array([filled] * n, f.type))
    fields = [*layout, frame.schema.field(TIME), frame.schema.field(DIFF)]
    data = [*columns, frame.column(TIME), frame.column(DIFF)]
    return pa.Table.from_arrays(data, schema=pa.schema(fields))


def _column_node(text: str) -> exp.ColumnDef | None:
    defs = parse_sql(f"CREATE TABLE x ({text})").this.expressions
    return defs[0] if len(defs) == 1 and isinstance(defs[0], exp.ColumnDef) else None


def _added(g: dict[str, Any]) -> ColumnDef | None:
    """The column ADD COLUMN ``g`` adds; None for another action."""
    from changeflow.adapter.alter import is_constraint
    from changeflow.adapter.column_defs import table_columns

    if g["action"] != "add" or is_constraint(g["column"]):
        return None
    node = _column_node(g["column"])
    return None if node is None else table_columns([node])[0]
