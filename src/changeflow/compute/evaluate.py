"""The reference evaluator: a plan's output at a time, from its inputs' collections, in plain
Python. It is the oracle that every fast path is tested against; it favours being obviously
right over being fast.

A collection version is a ``{row: count}`` dict without zeros (rows are tuples). ``evaluate``
computes one version; ``evaluate_history`` the output's updates at every time in ``[since,
upper)`` of the inputs' partial TVCs, each the difference from the time before.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from changeflow.collection import PTVC, CollectionVersion, Update, consolidate
from changeflow.collection import diff as version_diff
from changeflow.compute import plan as P
from changeflow.compute.array_shape import accumulated
from changeflow.compute.scalars import as_type, check_range, compare_values, nan_last, one_nan
from changeflow.compute.types import FLOAT8
from changeflow.compute.volatile import copies, volatile
from changeflow.errors import EvalError, PlanError

Row = tuple[Any, ...]


def evaluate(plan: P.Plan, inputs: Mapping[str, CollectionVersion], now: int) -> CollectionVersion:
    """The output of ``plan`` at time ``now``, from each input's version at ``now``."""
    out: dict[Row, int] = defaultdict(int)
    for row, count in _rows(plan, inputs, now):
        out[row] += count
    return {r: c for r, c in out.items() if c}


def evaluate_history(
    plan: P.Plan, inputs: Mapping[str, PTVC], since: int, upper: int
) -> list[Update]:
    """The output's updates at every time in ``[since, upper)``: the version at ``since``, then
    each time's difference from the time before."""
    missing = plan.collections() - inputs.keys()
    if missing:
        raise PlanError(f"no input named {', '.join(sorted(missing))}", sqlstate="42P01")
    updates: list[Update] = []
    previous: CollectionVersion = {}
    for t in range(since, upper):
        current = evaluate(plan, {n: inputs[n].read(t) for n in plan.collections()}, t)
        updates += version_diff(t, previous, current)
        previous = current
    return consolidate(updates)


def _rows(
    plan: P.Plan, inputs: Mapping[str, CollectionVersion], now: int
) -> Iterable[tuple[Row, int]]:
    match plan:
        case P.Get(name=name):
            if name not in inputs:
                raise PlanError(f"no input named {name}", sqlstate="42P01")
            return list(inputs[name].items())
        case P.Constant(rows=rows):
            return list(rows)
        case P.Map(input=child, exprs=exprs):
            rows = _rows(child, inputs, now)
            if any(volatile(e) for _, e in exprs):
                rows = [one for row, c in rows for one in copies(row, c)]
            return [(row + tuple(e.eval(row, now) for _, e in exprs), c) for row, c in rows]
        case P.Project(input=child, columns=columns):
            return [(tuple(row[i] for i in columns), c) for row, c in _rows(child, inputs, now)]
        case P.Filter(input=child, predicates=predicates):
            return [
                (row, c)
                for row, c in _rows(child, inputs, now)
                if all(p.eval(row, now) is True for p in predicates)
            ]
        case P.Join():
            return _join(plan, inputs, now)
        case P.Reduce():
            return _reduce(plan, _positive(evaluate(plan.input, inputs, now), "Reduce"))
        case P.Distinct(input=child):
            return [(row, 1) for row, c in evaluate(child, inputs, now).items() if c > 0]
        case P.Union(inputs_=children):
            return [pair for child in children for pair in _rows(child, inputs, now)]
        case P.Negate(input=child):
            return [(row, -c) for row, c in _rows(child, inputs, now)]
        case P.Threshold(input=child):
            return [(row, c) for row, c in evaluate(child, inputs, now).items() if c > 0]
        case P.TopK():
            return _top_k(plan, _positive(evaluate(plan.input, inputs, now), "TopK"))
        case P.TemporalFilter(input=child, lower=lower, upper=upper):
            return [
                (row, c) for row, c in _rows(child, inputs, now) if _live(row, lower, upper, now)
            ]
    from changeflow.compute.recursive import Recursive, evaluate_recursive
    from changeflow.compute.unnest import Unnest
    from changeflow.compute.window import Window, evaluate_window

    if isinstance(plan, Unnest):
        return [(out, c) for row, c in _rows(plan.input, inputs, now) for out in plan.rows(row)]
    if isinstance(plan, Recursive):
        return list(evaluate_recursive(plan, inputs, now).items())
    if isinstance(plan, Window):
        return evaluate_window(plan, _positive(evaluate(plan.input, inputs, now), "Window"))
    raise PlanError(f"the reference evaluator does not know {type(plan).__name__}")


def _positive(version: CollectionVersion, where: str) -> CollectionVersion:
    for row, count in version.items():
        if count < 0:
            raise EvalError(f"{where}: row {row!r} has a negative count {count}", sqlstate="XX000")
    return version


def _live(row: Row, lower: tuple, upper: tuple, now: int) -> bool:
    lows = [e.eval(row) for e in lower]
    highs = [e.eval(row) for e in upper]
    if any(v is None for v in (*lows, *highs)):
        return False
    return all(lo <= now for lo in lows) and all(now < hi for hi in highs)


def _key(row: Row, columns: Iterable[int]) -> Row | None:
    """The values at ``columns``; None if any is NULL (NULL joins nothing)."""
    values = tuple(row[i] for i in columns)
    return None if any(v is None for v in values) else values


def _matches(row: Row, join: P.Join) -> bool:
    for klass in join.equivalences:
        values = [row[i] for i in klass]
        if any(v is None for v in values):
            return False
        if not all(compare_values("=", values[0], v) for v in values[1:]):
            return False
    return join.residual is None or join.residual.eval(row) is True


def _join(join: P.Join, inputs: Mapping[str, CollectionVersion], now: int) -> list[tuple[Row, int]]:
    sides = [list(evaluate(child, inputs, now).items()) for child in join.inputs_]
    product: list[tuple[Row, int]] = [((), 1)]
    for side in sides:
        product = [(left + row, lc * rc) for left, lc in product for row, rc in side]
    matched = [(row, c) for row, c in product if _matches(row, join)]
    if join.kind == "inner":
        return matched
    left, right = sides
    width_l, width_r = len(join.inputs_[0].schema), len(join.inputs_[1].schema)
    out = list(matched)
    if join.kind in ("left", "full"):
        for row, c in left:
            if not any(_matches(row + other, join) for other, _ in right):
                out.append((row + (None,) * width_r, c))
    if join.kind in ("right", "full"):
        for row, c in right:
            if not any(_matches(other + row, join) for other, _ in left):
                out.append(((None,) * width_l + row, c))
    return out


def _reduce(reduce: P.Reduce, version: CollectionVersion) -> list[tuple[Row, int]]:
    groups: dict[Row, list[tuple[Row, int]]] = defaultdict(list)
    for row, count in version.items():
        groups[tuple(row[i] for i in reduce.group_by)].append((row, count))
    out = []
    for key, rows in groups.items():
        values = tuple(
            _aggregate(a, rows, col.type)
            for a, col in zip(reduce.aggregates, reduce.schema[len(key) :], strict=True)
        )
        out.append((key + values, 1))
    return out


def _aggregate(agg: P.Aggregate, rows: list[tuple[Row, int]], kind: Any) -> Any:
    if agg.arg is None:
        return sum(c for _, c in rows)
    values = [(agg.value(row), c) for row, c in rows]
    return aggregate_values(agg, [(v, c) for v, c in values if v is not None], kind)


def aggregate_values(agg: P.Aggregate, values: list[tuple[Any, int]], kind: Any) -> Any:
    """An aggregate over its argument's non-NULL values and their counts (what
    :meth:`~changeflow.compute.plan.Aggregate.value` keeps of each row)."""
    if agg.func == "array_agg" or (agg.order and agg.func in P.ORDERED):
        return _ordered(agg, values)
    if agg.distinct:
        values = [(v, 1) for v in _distinct([v for v, _ in values])]
    if agg.func == "count":
        return sum(c for _, c in values)
    if not values:
        return None
    match agg.func:
        case "sum":
            with localcontext() as ctx:
                ctx.traps[InvalidOperation] = False  # +infinity and -infinity: NaN
                total = sum(as_type(v, kind) * c for v, c in values)
            return check_range(total, kind)
        case "avg":
            n = sum(c for _, c in values)
            if kind == FLOAT8:
                return one_nan(sum(float(v) * c for v, c in values) / n)
            with localcontext() as ctx:
                ctx.prec = 40
                ctx.traps[InvalidOperation] = False
                return sum(Decimal(v) * c for v, c in values) / n
        case "min":
            return functools.reduce(
                lambda a, b: b if compare_values("<", b, a) else a, (v for v, _ in values)
            )
        case "max":
            return functools.reduce(
                lambda a, b: b if compare_values(">", b, a) else a, (v for v, _ in values)
            )
        case "bool_and":
            return all(v for v, _ in values)
        case "bool_or":
            return any(v for v, _ in values)
        case "string_agg":
            return agg.separator.join(v for v, c in sorted(values) for _ in range(c))
    raise PlanError(f"aggregate {agg.func}() does not exist")


def _ordered(agg: P.Aggregate, values: list[tuple[Any, int]]) -> Any:
    """string_agg or array_agg of ``(value, *sort keys)`` tuples, in their order."""
    if agg.distinct:
        values = [(v, 1) for v in dict.fromkeys(v for v, _ in values)]
    if not values:
        return None
    width = len(agg.order)
    order = tuple(P.Order(i, o.desc, o.nulls_last) for i, o in enumerate(agg.order))
    order = order or (P.Order(0),)  # without ORDER BY: the values ascending, NULLs last
    rows = [(*v[1:], v[0]) for v, c in values for _ in range(c)]
    try:
        rows = _sorted_natively(rows, order)
    except TypeError:  # values Python does not order as SQL does (arrays with NULLs)
        rows.sort(key=lambda r: sort_key(r, order))
    if agg.func == "array_agg":
        if agg.arg is not None and agg.arg.type.element is not None:
            return accumulated([r[width] for r in rows])
        return tuple(r[width] for r in rows)
    return agg.separator.join(r[width] for r in rows)


def _sorted_natively(rows: list[Row], order: tuple[P.Order, ...]) -> list[Row]:
    """``rows`` in :func:`sort_key`'s order, by Python's own comparisons: stable sorts from
    the last key to the first, after the whole row (NULLs first) that breaks ties; a NaN
    after every other number."""

    def tie(row: Row) -> tuple:
        return tuple((0, 0) if v is None else (1, nan_last(v)) for v in row)

    out = sorted(rows, key=tie)
    for o in reversed(order):
        null = 1 if o.nulls_at_end != o.desc else -1
        i = o.column
        out.sort(key=lambda r: (null, 0) if r[i] is None else (0, nan_last(r[i])), reverse=o.desc)
    return out


def _distinct(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if not any(compare_values("=", v, seen) for seen in out):
            out.append(v)
    return out


def sort_key(row: Row, order: tuple[P.Order, ...]) -> tuple:
    """A key that sorts rows by ``order`` (NULL placement included), then by the whole row."""
    parts: list[Any] = []
    for o in order:
        v = row[o.column]
        null_rank = (1 if o.nulls_at_end else -1) if v is None else 0
        parts.append((null_rank, _Desc(v) if o.desc and v is not None else _Asc(v)))
    parts.append(tuple(_Asc(v) for v in row))
    return tuple(parts)


@functools.total_ordering
class _Asc:
    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Asc) and _cmp(self.v, other.v) == 0

    def __lt__(self, other: _Asc) -> bool:
        return _cmp(self.v, other.v) < 0


@functools.total_ordering
class _Desc(_Asc):
    def __lt__(self, other: _Asc) -> bool:
        return _cmp(self.v, other.v) > 0


def _cmp(a: Any, b: Any) -> int:
    if a is None or b is None:
        return (a is not None) - (b is not None)  # NULLs before values (only in tie-breaks)
    if compare_values("<", a, b):
        return -1
    return 1 if compare_values(">", a, b) else 0


def _top_k(top: P.TopK, version: CollectionVersion) -> list[tuple[Row, int]]:
    groups: dict[Row, list[tuple[Row, int]]] = defaultdict(list)
    for row, count in version.items():
        groups[tuple(row[i] for i in top.group_by)].append((row, count))
    out = []
    for rows in groups.values():
        rows.sort(key=lambda rc: sort_key(rc[0], top.order_by))
        expanded = [row for row, count in rows for _ in range(count)]
        end = None if top.limit is None else top.offset + top.limit
        kept: dict[Row, int] = defaultdict(int)
        for row in expanded[top.offset : end]:
            kept[row] += 1
        out += list(kept.items())
    return out
