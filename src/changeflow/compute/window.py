"""Window functions: the :class:`Window` plan node and its meaning.

``Window(input, partition_by, order_by, functions)`` keeps every input row and adds one column
per :class:`WindowFunc`, computed over the row's partition (the rows equal on ``partition_by``)
in ``order_by`` order, as PostgreSQL defines them: ranking (row_number, rank, dense_rank,
percent_rank, cume_dist, ntile), offsets (lag, lead), values of the frame (first_value,
last_value, nth_value) and aggregates over the frame (count, sum, min, max, avg, bool_and,
bool_or). Frames are ROWS, RANGE or GROUPS between bounds, with EXCLUDE. Rows that tie on
``order_by`` are put in order by the whole row, so row_number and the ROWS frames are
deterministic. A partition's output depends on that partition's rows alone:
:func:`partition_output` is both the reference's meaning and what the incremental operator
recomputes for each partition a change touches.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

from changeflow.compute import plan as P
from changeflow.compute.evaluate import Row, aggregate_values, sort_key
from changeflow.compute.expr import Expr
from changeflow.compute.intervals import Interval, add_to_stamp, stamp_of
from changeflow.compute.scalars import div_scale
from changeflow.compute.scale import common_scale
from changeflow.compute.types import (
    DATE,
    FLOAT8,
    INT4,
    INT8,
    NULLTYPE,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    Column,
    Schema,
    SqlType,
    array_of,
)
from changeflow.compute.window_frames import frame_values, nth_of
from changeflow.errors import EvalError, PlanError

RANKING = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile")
OFFSETS = ("lag", "lead")
VALUES = ("first_value", "last_value", "nth_value")
AGGREGATES = ("count", "sum", "min", "max", "avg", "bool_and", "bool_or")
COLLECTED = ("array_agg", "string_agg")  # in the frame's order, NULLs kept by array_agg
FUNCTIONS = RANKING + OFFSETS + VALUES + AGGREGATES + COLLECTED
_ARITY = {"ntile": (1, 1), "lag": (1, 3), "lead": (1, 3), "first_value": (1, 1)}
_ARITY |= {"last_value": (1, 1), "nth_value": (2, 2), "array_agg": (1, 1), "string_agg": (2, 2)}


@dataclass(frozen=True)
class Bound:
    """A frame bound: ``unbounded`` (preceding for a start, following for an end), the
    ``current`` row, or ``offset`` rows, groups or values ``preceding`` or following."""

    kind: str  # "unbounded" | "current" | "offset"
    offset: Any = 0
    preceding: bool = True

    def __str__(self) -> str:
        if self.kind == "current":
            return "CURRENT ROW"
        side = "PRECEDING" if self.preceding else "FOLLOWING"
        return f"{'UNBOUNDED' if self.kind == 'unbounded' else self.offset} {side}"


@dataclass(frozen=True)
class Frame:
    """``mode BETWEEN start AND end EXCLUDE exclude``; the default is PostgreSQL's: RANGE
    from the partition's start to the current row's last peer."""

    mode: str = "range"  # "rows" | "range" | "groups"
    start: Bound = Bound("unbounded")
    end: Bound = Bound("current")
    exclude: str = "no others"  # | "current row" | "group" | "ties"

    def __str__(self) -> str:
        shown = f"{self.mode.upper()} BETWEEN {self.start} AND {self.end}"
        return shown + ("" if self.exclude == "no others" else f" EXCLUDE {self.exclude.upper()}")


@dataclass(frozen=True)
class WindowFunc:
    """``func(args) OVER (… frame)``; ``args`` are expressions over the input row."""

    func: str
    args: tuple[Expr, ...] = ()
    frame: Frame = Frame()

    def output(self, schema: Schema, name: str) -> Column:
        """The function's output column; an error if it does not type-check."""
        if self.func not in FUNCTIONS:
            raise PlanError(f"window function {self.func} does not exist", sqlstate="42883")
        low, high = _ARITY.get(self.func, (0, 0) if self.func in RANKING else (0, 1))
        if not low <= len(self.args) <= high:
            raise PlanError(
                f"function {self.func} with {len(self.args)} arguments does not exist",
                sqlstate="42883",
            )
        for a in self.args:
            P.check_expr(a, schema, f"window function {self.func}")
        if self.func in ("row_number", "rank", "dense_rank"):
            return Column(name, INT8, False)
        if self.func in ("percent_rank", "cume_dist"):
            return Column(name, FLOAT8, False)
        if self.func == "ntile":
            return Column(name, INT4, True)
        if self.func == "array_agg":
            return Column(name, array_of(self.args[0].type), True)
        if self.func == "string_agg":
            if any(a.type not in (TEXT, NULLTYPE) for a in self.args):
                shown = ", ".join(str(a.type) for a in self.args)
                raise PlanError(f"function string_agg({shown}) does not exist", sqlstate="42883")
            return Column(name, TEXT, True)
        if self.func in AGGREGATES:
            agg = P.Aggregate(self.func, self.args[0] if self.args else None)
            return agg.output(schema, name)
        value = self.args[0]
        shown = [value, self.args[2]] if self.func in OFFSETS and len(self.args) > 2 else [value]
        return Column(name, value.type, True, common_scale(shown, schema))

    def __str__(self) -> str:
        return f"{self.func}({', '.join(map(str, self.args))}) OVER ({self.frame})"


@dataclass(frozen=True)
class Window(P.Plan):
    """The input's rows, each with the values of ``functions`` over its partition."""

    input: P.Plan
    partition_by: tuple[int, ...]
    order_by: tuple[P.Order, ...]
    functions: tuple[WindowFunc, ...]
    names: tuple[str, ...] = ()
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        schema = self.input.schema
        for i in (*self.partition_by, *(o.column for o in self.order_by)):
            if not 0 <= i < len(schema):
                raise PlanError(f"Window: column #{i} does not exist", sqlstate="42703")
        names = self.names or tuple(f.func for f in self.functions)
        if len(names) != len(self.functions):
            raise PlanError("Window: as many names as functions are needed")
        for f in self.functions:
            offsets = "offset" in (f.frame.start.kind, f.frame.end.kind)
            if f.frame.mode == "range" and offsets:
                _check_offsettable(f.frame, self.order_by, schema)
            if f.frame.mode == "groups" and not self.order_by:
                raise PlanError("GROUPS mode requires an ORDER BY clause", sqlstate="42P20")
        outs = [f.output(schema, n) for f, n in zip(self.functions, names, strict=True)]
        object.__setattr__(self, "schema", (*schema, *outs))

    def inputs(self) -> tuple[P.Plan, ...]:
        return (self.input,)

    def describe(self) -> str:
        keys = ", ".join(f"#{i}" for i in self.partition_by)
        order = ", ".join(map(str, self.order_by))
        funcs = ", ".join(map(str, self.functions))
        return f"Window partition_by=[{keys}] order_by=[{order}] {funcs}"


def _check_offsettable(frame: Frame, order_by: tuple[P.Order, ...], schema: Schema) -> None:
    """RANGE offsets need one ORDER BY column: numeric with numeric offsets, or a date or
    timestamp with interval offsets (else 0A000, as PostgreSQL has no such ``+``)."""
    if len(order_by) != 1:
        raise PlanError(
            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
            sqlstate="42P20",
        )
    kind = schema[order_by[0].column].type
    offsets = [b.offset for b in (frame.start, frame.end) if b.kind == "offset"]
    if all(isinstance(o, Interval) for o in offsets):
        if kind in (DATE, TIMESTAMP, TIMESTAMPTZ):
            return
        offset = "interval"
    elif kind.numeric and not any(isinstance(o, Interval) for o in offsets):
        return
    else:
        offset = "a number"
    raise PlanError(
        f"RANGE with offset PRECEDING/FOLLOWING is not supported for column type {kind} "
        f"and an offset of {offset}",
        sqlstate="0A000",
    )


def evaluate_window(window: Window, version: dict[Row, int]) -> list[tuple[Row, int]]:
    """The window's output over its whole input ``version`` (rows and positive counts)."""
    partitions: dict[Row, dict[Row, int]] = defaultdict(dict)
    for row, count in version.items():
        partitions[tuple(row[i] for i in window.partition_by)][row] = count
    return [pair for rows in partitions.values() for pair in partition_output(window, rows)]


def partition_output(
    window: Window, rows: dict[Row, int], fast: bool = True
) -> list[tuple[Row, int]]:
    """The output rows of one partition's input ``rows`` (with their counts); without
    ``fast``, every frame function visits its frame's rows (the plain meaning, against
    which the shortcuts of :mod:`~changeflow.compute.window_frames` are tested)."""
    for row, count in rows.items():
        if count < 0:
            raise EvalError(f"Window: row {row!r} has a negative count {count}", sqlstate="XX000")
    keyed = sorted(((sort_key(r, window.order_by), r) for r in rows), key=lambda kr: kr[0])
    ordered = [r for _, r in keyed for _ in range(rows[r])]
    peers = [k[:-1] for k, r in keyed for _ in range(rows[r])]
    groups = _peer_groups(peers)
    columns = [_values(f, window, ordered, groups, fast) for f in window.functions]
    out: Counter[Row] = Counter()
    for i, row in enumerate(ordered):
        out[row + tuple(c[i] for c in columns)] += 1
    return list(out.items())


def _peer_groups(peers: list[tuple]) -> list[int]:
    """Each position's peer group number (rows equal on the ORDER BY are peers)."""
    groups, current = [], -1
    for i, key in enumerate(peers):
        if i == 0 or key != peers[i - 1]:
            current += 1
        groups.append(current)
    return groups


def _values(
    f: WindowFunc, window: Window, rows: list[Row], groups: list[int], fast: bool
) -> list[Any]:
    n = len(rows)
    first = {}
    last = {}
    for i, g in enumerate(groups):
        first.setdefault(g, i)
        last[g] = i
    match f.func:
        case "row_number":
            return list(range(1, n + 1))
        case "rank":
            return [first[g] + 1 for g in groups]
        case "dense_rank":
            return [g + 1 for g in groups]
        case "percent_rank":
            return [first[g] / (n - 1) if n > 1 else 0.0 for g in groups]
        case "cume_dist":
            return [(last[g] + 1) / n for g in groups]
        case "ntile":
            return [_ntile(f.args[0].eval(rows[i]), i, n) for i in range(n)]
        case "lag" | "lead":
            return [_offset(f, rows, i) for i in range(n)]
    kind = f.output(window.input.schema, f.func).type
    ranges = _RangeIndex(window, rows) if f.frame.mode == "range" else None
    spans = [_span(f.frame, ranges, groups, first, last, i) for i in range(n)]
    if fast and f.frame.exclude == "no others" and f.func not in COLLECTED:
        found = frame_values(f, rows, spans, kind)
        if found is not None:
            return found
    out = []
    for i, (lo, hi) in enumerate(spans):
        frame = _excluded(f.frame.exclude, range(lo, hi + 1), groups, i)
        out.append(_over_frame(f, [rows[j] for j in frame], kind, rows[i]))
    return out


def _ntile(buckets: Any, i: int, n: int) -> int | None:
    if buckets is None:
        return None
    if buckets <= 0:
        raise EvalError("argument of ntile must be greater than zero", sqlstate="22014")
    size, extra = divmod(n, buckets)
    big = extra * (size + 1)  # the first ``extra`` buckets hold one row more
    if i < big:
        return i // (size + 1) + 1
    return extra + (i - big) // size + 1 if size else i + 1


def _offset(f: WindowFunc, rows: list[Row], i: int) -> Any:
    row = rows[i]
    k = f.args[1].eval(row) if len(f.args) > 1 else 1
    if k is None:
        return None
    j = i - k if f.func == "lag" else i + k
    if 0 <= j < len(rows):
        return f.args[0].eval(rows[j])
    return f.args[2].eval(row) if len(f.args) > 2 else None


def _span(
    frame: Frame,
    ranges: _RangeIndex | None,
    groups: list[int],
    first: dict[int, int],
    last: dict[int, int],
    i: int,
) -> tuple[int, int]:
    """The first and last positions of row ``i``'s frame before EXCLUDE (empty: lo > hi)."""
    n, g = len(groups), groups[i]
    if frame.mode == "rows":
        lo, hi = _row_bound(frame.start, i, 0), _row_bound(frame.end, i, n - 1)
    elif frame.mode == "groups":
        top = groups[-1]
        lo_g, hi_g = _row_bound(frame.start, g, 0), _row_bound(frame.end, g, top)
        lo = first[lo_g] if 0 <= lo_g <= top else (0 if lo_g < 0 else n)
        hi = last[hi_g] if 0 <= hi_g <= top else (n - 1 if hi_g > top else -1)
    else:
        assert ranges is not None
        lo = ranges.bound(frame.start, first[g], i, start=True)
        hi = ranges.bound(frame.end, last[g], i, start=False)
    return max(lo, 0), min(hi, n - 1)


def _excluded(exclude: str, chosen: range, groups: list[int], i: int) -> list[int]:
    """The frame's positions without those EXCLUDE takes out."""
    g = groups[i]
    if exclude == "current row":
        return [j for j in chosen if j != i]
    if exclude == "group":
        return [j for j in chosen if groups[j] != g]
    if exclude == "ties":
        return [j for j in chosen if j == i or groups[j] != g]
    return list(chosen)


def _row_bound(b: Bound, at: int, unbounded: int) -> int:
    """A ROWS or GROUPS bound as a position (of a row or a peer group)."""
    if b.kind == "unbounded":
        return unbounded
    if b.kind == "current":
        return at
    offset = _check_offset(b.offset)
    return at - offset if b.preceding else at + offset


def _check_offset(offset: Any) -> Any:
    if offset is None or offset < (Interval() if isinstance(offset, Interval) else 0):
        raise EvalError("frame starting or ending offset must not be negative", sqlstate="22013")
    return offset


class _RangeIndex:
    """RANGE bounds with offsets found by bisection: the single ORDER BY column's non-NULL
    values are sorted (ascending, or descending), so the first (last) row within an offset
    is a binary search. A NULL current row's frame is its peers; NULLs are never within an
    offset of a value."""

    def __init__(self, window: Window, rows: list[Row]) -> None:
        self.n = len(rows)
        self.order = window.order_by[0] if window.order_by else None
        self.values = [] if self.order is None else [r[self.order.column] for r in rows]
        self.keys: list[Any] | None = None  # made when an offset bound is first asked

    def _sorted_keys(self) -> list[Any]:
        """The non-NULL values as they sort (ascending under ``_Desc`` if descending)."""
        if self.keys is None:
            assert self.order is not None
            present = [j for j, v in enumerate(self.values) if v is not None]
            self.start = present[0] if present else 0
            wrap = _Desc if self.order.desc else _Asc
            self.keys = [wrap(_comparable(self.values[j])) for j in present]
        return self.keys

    def bound(self, b: Bound, peer: int, i: int, start: bool) -> int:
        if b.kind == "current":
            return peer
        if b.kind == "unbounded":
            return 0 if start else self.n - 1
        assert self.order is not None
        value = self.values[i]
        if value is None:
            return peer
        offset = _check_offset(b.offset)
        keys = self._sorted_keys()
        # in sort order, the bound lies offset before (PRECEDING) or after the value
        ahead = b.preceding == self.order.desc
        limit = (_Desc if self.order.desc else _Asc)(_shifted(value, offset, ahead))
        if start:  # the first key at or after limit
            return self.start + bisect_left(keys, limit)
        return self.start + bisect_right(keys, limit) - 1


def _comparable(value: Any) -> Any:
    """A date as its midnight's timestamp (so it compares with ``date ± interval``)."""
    return stamp_of(value) if isinstance(value, date) else value


def _shifted(value: Any, offset: Any, ahead: bool) -> Any:
    """``value + offset`` (``ahead``) or ``value - offset``."""
    if isinstance(offset, Interval):
        return add_to_stamp(stamp_of(value), offset if ahead else -offset)
    offset = float(offset) if isinstance(value, float) else offset
    return value + offset if ahead else value - offset


@dataclass(frozen=True, order=True)
class _Asc:
    value: Any


@dataclass(frozen=True)
class _Desc:
    """A value that sorts in reverse."""

    value: Any

    def __lt__(self, other: _Desc) -> bool:
        return other.value < self.value


def _average(total: Decimal, n: int) -> Decimal:
    """PostgreSQL's numeric avg: the quotient at its division's scale."""
    scale = div_scale(total, Decimal(n))
    with localcontext() as ctx:
        ctx.prec = max(total.adjusted(), 0) + scale + 10
        return (total / n).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def _over_frame(f: WindowFunc, frame: list[Row], kind: SqlType, row: Row) -> Any:
    if f.func == "first_value":
        return f.args[0].eval(frame[0]) if frame else None
    if f.func == "last_value":
        return f.args[0].eval(frame[-1]) if frame else None
    if f.func == "nth_value":
        k = nth_of(f, row)
        return None if k is None or k > len(frame) else f.args[0].eval(frame[k - 1])
    if f.func == "array_agg":
        return tuple(f.args[0].eval(r) for r in frame) or None
    if f.func == "string_agg":
        pairs = [(f.args[0].eval(r), f.args[1].eval(r)) for r in frame]
        kept = [(v, sep) for v, sep in pairs if v is not None]
        if not kept:
            return None
        return kept[0][0] + "".join((sep or "") + v for v, sep in kept[1:])
    arg = f.args[0] if f.args else None
    if arg is None:
        return len(frame)
    values = [(v, 1) for v in (arg.eval(r) for r in frame) if v is not None]
    if f.func == "avg" and not arg.type.floating:
        if not values:
            return None
        total = sum((Decimal(v) for v, _ in values), Decimal(0))
        return _average(total, len(values))
    agg = P.Aggregate(f.func, arg)
    return aggregate_values(agg, values, kind)
