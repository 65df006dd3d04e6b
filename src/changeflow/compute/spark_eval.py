"""Plans evaluated in bulk on Spark: a plan's output collection at one time, from its inputs'
snapshots at that time (the hydration and recompute path of compute).

Every intermediate result is a DataFrame of the plan's columns, named by position (``c0``,
``c1``… so that repeated names stay unambiguous), and ``_diff``, the row's count; it need not be
consolidated except where an operator reads accumulated counts. Multiplicities follow the plan's
differential semantics, exactly as :func:`changeflow.compute.evaluate.evaluate` (the oracle)
computes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce as fold

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    DataType,
    DecimalType,
    LongType,
    StructField,
    StructType,
    _parse_datatype_string,
)

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.cluster.local import frame_table
from changeflow.compute.evaluate import evaluate
from changeflow.compute.recursive import Recursive, fixed_point
from changeflow.compute.spark_expr import (
    ExprCompiler,
    exact_decimals,
    fail,
    from_spark,
    name,
    spark_type,
)
from changeflow.compute.types import FLOAT8, INT8, NUMERIC, NUMERIC_SCALE, Schema, SqlType
from changeflow.compute.values import python_values
from changeflow.errors import PlanError
from changeflow.updates import DIFF, TIME

_D = DIFF
_RANK = "_rank"
# Spark keeps a partition's first rows per group before a shuffle up to this many
# (spark.sql.optimizer.windowGroupLimitThreshold)
GROUP_LIMIT = 1000


def evaluate_spark(plan: P.Plan, inputs: Mapping[str, DataFrame], as_of: int) -> DataFrame:
    """The output of ``plan`` at ``as_of``: its data columns (the plan's names and types) and
    ``_diff``, consolidated (one row per distinct row, no zero counts).

    ``inputs`` maps each collection the plan reads to its snapshot at ``as_of`` (data columns in
    the order of the plan's :class:`~changeflow.compute.plan.Get` schema, ``_diff``, and
    optionally ``_time``), as :meth:`Storage.snapshot` returns it. Failures while Spark runs it
    come back through :func:`changeflow.spark.spark_errors` (an :class:`EvalError` with
    PostgreSQL's sqlstate for overflow, division by zero and bad casts).
    """
    missing = plan.collections() - inputs.keys()
    if missing:
        raise PlanError(f"no input named {', '.join(sorted(missing))}", sqlstate="42P01")
    spark = _session(inputs)
    with exact_decimals(spark):
        frame = _Evaluator(inputs, as_of, spark).frame(plan)
        out = consolidate(frame, len(plan.schema))
        data = [
            F.col(name(i)).cast(spark_type(c.type)).alias(c.name) for i, c in enumerate(plan.schema)
        ]
        return out.select(*data, F.col(_D))


def positional_frame(plan: P.Plan, inputs: Mapping[str, DataFrame], as_of: int = 0) -> DataFrame:
    """The output of ``plan`` over ``inputs`` with columns named by position and ``_diff``, not
    consolidated (the cluster tier's operators compose it with their own steps)."""
    spark = _session(inputs)
    with exact_decimals(spark):
        return _Evaluator(inputs, as_of, spark).frame(plan)


def _session(inputs: Mapping[str, DataFrame]) -> SparkSession:
    for frame in inputs.values():
        return frame.sparkSession
    from changeflow.spark import get_spark

    return get_spark()


def consolidate(frame: DataFrame, width: int) -> DataFrame:
    """One row per distinct row with its summed count; zero counts dropped."""
    keys = [name(i) for i in range(width)]
    summed = frame.groupBy(*keys).agg(F.sum(_D).alias(_D))
    return summed.where(F.col(_D) != 0)


def _positive(frame: DataFrame, where: str) -> DataFrame:
    """``frame`` (consolidated), failing the job on a negative count as the reference does."""
    bad = fail(f"{where}: a row has a negative count", "XX000")
    return frame.withColumn(_D, F.when(F.col(_D) < 0, bad).otherwise(F.col(_D)))


def _rename(frame: DataFrame, width: int, offset: int, diff: str) -> DataFrame:
    cols = [F.col(name(i)).alias(name(offset + i)) for i in range(width)]
    return frame.select(*cols, F.col(_D).alias(diff))


class _Evaluator:
    def __init__(self, inputs: Mapping[str, DataFrame], as_of: int, spark: SparkSession) -> None:
        self.inputs = inputs
        self.as_of = as_of
        self.spark = spark

    def frame(self, plan: P.Plan) -> DataFrame:
        method = getattr(self, "_" + type(plan).__name__.lower(), None)
        if method is None:
            raise PlanError(f"{type(plan).__name__} cannot be evaluated on Spark")
        return method(plan)

    def compiler(self, frame: DataFrame) -> ExprCompiler:
        return ExprCompiler(frame, self.as_of)

    # -- leaves ------------------------------------------------------------------------------

    def _get(self, plan: P.Get) -> DataFrame:
        frame = self.inputs[plan.name]
        data = [c for c in frame.columns if c not in (TIME, _D)]
        if _D not in frame.columns or len(data) != len(plan.schema):
            shown = ", ".join(frame.columns)
            raise PlanError(
                f"input {plan.name} has columns ({shown}); the plan reads "
                f"{len(plan.schema)} data columns and {_D}",
                sqlstate="42804",
            )
        _check_types(plan.name, frame.select(*data), plan.schema)
        cols = [frame[c].alias(name(i)) for i, c in enumerate(data)]
        return frame.select(*cols, frame[_D].cast("bigint").alias(_D))

    def _constant(self, plan: P.Constant) -> DataFrame:
        ddl = ", ".join(
            f"{name(i)} {spark_type(c.type) if c.type.name != 'unknown' else 'string'}"
            for i, c in enumerate(plan.schema)
        )
        ddl = (ddl + ", " if ddl else "") + f"{_D} bigint"
        rows = [(*row, count) for row, count in plan.rows]
        return self.spark.createDataFrame(rows, ddl)

    # -- linear operators --------------------------------------------------------------------

    def _map(self, plan: P.Map) -> DataFrame:
        frame = self.frame(plan.input)
        width = len(plan.input.schema)
        cc = self.compiler(frame)
        added = [cc.compile(e).alias(name(width + i)) for i, (_, e) in enumerate(plan.exprs)]
        return frame.select(*(name(i) for i in range(width)), *added, _D)

    def _project(self, plan: P.Project) -> DataFrame:
        frame = self.frame(plan.input)
        cols = [F.col(name(i)).alias(name(j)) for j, i in enumerate(plan.columns)]
        return frame.select(*cols, _D)

    def _filter(self, plan: P.Filter) -> DataFrame:
        frame = self.frame(plan.input)
        cc = self.compiler(frame)
        return frame.where(fold(lambda a, b: a & b, (cc.compile(p) for p in plan.predicates)))

    def _union(self, plan: P.Union) -> DataFrame:
        return fold(DataFrame.union, (self.frame(p) for p in plan.inputs_))

    def _negate(self, plan: P.Negate) -> DataFrame:
        return self.frame(plan.input).withColumn(_D, -F.col(_D))

    def _temporalfilter(self, plan: P.TemporalFilter) -> DataFrame:
        frame = self.frame(plan.input)
        cc = ExprCompiler(frame)
        now = F.lit(self.as_of).cast("bigint")
        live = [cc.compile(e) <= now for e in plan.lower]
        live += [now < cc.compile(e) for e in plan.upper]
        return frame.where(fold(lambda a, b: a & b, live)) if live else frame

    # -- joins -------------------------------------------------------------------------------

    def _join(self, plan: P.Join) -> DataFrame:
        widths = [len(p.schema) for p in plan.inputs_]
        offsets = [sum(widths[:k]) for k in range(len(widths))]
        outer = plan.kind != "inner"
        sides = []
        for k, child in enumerate(plan.inputs_):
            frame = self.frame(child)
            frame = consolidate(frame, widths[k]) if outer else frame
            sides.append(_rename(frame, widths[k], offsets[k], f"_d{k}"))
        owner = [k for k, w in enumerate(widths) for _ in range(w)]
        pending = [list(klass) for klass in plan.equivalences]
        joined = _own_equalities(sides[0], pending, owner, 0)
        for k in range(1, len(sides)):
            condition = _equalities(pending, owner, k)
            if outer:
                residual = plan.residual
                if residual is not None:
                    both = joined.crossJoin(sides[k]).limit(0)
                    condition.append(ExprCompiler(both).compile(residual))
                on = fold(lambda a, b: a & b, condition) if condition else F.lit(True)
                joined = joined.join(
                    sides[k], on, {"left": "left", "right": "right"}.get(plan.kind, "full")
                )
            elif condition:
                joined = joined.join(sides[k], fold(lambda a, b: a & b, condition), "inner")
            else:
                joined = joined.crossJoin(sides[k])
        if not outer and plan.residual is not None:
            joined = joined.where(ExprCompiler(joined).compile(plan.residual))
        count = fold(
            lambda a, b: a * b, (F.coalesce(F.col(f"_d{k}"), F.lit(1)) for k in range(len(sides)))
        )
        return joined.select(*(name(i) for i in range(sum(widths))), count.alias(_D))

    # -- operators that read accumulated counts ----------------------------------------------

    def _distinct(self, plan: P.Distinct) -> DataFrame:
        width = len(plan.schema)
        frame = consolidate(self.frame(plan.input), width).where(F.col(_D) > 0)
        return frame.withColumn(_D, F.lit(1).cast("bigint"))

    def _threshold(self, plan: P.Threshold) -> DataFrame:
        return consolidate(self.frame(plan.input), len(plan.schema)).where(F.col(_D) > 0)

    def _topk(self, plan: P.TopK) -> DataFrame:
        width = len(plan.schema)
        frame = _positive(consolidate(self.frame(plan.input), width), "TopK")
        order = [_order(o) for o in plan.order_by]
        # ties broken by the whole row, NULLs first, as the reference's sort_key orders them
        order += [F.col(name(i)).asc_nulls_first() for i in range(width)]
        groups = Window.partitionBy(*(name(i) for i in plan.group_by)).orderBy(*order)
        if plan.limit is not None and plan.offset + plan.limit <= GROUP_LIMIT:
            # a row past the first offset + limit distinct rows is past as many counted ones:
            # filtered so, Spark keeps each partition's first rows before it shuffles them
            rank = F.row_number().over(groups)
            frame = frame.withColumn(_RANK, rank).where(F.col(_RANK) <= plan.offset + plan.limit)
            frame = frame.drop(_RANK)
        window = groups.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        upto = F.sum(_D).over(window)
        start = F.lit(plan.offset).cast("bigint")
        before = F.greatest(upto - F.col(_D), start)
        if plan.limit is not None:
            upto = F.least(upto, F.lit(plan.offset + plan.limit).cast("bigint"))
        kept = frame.select(*(name(i) for i in range(width)), (upto - before).alias(_D))
        return kept.where(F.col(_D) > 0)

    def _reduce(self, plan: P.Reduce) -> DataFrame:
        width = len(plan.input.schema)
        frame = _positive(consolidate(self.frame(plan.input), width), "Reduce")
        cc = self.compiler(frame)
        args = [
            (cc.compile(a.arg) if a.arg is not None else F.lit(None)).alias(f"a{i}")
            for i, a in enumerate(plan.aggregates)
        ]
        args += [  # the sort keys of ordered aggregates, and the filter of one keeping NULLs
            cc.compile(o.expr).alias(f"a{i}_{j}")
            for i, a in enumerate(plan.aggregates)
            for j, o in enumerate(a.order)
        ]
        args += [
            cc.compile(a.filter).alias(f"a{i}_f")
            for i, a in enumerate(plan.aggregates)
            if a.filter is not None
        ]
        keys = [F.col(name(c)).alias(name(j)) for j, c in enumerate(plan.group_by)]
        frame = frame.select(*keys, *args, _D)
        outs = [
            _aggregate(frame, a, f"a{i}", c.type).alias(name(len(keys) + i))
            for i, (a, c) in enumerate(zip(plan.aggregates, plan.schema[len(keys) :], strict=True))
        ]
        rows = F.count(F.lit(1)).alias("_rows")
        grouped = frame.groupBy(*(name(j) for j in range(len(keys)))).agg(rows, *outs)
        _check_scales(grouped, plan)
        data = [name(i) for i in range(len(plan.schema))]
        return grouped.where(F.col("_rows") > 0).select(*data, F.lit(1).cast("bigint").alias(_D))

    def _window(self, plan: W.Window) -> DataFrame:
        """Each partition's rows through :func:`~changeflow.compute.window.partition_output`
        (the reference's own meaning) on the executors, one Arrow group per partition."""
        width = len(plan.input.schema)
        frame = consolidate(self.frame(plan.input), width)
        out = StructType(
            [StructField(name(i), _type(c.type)) for i, c in enumerate(plan.schema)]
            + [StructField(_D, LongType())]
        )
        keys = [name(i) for i in plan.partition_by]
        if not keys:  # one partition: the whole input
            frame, keys = frame.withColumn("_all", F.lit(0)), ["_all"]
        target = to_arrow_schema(out)

        def partition(table: pa.Table) -> pa.Table:  # typed: Spark reads the hints
            return _partition(plan, target, table)

        return frame.groupBy(*keys).applyInArrow(partition, out)

    def _recursive(self, plan: Recursive) -> DataFrame:
        """The inputs' rows brought to the driver and the fixed point computed there (each
        iteration reads what the last one added; the result is a constant frame)."""
        versions = []
        for p in plan.inputs_:
            width = len(p.schema)
            table = from_spark(
                consolidate(self.frame(p), width).toArrow(), [c.type for c in p.schema]
            )
            columns = [python_values(table.column(name(i))) for i in range(width)]
            counts = table.column(_D).to_pylist()
            rows = zip(*columns, strict=True) if width else [()] * len(counts)
            versions.append(dict(zip(rows, counts, strict=True)))
        reads = {g.name: v for g, v in zip(plan.inputs_[1:], versions[1:], strict=True)}
        run = lambda step, env: evaluate(step, env, self.as_of)  # noqa: E731
        out = fixed_point(plan, versions[0], reads, run)
        return self._constant(P.Constant(tuple(out.items()), plan.schema))


def _type(kind: SqlType) -> DataType:
    return _parse_datatype_string(spark_type(kind))


def _partition(plan: W.Window, target: pa.Schema, table: pa.Table) -> pa.Table:
    """One partition's output rows (``table``: its consolidated input) as ``target``."""
    width = len(plan.input.schema)
    columns = [python_values(table.column(name(i))) for i in range(width)]
    rows = dict(zip(zip(*columns, strict=True), table.column(_D).to_pylist(), strict=True))
    out = W.partition_output(plan, rows)
    updates = [(row, 0, count) for row, count in out]
    return frame_table(updates, plan.schema, timed=False).cast(target)


def _order(o: P.Order) -> Column:
    c = F.col(name(o.column))
    if o.desc:
        return c.desc_nulls_last() if o.nulls_at_end else c.desc_nulls_first()
    return c.asc_nulls_last() if o.nulls_at_end else c.asc_nulls_first()


def _own_equalities(frame: DataFrame, pending: list[list[int]], owner: list[int], k: int):
    """``frame`` (input ``k`` alone) filtered by the equalities among its own columns that no
    later input takes part in."""
    conditions = _equalities(pending, owner, k)
    return frame.where(fold(lambda a, b: a & b, conditions)) if conditions else frame


def _equalities(pending: list[list[int]], owner: list[int], k: int) -> list[Column]:
    """The equalities that become checkable once input ``k`` joins: each class's columns of
    inputs ``<= k`` equal its first such column. Classes are consumed as they are used."""
    out: list[Column] = []
    for klass in pending:
        ready = [i for i in klass if owner[i] <= k]
        if not any(owner[i] == k for i in ready) or len(ready) < 2:
            continue
        done = [i for i in ready if owner[i] < k]
        anchor = done[0] if done else ready[0]
        out += [
            F.col(name(anchor)) == F.col(name(i)) for i in ready if owner[i] == k and i != anchor
        ]
    return out


def _aggregate(frame: DataFrame, agg: P.Aggregate, arg: str, kind) -> Column:
    """``agg`` over a group of ``frame``, each row counted ``_diff`` times."""
    a, d = F.col(arg), F.col(_D)
    if agg.func == "array_agg" or agg.order:
        values = _ordered(agg, arg)
        if agg.func == "array_agg":
            return F.when(F.size(values) > 0, values)
        return F.when(F.size(values) > 0, F.array_join(values, agg.separator))
    if agg.func == "count":
        if agg.arg is None:
            return F.sum(d)
        if agg.distinct:
            return F.count_distinct(a)
        return F.sum(F.when(a.isNotNull(), d).otherwise(F.lit(0)))
    if agg.func in ("min", "max"):
        return F.min(a) if agg.func == "min" else F.max(a)
    if agg.func == "bool_and":
        return F.bool_and(a)
    if agg.func == "bool_or":
        return F.bool_or(a)
    if agg.func == "string_agg":
        values = (
            F.collect_set(a)
            if agg.distinct
            else F.flatten(F.collect_list(F.when(a.isNotNull(), F.array_repeat(a, d.cast("int")))))
        )
        ordered = F.sort_array(values)
        return F.when(F.size(ordered) > 0, F.array_join(ordered, agg.separator))
    exact = _exact(frame, arg, agg.arg.type if agg.arg is not None else INT8)
    if agg.func == "sum":
        total = F.sum_distinct(exact) if agg.distinct else F.sum(_times(frame, exact, arg))
        return _checked_float(total) if kind == FLOAT8 else total
    n = F.count_distinct(a) if agg.distinct else F.sum(F.when(a.isNotNull(), d))
    total = F.sum_distinct(exact) if agg.distinct else F.sum(_times(frame, exact, arg))
    if kind == FLOAT8:
        return total / n
    return total / n.cast("decimal(20,0)")


def _ordered(agg: P.Aggregate, arg: str) -> Column:
    """The values of a ``string_agg(… ORDER BY …)`` or ``array_agg`` in the reference's order:
    by the sort keys (each in its direction, NULLs where it says), ties by the value (NULLs
    first; with no ORDER BY, the values ascending, NULLs last); each row's value ``_diff``
    times (once each with DISTINCT). array_agg keeps NULL values, string_agg skips them; a
    FILTER leaves its rows out."""
    a = F.col(arg)
    keys = [F.col(f"{arg}_{j}").alias(f"k{j}") for j in range(len(agg.order))]
    item = F.struct(*keys, a.alias("v"))
    kept = a.isNotNull() if agg.func == "string_agg" else F.lit(True)
    if agg.filter is not None:
        kept = kept & F.coalesce(F.col(f"{arg}_f"), F.lit(False))
    if agg.distinct:
        items = F.collect_set(F.when(kept, item))
    else:
        repeated = F.array_repeat(item, F.col(_D).cast("int"))
        items = F.flatten(F.collect_list(F.when(kept, repeated)))
    terms = [
        (f"k{j}", o.desc, P.Order(0, o.desc, o.nulls_last).nulls_at_end)
        for j, o in enumerate(agg.order)
    ]
    terms.append(("v", False, not agg.order))

    def compare(x: Column, y: Column) -> Column:
        out: Column = F.lit(0)
        for field, desc, nulls_end in reversed(terms):
            p, q = x[field], y[field]
            before, after = (F.lit(1), F.lit(-1)) if desc else (F.lit(-1), F.lit(1))
            null = F.lit(1 if nulls_end else -1)  # x NULL, y not: x after or before y
            out = (
                F.when(p.isNull() & q.isNull(), out)
                .when(p.isNull(), null)
                .when(q.isNull(), -null)
                .when(p < q, before)
                .when(p > q, after)
                .otherwise(out)
            )
        return out

    return F.transform(F.array_sort(items, compare), lambda i: i["v"])


def _exact(frame: DataFrame, arg: str, kind) -> Column:
    """The argument of a sum or average in a type that holds its sum exactly."""
    a = F.col(arg)
    if kind == INT8:
        return a.cast("decimal(20,0)")
    if kind.integer:
        return a.cast("bigint")
    return a


def _times(frame: DataFrame, value: Column, arg: str) -> Column:
    """``value`` times the row's count, exactly (a decimal keeps its scale; a count of more
    than 10 digits overflows)."""
    kind = frame.select(value).schema[0].dataType
    d = F.col(_D)
    if isinstance(kind, DecimalType):
        return value * d.cast("decimal(10,0)")
    return value * d


def _checked_float(total: Column) -> Column:
    overflow = fail("value out of range: overflow", "22003")
    return F.when(F.abs(total) == float("inf"), overflow).otherwise(total)


def _check_scales(frame: DataFrame, plan: P.Reduce) -> None:
    """Refuse a numeric average that Spark would round to fewer than :data:`NUMERIC_SCALE`
    decimal places (a sum keeps its argument's scale)."""
    offset = len(plan.group_by)
    for i, agg in enumerate(plan.aggregates):
        kind = frame.schema[name(offset + i)].dataType
        if agg.func == "avg" and isinstance(kind, DecimalType) and kind.scale < NUMERIC_SCALE:
            raise PlanError(
                f"{agg} cannot be computed on Spark: it keeps {kind.scale} decimal places of "
                f"the {NUMERIC_SCALE} the result needs",
                sqlstate="0A000",
            )


def _check_types(collection: str, frame: DataFrame, schema: Schema) -> None:
    """Each input column holds values of the plan's type for it (any decimal for numeric)."""
    for field, column in zip(frame.schema.fields, schema, strict=True):
        expected = spark_type(column.type)
        actual = field.dataType.simpleString()
        fits = actual == expected or (
            column.type == NUMERIC and isinstance(field.dataType, DecimalType)
        )
        if not fits:
            raise PlanError(
                f"input {collection} column {field.name!r} is {actual}; the plan reads it as "
                f"{column.type}",
                sqlstate="42804",
            )
