"""A reduce's step on a batch: the step's changes summed per group (and per kept value) by
Arrow's hash group-by, so Python runs once per changed group, not once per changed row.

It gives exactly the row form's groups (:class:`~changeflow.compute.operators.reduce.Group`):
counts and sums of integers and numerics are exact in both (a step's decimal sums in Arrow
stay within decimal128's 38 digits; the running totals are Python's, exact), and where a
kernel might differ (floats, which Python sums in row order; ordered aggregates; a sum that
might pass 38 digits), :func:`accumulate` raises :class:`~changeflow.compute.columnar.Rows`
before it changes any state, and the reduce takes the rows.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import columnar as C
from changeflow.compute import plan as P
from changeflow.compute import scaled
from changeflow.compute.operators.batch import Batch
from changeflow.compute.scaled import Ints
from changeflow.compute.types import WIDE
from changeflow.compute.values import python_values
from changeflow.errors import EvalError

if TYPE_CHECKING:
    from changeflow.compute.operators.reduce import Group

_TOTALS = ("count", "sum", "avg")  # running totals; the other aggregates keep their values
_KEPT = ("min", "max", "bool_and", "bool_or")  # kept values whose order Arrow and rows share
_INT_LIMIT = 2**62  # an int64 group sum below this cannot have wrapped
_ARROW_DIGITS = 38  # decimal128's digits: a step's sums in Arrow must stay below
_SAMPLE = 64  # values whose decimal places are read in Python before the kernels check all


def batchable(reduce: P.Reduce) -> bool:
    """Whether every aggregate has a batch form (no ORDER BY, no array or string gathering)."""
    return all(
        a.arg is None or (not a.order and (a.func in _TOTALS or a.func in _KEPT))
        for a in reduce.aggregates
    )


class Change:
    """One group's change in a step: rows, and per aggregate the non-NULL rows and either
    the sum of the values (a running total) or the change in each kept value's count."""

    __slots__ = ("count", "present", "totals", "values")

    def __init__(self, width: int) -> None:
        self.count = 0
        self.present = [0] * width
        self.totals: list[Any] = [0] * width
        self.values: list[list[tuple[Any, int]]] = [[] for _ in range(width)]

    def apply(self, group: Group) -> None:
        """Add the change to ``group``'s accumulators (as its rows one by one would)."""
        group.count += self.count
        for i, kept in enumerate(group.values):
            group.present[i] += self.present[i]
            if kept is None:
                total, change = group.totals[i], self.totals[i]
                exact = isinstance(total, Decimal) or isinstance(change, Decimal)
                group.totals[i] = WIDE.add(total, change) if exact else total + change
                continue
            for v, d in self.values[i]:
                now = kept[v] + d
                if now:
                    kept[v] = now
                else:
                    del kept[v]


def accumulate(reduce: P.Reduce, batch: Batch) -> dict[tuple, Change]:
    """The change per group key that ``batch`` (one time's non-empty updates) makes, keys as
    rows hold them. Raises :class:`C.Rows` where only the rows can tell."""
    n, aggs = len(batch), reduce.aggregates
    keys = [batch.columns[i] for i in reduce.group_by]
    if any(pa.types.is_floating(k.type) for k in keys):  # -0.0 and NaN group apart in Arrow
        raise C.Rows()
    try:
        args = [None if a.arg is None else C.evaluate(a.arg, batch.columns, n) for a in aggs]
    except EvalError:
        raise C.Rows() from None
    if any(a is not None and pa.types.is_floating(a.type) for a in args):
        raise C.Rows()  # the rows sum floats in row order
    diffs = batch.diffs
    names = [f"k{i}" for i in range(len(keys))]
    out: dict[tuple, Change] = {}
    try:
        columns, totals, kept = {"n": diffs}, [], []
        for i, (agg, arg) in enumerate(zip(aggs, args, strict=True)):
            if arg is None:
                continue
            valid = pc.is_valid(arg)
            if agg.distinct or agg.func not in _TOTALS:
                kept.append((i, arg, valid))
                continue
            columns[f"p{i}"] = pc.if_else(valid, diffs, 0)
            totals.append((i, agg.func != "count"))
            if agg.func != "count":
                columns[f"s{i}"] = _weighted(arg, diffs, valid)
        for key, sums in _group(keys, names, columns, [(c, "sum") for c in columns]):
            change = out[key] = Change(len(aggs))
            change.count = sums[0]
            at = 1
            for i, summed in totals:
                change.present[i] = sums[at]
                if summed:
                    change.totals[i] = sums[at + 1]
                at += 1 + summed
        for i, arg, valid in kept:
            _kept(out, i, keys, names, arg, batch, valid)
    except pa.ArrowException:  # a type Arrow cannot group or sum
        raise C.Rows() from None
    return out


def _int_digits(x: Decimal) -> int:
    """Digits of the integer part of ``x`` (not negative)."""
    return len(str(int(x)))


def _group(
    keys: list[pa.Array], names: list[str], columns: dict[str, pa.Array], specs: list
) -> list[tuple[tuple, list[Any]]]:
    """Sums per distinct key: ``(key, [sum per spec])``, key values as rows hold them."""
    table = pa.Table.from_arrays([*keys, *columns.values()], names=[*names, *columns])
    grouped = table.group_by(names, use_threads=False).aggregate(specs)
    sums = [grouped.column(f"{c}_sum").to_pylist() for c, _ in specs]
    key_values = [python_values(grouped.column(n)) for n in names]
    rows = zip(*key_values, strict=True) if names else [()] * grouped.num_rows
    return list(zip(rows, zip(*sums, strict=True), strict=True))  # type: ignore[arg-type]


def _weighted(arg: pa.Array, diffs: pa.Array, valid: pa.Array) -> pa.Array:
    """Each value times its diff (zero where NULL), in a type whose group sums are exact (for
    decimals, no partial sum, at most the largest value times the rows, can pass decimal128)."""
    if pa.types.is_integer(arg.type):
        values = arg.cast(pa.int64())
        biggest = pc.max(pc.abs(values)).as_py() or 0
        weight = pc.sum(pc.abs(diffs)).as_py() or 0
        if biggest * weight >= _INT_LIMIT:
            raise C.Rows()
        return pc.if_else(valid, pc.multiply(values, diffs), 0)
    if not pa.types.is_decimal(arg.type):
        raise C.Rows()
    if not pc.all(pc.equal(pc.abs(diffs), 1)).as_py():
        raise C.Rows()  # a multiplicity above one: the rows multiply
    if (fast := _weighted_ints(arg, diffs)) is not None:
        return fast
    arg = arg.cast(pa.decimal128(38, _places(arg)))  # the rows sum these places exactly
    zero = pa.scalar(Decimal(0), arg.type)
    biggest = pc.max(pc.abs(arg)).as_py() or Decimal(0).scaleb(-arg.type.scale)
    with localcontext() as ctx:
        ctx.prec = 80
        bound = biggest * len(arg)
    if _int_digits(bound) + arg.type.scale >= _ARROW_DIGITS:
        raise C.Rows()
    return pc.if_else(valid, pc.if_else(pc.greater(diffs, 0), arg, pc.negate(arg)), zero)


def _weighted_ints(arg: pa.Array, diffs: pa.Array) -> pa.Array | None:
    """:func:`_weighted` of decimals on their scaled int64s (:mod:`~changeflow.compute.scaled`)
    where those are at the fewest places (a value not a multiple of ten, or no places left)
    and no partial sum can pass an int64: the same values and type."""
    ints = scaled.unscaled(arg)
    if ints is None or not isinstance(ints.values, np.ndarray) or not len(ints.values):
        return None
    values = ints.values
    if ints.scale and not (values % 10).any():
        return None  # a reduction stopped short of the fewest places
    biggest = int(np.abs(values).max()) if values.min() > -(2**63) else 2**63
    if biggest * len(values) >= _INT_LIMIT:
        return None
    signed = Ints(values * diffs.to_numpy(zero_copy_only=False), None, ints.scale)  # NULL: 0
    out = scaled.decimal(signed, pa.decimal128(38, ints.scale))
    assert isinstance(out, pa.Array)
    return out


def _places(arg: pa.Array) -> int:
    """The fewest decimal places that hold every value exactly (the rows' sums round only
    trailing zeros away beyond these, which keeps their values): at least a sample's most,
    read in Python, which one rounding of all the values confirms (or a search just above
    it, widening)."""
    sample = python_values(arg.slice(0, _SAMPLE).drop_null())
    with localcontext() as ctx:
        ctx.prec = 80  # normalizing rounds nothing
        low, high = max(map(_value_places, sample), default=0), arg.type.scale
    if low >= high or _holds(arg, low):
        return min(low, high)
    step = 1  # the sample's places are seldom far off: try just above, then farther
    while low + step < high and not _holds(arg, low + step):
        low, step = low + step, step * 2
    low, high = low + 1, min(low + step, high)
    while low < high:
        mid = (low + high) // 2
        if _holds(arg, mid):
            high = mid
        else:
            low = mid + 1
    return low


def _holds(arg: pa.Array, places: int) -> bool:
    """Whether every value has at most ``places`` decimal places."""
    rounded = pc.round(arg, ndigits=places, round_mode="half_to_even")
    return pc.all(pc.equal(rounded, arg)).as_py() is not False


def _value_places(x: Decimal) -> int:
    """The decimal places ``x`` needs (its trailing zeros aside)."""
    return max(-int(x.normalize().as_tuple().exponent), 0)


def _kept(
    out: dict[tuple, Change],
    i: int,
    keys: list[pa.Array],
    names: list[str],
    arg: pa.Array,
    batch: Batch,
    valid: pa.Array,
) -> None:
    """A value-keeping aggregate: the change in each (group, value)'s count."""
    if not pc.any(valid).as_py():
        return
    if not pc.all(valid).as_py():
        keys = [k.filter(valid) for k in keys]
        arg, diffs = arg.filter(valid), batch.diffs.filter(valid)
    else:
        diffs = batch.diffs
    for key_and_value, (d,) in _group([*keys, arg], [*names, "v"], {"d": diffs}, [("d", "sum")]):
        change = out[key_and_value[:-1]]
        change.present[i] += d
        if d:
            change.values[i].append((key_and_value[-1], d))
