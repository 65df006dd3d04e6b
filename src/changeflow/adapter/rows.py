"""Rows with their counts: an update frame read as rows (values as queries compute them), a
plan evaluated once over such rows by the dataflow operators, and a query's counted rows
finished (ordered, limited) as it returns them."""

from __future__ import annotations

from itertools import repeat
from typing import Any

import pyarrow as pa

from changeflow.compute import plan as P
from changeflow.compute.evaluate import sort_key
from changeflow.compute.operators import Inputs, build
from changeflow.compute.values import python_values
from changeflow.errors import EvalError
from changeflow.storage.frames import consolidate
from changeflow.updates import DIFF, TIME

Counted = dict[tuple[Any, ...], int]
SUMMED_ROWS = 2_000  # more updates than this are consolidated on columns before rows


def evaluate_once(plan: P.Plan, inputs: dict[str, Counted], ts: int) -> Counted:
    """``plan``'s rows at ``ts`` from its inputs' contents there, computed by the dataflow
    operators in one step (hash joins and grouped state, where the reference evaluator, the
    oracle they are tested against, joins by the product of its inputs)."""
    sources = Inputs()
    root = build(plan, sources, at=ts)
    for name in sources.names():
        sources.feed(name, [(row, ts, count) for row, count in inputs[name].items()])
    out: Counted = {}
    for row, t, diff in root.step(ts + 1):
        if t <= ts:  # a temporal filter also emits the rows' future retractions
            out[row] = out.get(row, 0) + diff
    return {r: c for r, c in out.items() if c}


def counted(table: pa.Table, used: frozenset[int] | None = None) -> Counted:
    """An update frame's rows with their summed diffs (zeros left out); with ``used``, the
    data columns not in it read as NULL (as if set so: rows differing only there are one)."""
    names = [n for n in table.column_names if n not in (TIME, DIFF)]
    n = table.num_rows
    columns = [
        python_values(table.column(c)) if used is None or i in used else repeat(None, n)
        for i, c in enumerate(names)
    ]
    out: Counted = {}
    for row, diff in zip(zip(*columns, strict=True), table.column(DIFF).to_pylist(), strict=True):
        out[row] = out.get(row, 0) + diff
    return {r: c for r, c in out.items() if c}


def summed_rows(updates: pa.Table, ts: int, used: frozenset[int] | None = None) -> Counted:
    """An update frame's rows up to ``ts`` with their summed diffs: summed as rows, or past
    :data:`SUMMED_ROWS` updates consolidated on columns first; with ``used``, the data
    columns not in it NULL (:func:`counted`)."""
    if updates.num_rows > SUMMED_ROWS:  # else summing them as rows costs less
        return counted(consolidate(updates if used is None else only(updates, used), ts))
    return counted(updates, used)


def triples(table: pa.Table) -> list[tuple[tuple[Any, ...], int, int]]:
    """An update frame's ``(row, time, diff)`` triples, values as :func:`counted` gives them."""
    names = [n for n in table.column_names if n not in (TIME, DIFF)]
    rows = zip(*(python_values(table.column(n)) for n in names), strict=True)
    times, diffs = table.column(TIME).to_pylist(), table.column(DIFF).to_pylist()
    return list(zip(rows, times, diffs, strict=True))


def only(updates: pa.Table, used: frozenset[int]) -> pa.Table:
    """``updates`` (an update frame) with the data columns not in ``used`` all NULL."""
    data = [n for n in updates.column_names if n not in (TIME, DIFF)]
    for i, name in enumerate(data):
        if i not in used:
            at = updates.column_names.index(name)
            nulls = pa.nulls(updates.num_rows, updates.schema.field(name).type)
            updates = updates.set_column(at, pa.field(name, nulls.type), nulls)
    return updates


def finish(counted: dict[tuple[Any, ...], int], finishing: Any) -> list[tuple[Any, ...]]:
    """A query's rows in order: each row as often as its count, sorted, then OFFSET, LIMIT
    and the visible columns."""
    rows: list[tuple[Any, ...]] = []
    for row, count in counted.items():
        if count < 0:
            raise EvalError(
                f"the query's result holds a row a negative number of times ({count}): {row}",
                sqlstate="XX000",
            )
        rows += [row] * count
    rows.sort(key=lambda r: sort_key(r, finishing.order_by))
    end = None if finishing.limit is None else finishing.offset + finishing.limit
    rows = rows[finishing.offset : end]
    if finishing.width is not None:
        rows = [r[: finishing.width] for r in rows]
    return rows
