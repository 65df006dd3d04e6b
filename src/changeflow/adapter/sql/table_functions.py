"""Table functions in FROM: ``generate_series(start, stop[, step])`` and ``unnest(array,
…)``, optionally WITH ORDINALITY, over constant arguments, as a constant collection (so a view
that joins one is maintained like any other). Arguments that name columns of another FROM item
(an implicit LATERAL) are refused (0A000)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlglot import exp

from changeflow.adapter.sql.rows import Output
from changeflow.adapter.sql.scalar import Scalars
from changeflow.adapter.sql.scope import Scope, unsupported
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import INT4, INT8, NULLTYPE, NUMERIC, Column, SqlType
from changeflow.errors import PlanError

MAX_ROWS = 1_000_000  # a constant collection lives in the plan: bigger series are refused


def table_function(node: exp.Expression, alias: exp.TableAlias | None) -> Output | None:
    """The rows of a table function in FROM, or None if ``node`` is not one."""
    ordinality = bool(node.args.get("ordinality")) or bool(node.args.get("offset"))
    if isinstance(node, exp.Table) and isinstance(node.this, exp.ExplodingGenerateSeries):
        fn = node.this
        names, kinds, rows = _series(fn.args["start"], fn.args["end"], fn.args.get("step"))
    elif isinstance(node, exp.Unnest):
        names, kinds, rows = _unnest(node.expressions)
    else:
        return None
    if alias is not None and alias.this is not None and len(names) == 1:
        names = [str(alias.this.name).lower()]  # a one-column function's column is its alias
    if ordinality:
        offset = node.args.get("offset")
        names.append(
            str(offset.name).lower() if isinstance(offset, exp.Identifier) else "ordinality"
        )
        kinds.append(INT8)
        rows = [(*r, i + 1) for i, r in enumerate(rows)]
    schema = tuple(Column(n, k, True) for n, k in zip(names, kinds, strict=True))
    counted: dict[tuple[Any, ...], int] = {}
    for r in rows:
        counted[r] = counted.get(r, 0) + 1
    return Output(P.Constant(tuple(counted.items()), schema), names)


def _constant(node: exp.Expression, what: str) -> X.Expr:
    if node.find(exp.Column) is not None:
        raise unsupported(f"{what} with arguments that name columns (LATERAL)", node)
    return Scalars(Scope(), (), what)(node)


def _series(
    start: exp.Expression, stop: exp.Expression, step: exp.Expression | None
) -> tuple[list[str], list[SqlType], list[tuple[Any, ...]]]:
    args = [_constant(n, "generate_series") for n in (start, stop, step) if n is not None]
    kinds = [a.type for a in args if a.type is not NULLTYPE]
    if not all(k.numeric and k.rank <= NUMERIC.rank for k in kinds):
        shown = ", ".join(str(a.type) for a in args)
        raise PlanError(f"function generate_series({shown}) does not exist", sqlstate="42883")
    kind = max(kinds, key=lambda k: k.rank) if kinds else INT4
    values = [a.eval(()) for a in args]
    if any(v is None for v in values):
        return ["generate_series"], [kind], []
    first, last = values[0], values[1]
    by = values[2] if len(values) > 2 else 1
    if by == 0:
        raise PlanError("step size cannot equal zero", sqlstate="22023")
    count = 0 if (last - first) * by < 0 else int((last - first) // by) + 1
    if count > MAX_ROWS:
        raise PlanError(
            f"generate_series of {count} rows: at most {MAX_ROWS} are supported here",
            sqlstate="0A000",
        )
    convert = Decimal if kind is NUMERIC else int
    rows = [(convert(first) + i * convert(by),) for i in range(count)]
    return ["generate_series"], [kind], rows


def _unnest(
    arrays: list[exp.Expression],
) -> tuple[list[str], list[SqlType], list[tuple[Any, ...]]]:
    columns: list[tuple[Any, ...]] = []
    kinds: list[SqlType] = []
    for array in arrays:
        e = _constant(array, "unnest")
        if e.type.element is None:
            raise PlanError(f"function unnest({e.type}) does not exist", sqlstate="42883")
        columns.append(e.eval(()) or ())
        kinds.append(e.type.element)
    depth = max((len(c) for c in columns), default=0)
    rows = [tuple(c[i] if i < len(c) else None for c in columns) for i in range(depth)]
    return ["unnest"] * len(columns), kinds, rows
