"""A plan evaluated at one time on Arrow tables in this process: the snapshot's columns through
``pyarrow.compute`` kernels and Acero's hash joins and hash aggregations, for an ad hoc query
over inputs too large for rows and too small to be worth a Spark job.

Each relation is columns plus a count per row; an input need not be consolidated (its rows
are summed where an operator needs them distinct or positive). The meaning is the reference
evaluator's (:func:`changeflow.compute.evaluate.evaluate`): NULL keys group together and
match nothing in a join, ``sum`` of integers is ``bigint`` or
``numeric`` as the plan types it, ``avg`` divides the exact total as the reference does. What
has no kernel here (an outer join, a top-k, a temporal filter, string_agg…) raises
:class:`Unsupported` before any work is wasted on it, and a kernel that cannot tell what the rows
would (an overflow, a division by zero) raises :class:`Unsupported` too: the caller then
evaluates the plan the other way, which gives the rows' answer or their exact error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import columnar as C
from changeflow.compute import plan as P
from changeflow.compute.operators.batch import unify
from changeflow.compute.operators.join import _restrict, _split_keys
from changeflow.compute.scalars import numeric_div
from changeflow.compute.types import BOOL, FLOAT4, FLOAT8, NUMERIC, SqlType
from changeflow.compute.volatile import volatile
from changeflow.errors import EvalError
from changeflow.updates import DIFF

_LINEAR_AGGREGATES = ("count", "sum", "avg")
_SAFE_SUM = 2.0**62  # a sum of integers whose magnitudes add below this cannot overflow


class Unsupported(Exception):
    """Not evaluated here: the plan has a node without a kernel, or only the rows can tell."""


@dataclass
class Rel:
    """A collection as columns (by position) and a count per row."""

    columns: list[pa.Array]
    counts: pa.Array
    kinds: tuple[SqlType, ...]

    def __len__(self) -> int:
        return len(self.counts)

    def filter(self, mask: pa.Array) -> Rel:
        columns = [c.filter(mask) for c in self.columns]
        return Rel(columns, self.counts.filter(mask), self.kinds)

    def table(self) -> pa.Table:
        """An update frame without times: the data columns (numerics at the stored scale)
        named by position, then ``_diff``."""
        arrays = [_stored(c, k) for c, k in zip(self.columns, self.kinds, strict=True)]
        names = [f"c{i}" for i in range(len(arrays))]
        return pa.Table.from_arrays([*arrays, self.counts], names=[*names, DIFF])


def evaluate_arrow(plan: P.Plan, inputs: Mapping[str, pa.Table]) -> Rel:
    """``plan`` over ``inputs`` (each the updates up to the time read, times ignored: data
    columns and ``_diff``)."""
    check(plan)
    return _eval(plan, inputs)


def check(plan: P.Plan) -> None:
    """:class:`Unsupported` if some node of ``plan`` has no kernel here."""
    if any(pa.types.is_nested(c.type.arrow) for c in plan.schema):
        raise Unsupported("arrays or intervals")  # Acero cannot group or join by these
    match plan:
        case P.TopK() | P.TemporalFilter():
            raise Unsupported(type(plan).__name__)
        case P.Map(exprs=exprs) if any(volatile(e) for _, e in exprs):
            raise Unsupported("a volatile expression")  # each copy of a row needs its own
        case P.Join(kind=kind) if kind != "inner":
            raise Unsupported(f"{kind} join")
        case P.Reduce(aggregates=aggregates):
            for a in aggregates:
                if a.func not in ("count", "sum", "avg", "min", "max", "bool_and", "bool_or"):
                    raise Unsupported(a.func)
                if a.distinct and a.func != "count":
                    raise Unsupported(f"{a.func}(DISTINCT)")
    for child in plan.inputs():
        check(child)


def _eval(plan: P.Plan, inputs: Mapping[str, pa.Table]) -> Rel:
    kinds = tuple(c.type for c in plan.schema)
    match plan:
        case P.Get(name=name):
            table = inputs[name]
            data = [n for n in table.column_names if not n.startswith("_")]
            columns = [_array(table.column(n)) for n in data]
            return Rel(columns, _array(table.column(DIFF)), kinds)
        case P.Constant(rows=rows):
            columns = [C.to_array([r[i] for r, _ in rows], k) for i, k in enumerate(kinds)]
            return Rel(columns, pa.array([c for _, c in rows], pa.int64()), kinds)
    children = [_eval(p, inputs) for p in plan.inputs()]
    match plan:
        case P.Filter(predicates=predicates):
            out = children[0]
            for p in predicates:
                out = out.filter(pc.fill_null(_column(p, out), False))
            return out
        case P.Map(exprs=exprs):
            rel = children[0]
            added = [_column(e, rel) for _, e in exprs]
            return Rel(rel.columns + added, rel.counts, kinds)
        case P.Project(columns=columns):
            rel = children[0]
            return Rel([rel.columns[i] for i in columns], rel.counts, kinds)
        case P.Union():
            columns = [unify([c.columns[i] for c in children], k) for i, k in enumerate(kinds)]
            return Rel(columns, pa.concat_arrays([c.counts for c in children]), kinds)
        case P.Negate():
            return Rel(children[0].columns, pc.negate(children[0].counts), kinds)
        case P.Distinct() | P.Threshold():
            rel = _consolidated(children[0], negative=True)
            rel = rel.filter(pc.greater(rel.counts, 0))
            if isinstance(plan, P.Distinct):
                return Rel(rel.columns, pa.repeat(pa.scalar(1, pa.int64()), len(rel)), kinds)
            return rel
        case P.Reduce():
            return _reduce(plan, children[0], kinds)
        case P.Join():
            return _join(plan, children, kinds)
    raise Unsupported(type(plan).__name__)


def _array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _column(e: Any, rel: Rel) -> pa.Array:
    try:
        return C.evaluate(e, rel.columns, len(rel))
    except (C.Rows, EvalError):
        raise Unsupported("only the rows can tell") from None


def _stored(column: pa.Array, kind: SqlType) -> pa.Array:
    """A column as its type is stored (numerics rounded to the stored scale)."""
    if kind == NUMERIC and column.type != NUMERIC.arrow:
        if column.type == pa.null():
            return column.cast(NUMERIC.arrow)
        column = pc.round(column, ndigits=NUMERIC.arrow.scale, round_mode="half_to_even")
    return column.cast(kind.arrow)


def _names(rel: Rel, prefix: str) -> pa.Table:
    names = [f"{prefix}{i}" for i in range(len(rel.columns))]
    return pa.Table.from_arrays([*rel.columns, rel.counts], names=[*names, f"{prefix}n"])


def _consolidated(rel: Rel, negative: bool = False) -> Rel:
    """Equal rows summed, rows that sum to zero dropped; negative counts are the rows' to
    refuse, unless ``negative`` (the caller keeps the positive ones)."""
    if not rel.columns:
        total = pc.sum(rel.counts).as_py() or 0
        if total < 0 and not negative:
            raise Unsupported("negative counts")
        return Rel([], pa.array([total] if total else [], pa.int64()), rel.kinds)
    table = _names(rel, "c")
    keys = [f"c{i}" for i in range(len(rel.columns))]
    summed = table.group_by(keys, use_threads=False).aggregate([("cn", "sum")])
    summed = summed.filter(pc.not_equal(summed.column("cn_sum"), 0))
    out = Rel([_array(summed.column(k)) for k in keys], _array(summed.column("cn_sum")), rel.kinds)
    if not negative and len(out) and pc.min(out.counts).as_py() < 0:
        raise Unsupported("negative counts")
    return out


def _positive(rel: Rel) -> Rel:
    """``rel`` with every count positive (consolidated if it needs to be)."""
    if not len(rel) or pc.min(rel.counts).as_py() > 0:
        return rel
    return _consolidated(rel)


# -- reduce ----------------------------------------------------------------------------------


def _weighted_sum(x: pa.Array, counts: pa.Array, kind: SqlType) -> pa.Array:
    """``x * count`` in the representation the sum is taken in (``kind``, the sum's type)."""
    ones = pc.min_max(counts)
    if ones["min"].as_py() == 1 and ones["max"].as_py() == 1:  # each row once: ``x`` itself
        if kind == NUMERIC and not pa.types.is_decimal(x.type):
            return x.cast(pa.decimal128(38, 0))
        if kind != FLOAT8 and kind != NUMERIC:
            _no_overflow(x, counts)
            return x.cast(pa.int64())
        return x.cast(pa.float64()) if kind == FLOAT8 else x
    if kind == FLOAT8:
        return pc.multiply(x.cast(pa.float64()), counts.cast(pa.float64()))
    if kind == NUMERIC:
        dec = x if pa.types.is_decimal(x.type) else x.cast(pa.decimal128(19, 0))
        return pc.multiply(C.narrow(dec), C.narrow(counts.cast(pa.decimal128(19, 0))))
    _no_overflow(x, counts)
    return pc.multiply(x.cast(pa.int64()), counts)


def _no_overflow(x: pa.Array, counts: pa.Array) -> None:
    """:class:`Unsupported` unless an integer sum of ``x * count`` stays inside bigint."""
    weights = pc.abs(counts).cast(pa.float64())
    reach = pc.sum(pc.multiply(pc.abs(x.cast(pa.float64())), weights))
    if (reach.as_py() or 0) >= _SAFE_SUM:
        raise Unsupported("an integer sum that may overflow")


def _reduce(plan: P.Reduce, rel: Rel, kinds: tuple[SqlType, ...]) -> Rel:
    linear = all(a.func in _LINEAR_AGGREGATES and not a.distinct for a in plan.aggregates)
    if not linear:  # the others need each row once, with a positive count
        rel = _positive(rel)
    if not len(rel):
        return Rel([pa.array([], k.arrow) for k in kinds], pa.array([], pa.int64()), kinds)
    keys = [f"k{i}" for i in range(len(plan.group_by))]
    arrays = [rel.columns[i] for i in plan.group_by]
    names, specs, finish = list(keys), [("n", "sum")], []
    arrays.append(rel.counts)
    names.append("n")
    out_kinds = kinds[len(plan.group_by) :]
    for j, (agg, kind) in enumerate(zip(plan.aggregates, out_kinds, strict=True)):
        if agg.arg is None:
            finish.append(("n_sum", None))
            continue
        x = _column(agg.arg, rel)
        present = pc.if_else(pc.is_valid(x), rel.counts, 0)
        arrays.append(present)
        names.append(f"p{j}")
        specs.append((f"p{j}", "sum"))
        if agg.func == "count" and agg.distinct:
            arrays.append(x)
            names.append(f"x{j}")
            specs.append((f"x{j}", "count_distinct", pc.CountOptions(mode="only_valid")))
            finish.append((f"x{j}_count_distinct", None))
        elif agg.func == "count":
            finish.append((f"p{j}_sum", None))
        elif agg.func in ("sum", "avg"):
            if kind == FLOAT4:
                raise Unsupported("a sum of reals")  # rounded to float32, range-checked: rows
            total_kind = kind if agg.func == "sum" else (FLOAT8 if kind == FLOAT8 else NUMERIC)
            arrays.append(_weighted_sum(x, rel.counts, total_kind))
            names.append(f"x{j}")
            specs.append((f"x{j}", "sum"))
            finish.append((f"x{j}_sum", (agg.func, f"p{j}_sum", kind)))
        else:
            if pa.types.is_floating(x.type) and pc.any(pc.is_nan(x)).as_py():
                raise Unsupported("NaN in min or max")
            func = {"min": "min", "max": "max", "bool_and": "all", "bool_or": "any"}[agg.func]
            arrays.append(x)
            names.append(f"x{j}")
            specs.append((f"x{j}", func))
            finish.append((f"x{j}_{func}", (agg.func, f"p{j}_sum", kind)))
    table = pa.Table.from_arrays(arrays, names=names)
    try:
        grouped = table.group_by(keys, use_threads=False).aggregate(specs)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise Unsupported(str(e)) from None
    columns = [_array(grouped.column(k)) for k in keys]
    for name, how in finish:
        columns.append(_finish(grouped, name, how))
    ones = pa.repeat(pa.scalar(1, pa.int64()), grouped.num_rows)
    out = Rel(columns, ones, kinds)
    if linear:  # groups whose rows were all deleted are gone; fewer than none is an error
        rows = _array(grouped.column("n_sum"))
        if pc.any(pc.less(rows, 0)).as_py():
            raise Unsupported("negative counts")
        out = out.filter(pc.greater(rows, 0))
    return out


def _finish(grouped: pa.Table, name: str, how: tuple | None) -> pa.Array:
    """An aggregate's output column: NULL where the group has no value, the average from the
    exact total and count (as the reference divides), integers range-checked."""
    column = _array(grouped.column(name))
    if how is None:
        return column
    func, present_name, kind = how
    present = _array(grouped.column(present_name))
    if func == "avg":
        totals, ns = column.to_pylist(), present.to_pylist()
        return C.to_array([_average(t, n, kind) for t, n in zip(totals, ns, strict=True)], kind)
    column = pc.if_else(pc.greater(present, 0), column, pa.scalar(None, column.type))
    if func == "bool_and" or func == "bool_or":
        return column.cast(BOOL.arrow)
    return column


def _average(total: Any, n: int, kind: SqlType) -> Any:
    if not n:
        return None
    if kind == FLOAT8:
        return float(total) / n
    return numeric_div(Decimal(total), Decimal(n))  # at PostgreSQL's scale, as the rows


# -- join ------------------------------------------------------------------------------------


def _key_type(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The type both sides of an equality are joined in (:class:`Unsupported` where a hash
    join would not compare as the rows do)."""
    if a == b and not pa.types.is_floating(a):
        return a
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        return pa.int64()
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        if pa.types.is_floating(a) or pa.types.is_floating(b):
            raise Unsupported("numeric against double")
        scale = max(t.scale if pa.types.is_decimal(t) else 0 for t in (a, b))
        return pa.decimal128(38, scale)
    raise Unsupported(f"join on {a} and {b}")


def _join(join: P.Join, children: list[Rel], kinds: tuple[SqlType, ...]) -> Rel:
    """Inner joins left to right on the equivalences that span their two sides; the other
    equalities and the residual are checked on the joined rows, as the reference checks them."""
    current = children[0]
    width = len(current.columns)
    for child in children[1:]:
        visible = width + len(child.columns)
        left_keys, right_keys = _split_keys(_restrict(join.equivalences, visible), width)
        current = _hash_join(current, child, left_keys, right_keys)
        width = visible
    current = Rel(current.columns, current.counts, kinds)
    for klass in join.equivalences:
        for other in klass[1:]:
            a, b = current.columns[klass[0]], current.columns[other]
            common = _key_type(a.type, b.type)
            same = pc.equal(a.cast(common), b.cast(common))
            current = current.filter(pc.fill_null(same, False))
    if join.residual is not None:
        current = current.filter(pc.fill_null(_column(join.residual, current), False))
    return current


def _positions(n: int) -> pa.Array:
    return pa.array(np.arange(n, dtype=np.int64))


def _hash_join(left: Rel, right: Rel, lk: tuple[int, ...], rk: tuple[int, ...]) -> Rel:
    kinds = left.kinds + right.kinds
    if not lk:  # a product (the planner joins on keys wherever it can)
        n, m = len(left), len(right)
        li = pc.divide(_positions(n * m), m) if m else _positions(0)
        ri = pc.subtract(_positions(n * m), pc.multiply(li, m))
        columns = [c.take(li) for c in left.columns] + [c.take(ri) for c in right.columns]
        return Rel(columns, pc.multiply(left.counts.take(li), right.counts.take(ri)), kinds)
    lt, rt = _names(left, "l"), _names(right, "r")
    lt = lt.append_column("l_row", _positions(len(left)))
    rt = rt.append_column("r_row", _positions(len(right)))
    lnames, rnames = [], []
    for j, (i, k) in enumerate(zip(lk, rk, strict=True)):
        common = _key_type(left.columns[i].type, right.columns[k].type)
        lt = lt.append_column(f"lk{j}", left.columns[i].cast(common))
        rt = rt.append_column(f"rk{j}", right.columns[k].cast(common))
        lnames.append(f"lk{j}")
        rnames.append(f"rk{j}")
    lt = lt.select(["l_row", *lnames])
    rt = rt.select(["r_row", *rnames])
    joined = lt.join(rt, lnames, rnames, join_type="inner", use_threads=False)
    li, ri = _array(joined.column("l_row")), _array(joined.column("r_row"))
    columns = [c.take(li) for c in left.columns] + [c.take(ri) for c in right.columns]
    counts = pc.multiply_checked(left.counts.take(li), right.counts.take(ri))
    return Rel(columns, counts, kinds)
