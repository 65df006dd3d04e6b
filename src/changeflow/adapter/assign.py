"""Values as a table column stores them, by PostgreSQL's assignment rules: a numeric rounded
(half away from zero) to the column's scale, with an error if it has more digits before the
point than the column allows (22003); text longer than varchar(n) is an error (22001)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa

from changeflow.compute.scalars import unstorable_nan
from changeflow.compute.scale import stored_decimal
from changeflow.errors import EvalError

Rows = list[tuple[tuple[Any, ...], int]]


def assign(rows: Rows, schema: pa.Schema, lengths: list[int | None], table: str) -> Rows:
    """``rows`` with each value fitted to its column of ``schema`` (see the module docstring)."""
    fits = [
        fitter(f, n, table) for f, n in zip(schema, lengths or [None] * len(schema), strict=True)
    ]
    if all(f is None for f in fits):
        return rows
    return [
        (tuple(v if f is None or v is None else f(v) for v, f in zip(row, fits, strict=True)), d)
        for row, d in rows
    ]


def fitter(field: pa.Field, length: int | None, table: str) -> Any:
    """The function that fits a (non-NULL) value to ``field``; None if values fit as they are."""
    if pa.types.is_decimal(field.type):
        where = f'column "{field.name}" of "{table}"'

        def fit_numeric(value: Any) -> Decimal:
            if value != value:  # only a NaN is unequal to itself
                raise unstorable_nan(where)
            return stored_decimal(Decimal(value), field.type, where, column=field.name, exact=True)

        return fit_numeric
    if length is not None:

        def fit_text(value: Any) -> Any:
            return fit_varchar(value, length, field.name, table)

        return fit_text
    return None


def char_limit(length: int) -> tuple[int, bool]:
    """A column's stored length limit (``lengths`` of a table) as n and whether the column is
    char(n): its limit is kept as -n, and its values without their trailing blanks, which
    PostgreSQL's comparisons, GROUP BY, joins, ``||``, length() and ``::text`` ignore."""
    return abs(length), length < 0


def fit_varchar(value: Any, length: int, column: str, table: str) -> Any:
    """A value stored in a varchar(n) or char(n) column (``length`` as :func:`char_limit`
    reads it): past n characters, spaces alone are cut (as PostgreSQL cuts them), anything
    else is 22001; a char(n) value loses its trailing blanks."""
    if not isinstance(value, str):
        return value
    n, padded = char_limit(length)
    if len(value) > n and value[n:].strip(" "):
        kind = f"character({n})" if padded else f"character varying({n})"
        raise EvalError(
            f'value too long for type {kind} in column "{column}" of "{table}"',
            sqlstate="22001",
        )
    return value.rstrip(" ") if padded else value[:n]
