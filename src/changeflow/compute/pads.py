"""char(n)'s blank padding as a property of columns: a char(n) value is held without its
trailing blanks (which PostgreSQL's comparisons, GROUP BY, joins, ``||``, ``length()`` and
``::text`` ignore) and its column's type modifier carries n (``Column.pad``, from
:mod:`changeflow.compute.typmods`), so that the value is shown padded to n, as PostgreSQL
stores and sends it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute.types import Schema


def padded_rows(rows: list[tuple[Any, ...]], schema: Schema) -> list[tuple[Any, ...]]:
    """``rows`` as shown: the values of char(n) columns padded with blanks to n."""
    pads = [(i, c.pad) for i, c in enumerate(schema) if c.pad is not None]
    if not pads or not rows:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for i, n in pads:
            if isinstance(values[i], str):
                values[i] = values[i].ljust(n)
        out.append(tuple(values))
    return out


def held_rows(rows: list[tuple[Any, ...]], schema: Schema) -> list[tuple[Any, ...]]:
    """Shown ``rows`` as values are held: char(n) values without their trailing blanks (what
    :func:`padded_rows` added)."""
    pads = [i for i, c in enumerate(schema) if c.pad is not None]
    if not pads:
        return rows
    return [
        tuple(v.rstrip(" ") if i in pads and isinstance(v, str) else v for i, v in enumerate(r))
        for r in rows
    ]


def padded_table(table: pa.Table, pads: Iterable[tuple[str, int]]) -> pa.Table:
    """``table`` with its char(n) columns (each a name and its n) padded with blanks to n."""
    for name, n in pads:
        if name in table.column_names:
            at = table.column_names.index(name)
            padded = pc.utf8_rpad(table.column(at), width=n, padding=" ")
            table = table.set_column(at, table.schema.field(at), padded)
    return table
