"""Deltas on Spark: the output changes of each operator for one step, from its inputs' changes.

Every frame here has a plan's columns named by position (``c0``…), then ``_time`` and ``_diff``:
the updates of one step, at their times (a temporal filter's retraction may lie beyond the
step). Arrangements (an operator's accumulated input) have no ``_time``. Operators:

- **Linear** ones (Map, Filter, Project, Union, Negate, a temporal filter, a one-input join) map
  each update on its own, so their delta is the same operator applied to the input's delta.
- **Inner joins** are delta joins, as Materialize plans them: with ``Xj = Aj + dAj``, the change
  of ``A1 ⋈ … ⋈ An`` is the sum over ``i`` of ``X1 ⋈ … ⋈ X(i-1) ⋈ dAi ⋈ A(i+1) ⋈ … ⋈ An``, each
  pair at the later of its updates' times (arranged rows have none). Only the inputs are
  arranged, never an intermediate; each term starts from a delta and is broadcast into the
  arrangements it probes.
- **Keyed** ones (Reduce, Distinct, Threshold, TopK and outer joins): see ``keyed``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from functools import reduce as fold

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from changeflow.compute import plan as P
from changeflow.compute.cluster.index import Indexed
from changeflow.compute.cluster.index import indexable as index_types
from changeflow.compute.cluster.layout import partitioned
from changeflow.compute.spark_expr import ExprCompiler, name, spark_type
from changeflow.compute.types import Column as Col
from changeflow.compute.types import Schema
from changeflow.errors import PlanError
from changeflow.updates import DIFF, TIME

BEFORE = -1  # the version of a key before the step
LAST = -2  # "no next version": the key's last version in the step
_V, _NX = "_v", "_nx"


def data(width: int, offset: int = 0) -> list[Column]:
    """The data columns ``c{offset}``… of a frame, ``width`` of them."""
    return [F.col(name(offset + i)) for i in range(width)]


def union(frames: Sequence[DataFrame | None]) -> DataFrame | None:
    present = [f for f in frames if f is not None]
    return fold(DataFrame.union, present) if present else None


def empty(spark: SparkSession, schema: Schema, timed: bool) -> DataFrame:
    """A frame of no updates with the columns of ``schema``."""
    cols = [f"{name(i)} {_spark_type(c)}" for i, c in enumerate(schema)]
    cols += [f"{TIME} bigint"] if timed else []
    return spark.createDataFrame([], ", ".join([*cols, f"{DIFF} bigint"]))


def _spark_type(c: Col) -> str:
    kind = spark_type(c.type)
    return "string" if kind == "void" else kind


def consolidated(frame: DataFrame, width: int) -> DataFrame:
    """One row per distinct row and time, counts summed, zeros dropped."""
    keys = [*(name(i) for i in range(width)), TIME]
    return frame.groupBy(*keys).agg(F.sum(DIFF).alias(DIFF)).where(F.col(DIFF) != 0)


# -- linear operators --------------------------------------------------------------------------


def linear(plan: P.Plan, inputs: list[DataFrame | None]) -> DataFrame | None:
    """The delta of a linear operator over its inputs' deltas (None: no change)."""
    if isinstance(plan, P.Union):
        return union(inputs)
    (frame,) = inputs
    if frame is None:
        return None
    match plan:
        case P.Map(exprs=exprs):
            width = len(plan.input.schema)
            cc = ExprCompiler(frame)
            added = [cc.compile(e).alias(name(width + i)) for i, (_, e) in enumerate(exprs)]
            return frame.select(*data(width), *added, TIME, DIFF)
        case P.Filter(predicates=predicates):
            cc = ExprCompiler(frame)
            return frame.where(fold(lambda a, b: a & b, (cc.compile(p) for p in predicates)))
        case P.Project(columns=columns):
            cols = [F.col(name(i)).alias(name(j)) for j, i in enumerate(columns)]
            return frame.select(*cols, TIME, DIFF)
        case P.Negate():
            return frame.withColumn(DIFF, -F.col(DIFF))
        case P.TemporalFilter():
            return _window(plan, frame)
        case P.Join():  # one input: the equivalences and residual filter it
            return join([frame], [None], plan, small=False)
    raise PlanError(f"{type(plan).__name__} is not a linear operator")


def _window(plan: P.TemporalFilter, frame: DataFrame) -> DataFrame:
    """Each row from ``max(t, lower)`` until ``max(t, upper)``: an insertion and a retraction;
    nothing if a bound is NULL or the window is empty (as the in-process operator does)."""
    cc = ExprCompiler(frame)
    t = F.col(TIME)
    lows = [cc.compile(e).cast("bigint") for e in plan.lower]
    highs = [cc.compile(e).cast("bigint") for e in plan.upper]
    known = fold(lambda a, b: a & b, (c.isNotNull() for c in (*lows, *highs)), F.lit(True))
    start = F.greatest(t, *lows) if lows else t
    width = len(plan.schema)
    if not highs:
        return frame.where(known).select(*data(width), start.alias(TIME), DIFF)
    end = F.greatest(t, F.least(*highs) if len(highs) > 1 else highs[0])
    kept = frame.where(known & (end > start))
    inserted = kept.select(*data(width), start.alias(TIME), DIFF)
    return inserted.union(kept.select(*data(width), end.alias(TIME), (-F.col(DIFF)).alias(DIFF)))


# -- inner joins -------------------------------------------------------------------------------


Arranged = DataFrame | Callable[[], DataFrame | None] | None  # a frame, made when needed


def join(
    deltas: list[DataFrame | None],
    arranged: Sequence[Arranged],
    plan: P.Plan,
    small: bool,
    by: Sequence[tuple[int, ...]] = (),
    parts: int = 0,
    indexes: Sequence[Indexed | None] = (),
    tables: Sequence[pa.Table | None] = (),
) -> DataFrame | None:
    """The delta of an inner join from its inputs' deltas and arrangements (the inputs'
    collections before the step; None when empty, or made only if a term scans them). With
    ``small``, each term's running result goes to the arrangement it probes: looked up by key
    where the arrangement is ``indexes``' and the probe is by its key; else hashed to its
    partitions when the arrangement is partitioned by the probe's columns (``by``: each
    arrangement's, into ``parts``), else broadcast. ``tables`` are the small step's deltas in
    the driver, which a lookup pairs in its tasks."""
    assert isinstance(plan, P.Join)
    by = by or [()] * len(deltas)
    indexes = indexes or [None] * len(deltas)
    tables = tables or [None] * len(deltas)
    terms = []
    for i, delta in enumerate(deltas):
        if delta is None or any(a is None for a in arranged[i + 1 :]):
            continue
        sides: dict[int, Side] = {i: Side(delta)}
        for j in range(len(deltas)):
            if j != i:
                new = deltas[j] if j < i else None
                if arranged[j] is None and new is None:
                    break
                scanned = partial(_scanned, arranged[j], new, by[j], parts)
                sides[j] = Side(scanned, indexes[j], new, tables[j] if j < i else None)
        else:
            terms.append(_join_term(plan, sides, i, small, by))
    return union(terms)


def _scanned(held: Arranged, new: DataFrame | None, by: tuple[int, ...], parts: int) -> DataFrame:
    """An input's arranged updates (untimed) and the step's ``new`` ones, as one frame."""
    old = _untimed(held() if callable(held) else held)
    if new is not None and by and old is not None:  # keep the partitioning
        new = partitioned(new, by, parts)
    side = union([old, new])
    assert side is not None
    return side


@dataclass
class Side:
    """One input of a delta join's term: its updates (the arrangement's, which have no time,
    and the step's own changes when they come before the term's; made when a term scans
    them); and, when the arrangement can be looked up by key, its index and the step's
    changes apart."""

    made: DataFrame | Callable[[], DataFrame]
    index: Indexed | None = None
    new: DataFrame | None = None
    new_table: pa.Table | None = None  # ``new`` in the driver, when it is there

    @cached_property
    def frame(self) -> DataFrame:
        return self.made() if callable(self.made) else self.made


def arrangement_keys(plan: P.Join) -> list[tuple[int, ...]]:
    """The columns to partition each input's arrangement by: those its probe uses in the
    delta join's term of the last other input (where the largest inputs usually are)."""
    widths = [len(p.schema) for p in plan.inputs_]
    offsets = [sum(widths[:k]) for k in range(len(widths))]
    owner = [k for k, w in enumerate(widths) for _ in range(w)]
    keys: dict[int, tuple[int, ...]] = {}
    for first in reversed(range(len(widths))):
        joined = {first}
        while len(joined) < len(widths):
            k = _next_side(plan, owner, joined)
            mine = tuple(m - offsets[k] for m, _ in _links(plan, owner, joined, k))
            keys.setdefault(k, mine)
            joined.add(k)
    return [keys.get(k, ()) for k in range(len(widths))]


def _untimed(frame: DataFrame | None) -> DataFrame | None:
    """An arrangement as updates that have been there all along (no time)."""
    if frame is None:
        return None
    width = len(frame.columns) - 1
    return frame.select(*data(width), F.lit(None).cast("bigint").alias(TIME), DIFF)


def _join_term(
    plan: P.Join,
    sides: dict[int, Side],
    first: int,
    small: bool,
    by: Sequence[tuple[int, ...]],
) -> DataFrame:
    widths = [len(p.schema) for p in plan.inputs_]
    offsets = [sum(widths[:k]) for k in range(len(widths))]
    owner = [k for k, w in enumerate(widths) for _ in range(w)]

    def renamed(k: int, frame: DataFrame) -> DataFrame:
        return frame.select(
            *(F.col(name(i)).alias(name(offsets[k] + i)) for i in range(widths[k])),
            F.col(TIME).alias(f"_t{k}"),
            F.col(DIFF).alias(f"_d{k}"),
        ).where(_own(plan, owner, k))

    types = [c.type for p in plan.inputs_ for c in p.schema]
    joined = {first}
    running = renamed(first, sides[first].frame)
    while len(joined) < len(widths):
        k = _next_side(plan, owner, joined)
        links = _links(plan, owner, joined, k)
        equal = [F.col(name(m)) == F.col(name(d)) for m, d in links]
        on = fold(lambda a, b: a & b, equal) if equal else None
        mine = tuple(m - offsets[k] for m, _ in links)
        found = None
        index = sides[k].index
        if (
            index is not None
            and on is not None
            and mine == index.by
            and all(types[m] == types[d] for m, d in links)
        ):  # look the running result's keys up
            spark = running.sparkSession
            spark_side = index.side() or empty(spark, plan.inputs_[k].schema, False).schema
            on_keys = [name(d) for _, d in links]
            values = {DIFF: f"_d{k}"}
            # the step's own changes of the input, before this term's, paired by the lookup
            new = sides[k].new_table
            time = f"_t{k}"
            found = index.probe(running, on_keys, spark_side, offsets[k], values, time, new)
        if found is not None:
            found = found.where(on & _own(plan, owner, k))
            new = sides[k].new
            if new is not None and sides[k].new_table is None:  # else the lookup paired it
                found = found.unionByName(running.join(F.broadcast(renamed(k, new)), on))
            running = found
        else:
            side = renamed(k, sides[k].frame)
            if on is None:
                running = running.crossJoin(side)
            elif small and by[k] == mine:
                running = side.join(running.hint("shuffle_hash"), on)  # only the change moves
            elif small:  # the running result is small: broadcast it into the arrangement
                running = side.join(F.broadcast(running), on)
            else:
                running = running.join(side, on)
        joined.add(k)
    if plan.residual is not None:
        running = running.where(ExprCompiler(running).compile(plan.residual))
    times = [F.col(f"_t{k}") for k in range(len(widths))]
    time = F.greatest(*times) if len(times) > 1 else times[0]
    count = fold(lambda a, b: a * b, (F.col(f"_d{k}") for k in range(len(widths))))
    return running.select(*data(sum(widths)), time.alias(TIME), count.alias(DIFF))


def indexable(schema: Schema, by: tuple[int, ...]) -> bool:
    """May an arrangement of ``schema`` partitioned by its columns ``by`` be looked up by key
    (where it is probed by those columns)? When Spark hashes them as they compare."""
    return by != () and index_types([schema[c].type for c in by])


def _next_side(plan: P.Join, owner: list[int], joined: set[int]) -> int:
    """The next input to join: one an equivalence connects to those joined, else the first."""
    rest = [k for k in range(len(plan.inputs_)) if k not in joined]
    for klass in plan.equivalences:
        sides = {owner[i] for i in klass}
        if sides & joined:
            for k in rest:
                if k in sides:
                    return k
    return rest[0]


def _own(plan: P.Join, owner: list[int], k: int) -> Column:
    """The equalities among input ``k``'s own columns (NULL equals nothing)."""
    out = [F.lit(True)]
    for klass in plan.equivalences:
        mine = [i for i in klass if owner[i] == k]
        out += [F.col(name(i)) == F.col(name(mine[0])) for i in mine[1:]]
        if len(mine) == 1 and len(klass) == 1:
            out.append(F.col(name(mine[0])).isNotNull())
    return fold(lambda a, b: a & b, out)


def _links(plan: P.Join, owner: list[int], joined: set[int], k: int) -> list[tuple[int, int]]:
    """The equalities that join input ``k`` to the inputs ``joined``: (its column, theirs)."""
    out = []
    for klass in plan.equivalences:
        mine = [i for i in klass if owner[i] == k]
        done = [i for i in klass if owner[i] in joined]
        if mine and done:
            out.append((mine[0], done[0]))
    return out
