"""Bulk rows into a table without SQL text: the columns of ``COPY … FROM STDIN`` (text values,
or values already decoded from the binary format) become one update frame of the table,
converted column by column as PostgreSQL's input functions read them, checked as INSERT
checks its rows (NOT NULL 23502, numeric overflow 22003, varchar(n) 22001), then appended
through the session's transaction.

A text column converts with one Arrow cast where Arrow reads exactly what PostgreSQL does
(integers, double precision); any value such a cast refuses, and every other type, is read by
:func:`~changeflow.compute.expr.from_text` once per distinct value, so errors are the same as
an INSERT's.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.adapter.assign import char_limit, fit_varchar, fitter
from changeflow.adapter.checks import failing_row
from changeflow.compute.scalars import from_text
from changeflow.compute.types import FLOAT8, TEXT, Column, Schema
from changeflow.compute.values import arrow_values, python_values
from changeflow.errors import ChangeflowError, EvalError, PlanError
from changeflow.storage.frames import to_frame
from changeflow.updates import DIFF, TIME


class NeedsDefaults(Exception):  # noqa: N818 — a signal: the caller takes the statement path
    """A column left out of the input has a DEFAULT to compute."""


def table_frame(
    schema: Schema,
    shape: pa.Schema,
    defaults: tuple[str | None, ...],
    lengths: list[int | None] | None,
    table: str,
    names: list[str] | None,
    data: list[pa.Array],
    text: bool,
) -> pa.Table:
    """The update frame (every row once, at time 0) of ``data``'s columns, named ``names``
    (default: every column of the table in order); ``text``: the values are text to read.
    ``schema``/``shape``: the table's columns and its shard's Arrow schema."""
    names = names if names is not None else [c.name for c in schema]
    by_name = {c.name: i for i, c in enumerate(schema)}
    for name in names:
        if name not in by_name:
            raise PlanError(
                f'column "{name}" of relation "{table}" does not exist', sqlstate="42703"
            )
    if len(set(names)) != len(names):
        raise PlanError("column specified more than once", sqlstate="42701")
    rows = len(data[0]) if data else 0
    given = dict(zip(names, data, strict=True))
    columns = []
    for i, column in enumerate(schema):
        if column.name not in given:
            if i < len(defaults) and defaults[i] is not None:
                raise NeedsDefaults(column.name)
            values = pa.nulls(rows, shape.field(i).type)
        else:
            values = _column(given[column.name], column, shape.field(i), text, table)
            length = lengths[i] if lengths else None
            longest = pc.max(pc.utf8_length(values)).as_py() if length is not None else None
            if longest is not None and longest > abs(length):  # type: ignore[arg-type]
                cut = [fit_varchar(v, length, column.name, table) for v in values.to_pylist()]
                values = pa.array(cut, values.type)
            if length is not None and char_limit(length)[1]:
                values = pc.utf8_rtrim(values, characters=" ")
        columns.append(values)
    for column, values in zip(schema, columns, strict=True):  # once every value was read
        if not column.nullable and values.null_count:
            row = pc.index(pc.is_null(values), True).as_py()
            shown = [python_values(c.slice(row, 1))[0] for c in columns]
            raise EvalError(
                f'null value in column "{column.name}" of relation "{table}" violates '
                "not-null constraint",
                sqlstate="23502",
                detail=failing_row(tuple(shown), schema),
                table=table,
                column=column.name,
                row=row,
            )
    columns += [pa.array([0] * rows, pa.int64()), pa.array([1] * rows, pa.int64())]
    frame = pa.Table.from_arrays(columns, names=[*shape.names, TIME, DIFF])
    return to_frame(frame, shape, table)


def _column(values: pa.Array, column: Column, field: pa.Field, text: bool, table: str) -> pa.Array:
    """``values`` as the column stores them (see the module docstring)."""
    kind = column.type
    if text and kind == TEXT:
        return values
    if text and (kind.integer or kind == FLOAT8):
        try:
            return pc.cast(values, field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # a value Arrow does not read (spaces, a bad one): read each as PostgreSQL
    fit = fitter(field, None, table)
    if not text and fit is None:  # values of the column's own type, or integers to narrow
        if values.type.equals(field.type):
            return values
        if pa.types.is_integer(values.type) and pa.types.is_integer(field.type):
            try:
                return pc.cast(values, field.type)  # checked: one out of range takes the rows
            except pa.ArrowInvalid:
                pass
    fit = fit or (lambda v: v)
    if text:
        encoded = values.dictionary_encode()
        read = []
        for i, v in enumerate(encoded.dictionary.to_pylist()):
            try:
                read.append(None if v is None else fit(from_text(v, kind)))
            except ChangeflowError as e:  # the first row holding it, for the error's context
                at = pc.index(encoded.indices, pa.scalar(i, encoded.indices.type)).as_py()
                e.fields.update(row=at, column=column.name, value=v)
                raise
        return pa.array(arrow_values(read, field.type), field.type).take(encoded.indices)
    fitted = [None if v is None else fit(v) for v in values.to_pylist()]
    return pa.array(arrow_values(fitted, field.type), field.type)
