"""Frame functions of a partition without visiting every frame's rows: prefix sums for exact
sums, counts and averages over any frame, running values for frames that start at the
partition's start (min, max, bool_and, bool_or, and float sums in the order the reference adds
them), and first/last/nth value by position. A partition of n rows costs O(n) instead of
O(n × frame); :func:`frame_values` returns None where no shortcut applies (the caller then
visits each frame)."""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

from changeflow.compute.scalars import as_type as _as
from changeflow.compute.scalars import check_range, compare_values
from changeflow.compute.types import FLOAT8, NUMERIC, SqlType
from changeflow.errors import EvalError

Row = tuple[Any, ...]
Span = tuple[int, int]  # first and last position of a frame; empty when first > last


def frame_values(f: Any, rows: list[Row], spans: list[Span], kind: SqlType) -> list[Any] | None:
    """Each row's value of the frame function ``f`` over its frame (EXCLUDE NO OTHERS)."""
    func = f.func
    if func == "count" and not f.args:
        return [max(hi - lo + 1, 0) for lo, hi in spans]
    values = [f.args[0].eval(r) for r in rows]
    if func in ("first_value", "last_value"):
        at = 0 if func == "first_value" else 1
        return [values[span[at]] if span[0] <= span[1] else None for span in spans]
    if func == "nth_value":
        return [_nth(f, rows, values, span, i) for i, span in enumerate(spans)]
    exact = f.args[0].type.integer or f.args[0].type is NUMERIC
    if func in ("count", "sum") or func == "avg" and exact:
        if func != "count" and not exact:
            return _running(func, values, spans, kind)
        return _by_prefix(func, values, spans, kind)
    return _running(func, values, spans, kind)


def _nth(f: Any, rows: list[Row], values: list[Any], span: Span, i: int) -> Any:
    """Row ``i``'s nth_value: ``n`` is of the row itself, the value the frame's nth."""
    lo, hi = span
    k = nth_of(f, rows[i])
    return None if k is None or lo + k - 1 > hi else values[lo + k - 1]


def nth_of(f: Any, row: Row) -> int | None:
    """nth_value's ``n`` for ``row`` (22016 unless positive)."""
    k = f.args[1].eval(row)
    if k is not None and k <= 0:
        raise EvalError("argument of nth_value must be greater than zero", sqlstate="22016")
    return k


def _by_prefix(func: str, values: list[Any], spans: list[Span], kind: SqlType) -> list[Any]:
    """count, and exact sum and avg, from prefix sums (exact numbers subtract exactly; NaN and
    the infinities are counted apart, since they do not subtract)."""
    totals: list[Any] = [0]
    counts = [0]
    special = [(0, 0, 0)]  # running counts of NaN, Infinity and -Infinity
    with localcontext() as ctx:
        ctx.prec = 80
        for v in values:
            present = v is not None
            counts.append(counts[-1] + present)
            finite = not present or not isinstance(v, Decimal) or v.is_finite()
            nan, pos, neg = special[-1]
            if not finite and v.is_nan():
                nan += 1
            elif not finite:
                pos, neg = pos + (not v.is_signed()), neg + v.is_signed()
            special.append((nan, pos, neg))
            add = present and finite
            totals.append(totals[-1] + (_as(v, kind) if add and func == "sum" else 0))
            if add and func == "avg":
                totals[-1] += Decimal(v)
        out: list[Any] = []
        for lo, hi in spans:
            n = counts[hi + 1] - counts[lo] if lo <= hi else 0
            if func == "count":
                out.append(n)
            elif n == 0:
                out.append(None)
            elif (odd := _non_finite(special[hi + 1], special[lo])) is not None:
                out.append(odd)
            elif func == "sum":
                out.append(check_range(totals[hi + 1] - totals[lo], kind))
            else:
                from changeflow.compute.window import _average

                out.append(_average(Decimal(totals[hi + 1] - totals[lo]), n))
    return out


def _non_finite(upto: tuple[int, int, int], before: tuple[int, int, int]) -> Decimal | None:
    """A frame's sum or average when a NaN or an infinity is in it (PostgreSQL's numeric
    rules: NaN wins, Infinity plus -Infinity is NaN), None when all its values are finite."""
    nan, pos, neg = (a - b for a, b in zip(upto, before, strict=True))
    if nan or pos and neg:
        return Decimal("NaN")
    if pos or neg:
        return Decimal("Infinity") if pos else Decimal("-Infinity")
    return None


def _running(func: str, values: list[Any], spans: list[Span], kind: SqlType) -> list[Any] | None:
    """Aggregates of frames that all start at the partition's start, from running values."""
    if any(lo != 0 for lo, hi in spans if lo <= hi):
        return None
    running: list[Any] = []
    acc: Any = None
    n = 0
    for v in values:
        if v is not None:
            n += 1
            acc = (
                _step(func, 0 if func in ("sum", "avg") else v, v)
                if acc is None
                else _step(func, acc, v)
            )
        running.append((acc, n))
    out = []
    for lo, hi in spans:
        if lo > hi or running[hi][0] is None:
            out.append(None)
            continue
        acc, n = running[hi]
        if func == "avg":
            out.append(acc / n)
        elif func == "sum":
            out.append(check_range(acc, kind))
        else:
            out.append(acc)
    return out


def _step(func: str, acc: Any, v: Any) -> Any:
    if func == "min":
        return v if compare_values("<", v, acc) else acc
    if func == "max":
        return v if compare_values(">", v, acc) else acc
    if func == "bool_and":
        return acc and v
    if func == "bool_or":
        return acc or v
    return acc + float(v) if func == "avg" else acc + _as(v, FLOAT8)  # float sum and avg
