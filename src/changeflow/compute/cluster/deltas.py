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
- **Keyed** ones (Reduce, Distinct, Threshold, TopK and outer joins) depend per key on that key's
  input rows only. For the keys a step touches, the operator runs (by the Spark evaluator, the
  same one hydration and recomputation use) over the key's collection at each version: before
  the step, and at each time the step changes it. A version's rows are emitted at its time and
  retracted at the key's next version, which is exact at every time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce as fold

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.cluster.index import Indexed
from changeflow.compute.cluster.index import indexable as index_types
from changeflow.compute.cluster.local import Update, frame_table
from changeflow.compute.cluster.spine import partitioned
from changeflow.compute.expr import map_columns
from changeflow.compute.spark_eval import positional_frame
from changeflow.compute.spark_expr import ExprCompiler, name, spark_type
from changeflow.compute.types import INT8, Schema
from changeflow.compute.types import Column as Col
from changeflow.compute.values import arrow_values
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


def join(
    deltas: list[DataFrame | None],
    arranged: Sequence[DataFrame | None],
    plan: P.Plan,
    small: bool,
    by: Sequence[tuple[int, ...]] = (),
    parts: int = 0,
    indexes: Sequence[Indexed | None] = (),
) -> DataFrame | None:
    """The delta of an inner join from its inputs' deltas and arrangements (the inputs'
    collections before the step). With ``small``, each term's running result goes to the
    arrangement it probes: looked up by key where the arrangement is ``indexes``' and the probe
    is by its key; else hashed to its partitions when the arrangement is partitioned by the
    probe's columns (``by``: each arrangement's, into ``parts``), else broadcast."""
    assert isinstance(plan, P.Join)
    by = by or [()] * len(deltas)
    indexes = indexes or [None] * len(deltas)
    terms = []
    for i, delta in enumerate(deltas):
        if delta is None or any(a is None for a in arranged[i + 1 :]):
            continue
        sides: dict[int, Side] = {i: Side(delta)}
        for j in range(len(deltas)):
            if j != i:
                old = _untimed(arranged[j])
                new = deltas[j] if j < i else None
                kept = new
                if new is not None and by[j] and old is not None:  # keep the partitioning
                    kept = partitioned(new, by[j], parts)
                side = union([old, kept])
                if side is None:
                    break
                sides[j] = Side(side, indexes[j], new)
        else:
            terms.append(_join_term(plan, sides, i, small, by))
    return union(terms)


@dataclass(frozen=True)
class Side:
    """One input of a delta join's term: its updates (the arrangement's, which have no time,
    and the step's own changes when they come before the term's); and, when the arrangement
    can be looked up by key, its index and the step's changes apart."""

    frame: DataFrame
    index: Indexed | None = None
    new: DataFrame | None = None


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
        index = sides[k].index
        if (
            index is not None
            and on is not None
            and mine == index.by
            and all(types[m] == types[d] for m, d in links)
        ):  # look the running result's keys up
            spark_side = empty(running.sparkSession, plan.inputs_[k].schema, False).schema
            on_keys = [name(d) for _, d in links]
            found = index.probe(running, on_keys, spark_side, widths[k], offsets[k], k)
            found = found.where(on & _own(plan, owner, k))
            new = sides[k].new
            if new is not None:  # the step's own changes of the input, before this term's
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


def indexable(plan: P.Join, k: int, by: tuple[int, ...]) -> bool:
    """May input ``k``'s arrangement, partitioned by its columns ``by``, be looked up by key
    (where a term probes it by those columns)? When Spark hashes them as they compare."""
    schema = plan.inputs_[k].schema
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


# -- keyed operators ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Keyed:
    """An operator whose output for a key depends on that key's input rows only: ``keys``
    are each input's key columns; ``versioned`` is the operator over its inputs with two
    columns more (the version and the next version), which it groups by too."""

    plan: P.Plan
    keys: tuple[tuple[int, ...], ...]
    direct: P.Plan  # the operator over Gets of its inputs (``_in0``…)
    versioned: P.Plan  # the same over the inputs with version columns
    out_data: tuple[int, ...]  # where the versioned output's data columns are
    out_versions: tuple[tuple[int, int], ...]  # where its version columns are (coalesced)

    def delta(
        self,
        deltas: list[DataFrame | None],
        arranged: list[DataFrame | None],
        small: bool,
        at: int | None,
        local: tuple[DataFrame, list[DataFrame | None]] | None = None,
    ) -> DataFrame | None:
        """The output's delta for the inputs' ``deltas`` over their ``arranged`` collections.
        ``at``: every delta is at this one time and nothing is arranged (hydration).
        ``local``: a small step's versions and changes at them, made in the driver
        (:meth:`local_versions`); no key has a NULL, so the arrangements (partitioned by their
        keys) are probed by plain equality and only the versions move."""
        if all(d is None for d in deltas):
            return None
        spark = next(d for d in deltas if d is not None).sparkSession
        schemas = [p.schema for p in self.plan.inputs()]
        if at is not None:
            frames = {
                f"_in{i}": (d if d is not None else empty(spark, schemas[i], True)).drop(TIME)
                for i, d in enumerate(deltas)
            }
            out = positional_frame(self.direct, frames)
            width = len(self.plan.schema)
            return out.select(*data(width), F.lit(at).cast("bigint").alias(TIME), DIFF)
        if local is None:
            versions = self._versions(deltas, small)
            frames = {
                f"_in{i}": self._at_versions(i, deltas[i], arranged[i], versions, schemas[i])
                for i in range(len(deltas))
            }
        else:
            versions, changed = local
            frames = {
                f"_in{i}": self._hashed(i, changed[i], arranged[i], versions, schemas[i])
                for i in range(len(deltas))
            }
        out = positional_frame(self.versioned, frames)
        cols = [F.col(name(i)).alias(name(j)) for j, i in enumerate(self.out_data)]
        version = F.coalesce(*(F.col(name(v)) for v, _ in self.out_versions))
        following = F.coalesce(*(F.col(name(n)) for _, n in self.out_versions))
        # a version's rows appear at it and go at the next (BEFORE and LAST are negative)
        moves = F.array(
            F.struct(version.alias(TIME), F.col(DIFF).alias(DIFF)),
            F.struct(following.alias(TIME), (-F.col(DIFF)).alias(DIFF)),
        )
        out = out.select(*cols, F.explode(moves).alias("_m"))
        width = len(self.out_data)
        moved = out.select(*data(width), F.col(f"_m.{TIME}").alias(TIME), F.col(f"_m.{DIFF}"))
        return moved.where(F.col(TIME) >= 0)

    def _versions(self, deltas: list[DataFrame | None], small: bool) -> DataFrame:
        """Per touched key (``_k0``…), each version ``_v`` and the next ``_nx``."""
        touched = union(
            [
                d.select(*self._key_columns(i), F.col(TIME).alias(_V))
                for i, d in enumerate(deltas)
                if d is not None
            ]
        )
        assert touched is not None
        keys = [f"_k{n}" for n in range(len(self.keys[0]))]
        before = touched.select(*keys, F.lit(BEFORE).cast("bigint").alias(_V))
        versions = touched.union(before).distinct()
        order = Window.partitionBy(*keys).orderBy(_V) if keys else Window.orderBy(_V)
        following = F.coalesce(F.lead(_V).over(order), F.lit(LAST).cast("bigint"))
        versions = versions.withColumn(_NX, following)
        return F.broadcast(versions) if small else versions

    def local_versions(
        self, changes: list[list[Update]]
    ) -> tuple[pa.Table, list[pa.Table | None]] | None:
        """A small step's touched keys with each of their versions and the next (``_k0``…,
        ``_v``, ``_nx``), and each input's ``changes`` at the versions of their key at or
        after them: made in the driver, so only the probe of the arrangements is a join.
        None when a key has a NULL (matched NULL-safe, as PostgreSQL groups) or a NaN (equal
        to itself in Spark, not in Python), or there is no key."""
        if not self.keys[0]:
            return None
        times: dict[tuple, set[int]] = {}
        for side, updates in enumerate(changes):
            for row, t, _ in updates:
                key = tuple(row[c] for c in self.keys[side])
                if None in key or any(v != v for v in key):
                    return None
                times.setdefault(key, {BEFORE}).add(t)
        if not times:
            return None
        pairs = {}
        for key, versions in times.items():
            ordered = sorted(versions)
            pairs[key] = list(zip(ordered, [*ordered[1:], LAST], strict=True))
        kinds = [self.plan.inputs()[0].schema[c].type.arrow for c in self.keys[0]]
        rows = [(*key, v, n) for key, both in pairs.items() for v, n in both]
        columns = [pa.array(arrow_values([r[n] for r in rows], k), k) for n, k in enumerate(kinds)]
        columns += [pa.array([r[i] for r in rows], pa.int64()) for i in (-2, -1)]
        names = [*(f"_k{n}" for n in range(len(kinds))), _V, _NX]
        at_versions: list[pa.Table | None] = []
        for side, updates in enumerate(changes):
            keys = self.keys[side]
            moved = [
                ((*row, v, n), 0, d)
                for row, t, d in updates
                for v, n in pairs[tuple(row[c] for c in keys)]
                if t <= v
            ]
            schema = (*self.plan.inputs()[side].schema, Col("v", INT8), Col("nx", INT8))
            at_versions.append(frame_table(moved, schema, timed=False) if moved else None)
        return pa.Table.from_arrays(columns, names=names), at_versions

    def _key_columns(self, side: int) -> list[Column]:
        return [F.col(name(c)).alias(f"_k{n}") for n, c in enumerate(self.keys[side])]

    def _at_versions(
        self,
        side: int,
        delta: DataFrame | None,
        old: DataFrame | None,
        versions: DataFrame,
        schema: Schema,
    ) -> DataFrame:
        """Input ``side``'s rows of each touched key at each of its versions, with the version
        columns after the data."""
        width = len(schema)
        same_key = [
            F.col(name(c)).eqNullSafe(versions[f"_k{n}"]) for n, c in enumerate(self.keys[side])
        ]
        on = fold(lambda a, b: a & b, same_key, F.lit(True))
        parts = []
        if old is not None:
            parts.append(old.join(versions, on))
        if delta is not None:
            parts.append(delta.join(versions, on & (delta[TIME] <= versions[_V])))
        picked = [
            p.select(
                *data(width),
                F.col(_V).alias(name(width)),
                F.col(_NX).alias(name(width + 1)),
                F.col(DIFF),
            )
            for p in parts
        ]
        return _or_empty(picked, versions.sparkSession, schema)

    def _hashed(
        self,
        side: int,
        changed: DataFrame | None,
        old: DataFrame | None,
        versions: DataFrame,
        schema: Schema,
    ) -> DataFrame:
        """:meth:`_at_versions` for versions with no NULL key and the ``changed`` rows at
        their versions made in the driver: the versions are hashed to the arrangement's
        partitions (it is partitioned by its key), so nothing else moves."""
        width = len(schema)
        same_key = [F.col(name(c)) == versions[f"_k{n}"] for n, c in enumerate(self.keys[side])]
        on = fold(lambda a, b: a & b, same_key)
        picked = [changed]
        if old is not None:
            found = old.join(versions.hint("shuffle_hash"), on)
            versioned = [F.col(_V).alias(name(width)), F.col(_NX).alias(name(width + 1))]
            picked.append(found.select(*data(width), *versioned, DIFF))
        return _or_empty(picked, versions.sparkSession, schema)


def _or_empty(frames: list[DataFrame | None], spark: SparkSession, schema: Schema) -> DataFrame:
    """The union of an input's rows at versions, or none of them (with the version columns)."""
    found = union(frames)
    if found is None:
        return empty(spark, (*schema, Col("v", INT8), Col("nx", INT8)), False)
    return found


def keyed(plan: P.Plan) -> Keyed:
    """The keyed form of a Reduce, Distinct, Threshold, TopK, Window (keyed by its partition)
    or outer Join."""
    inputs = plan.inputs()
    gets = tuple(P.Get(f"_in{i}", p.schema) for i, p in enumerate(inputs))
    tagged = tuple(
        P.Get(f"_in{i}", (*p.schema, Col("v", INT8, False), Col("nx", INT8, False)))
        for i, p in enumerate(inputs)
    )
    width = len(inputs[0].schema)
    versions = (width, width + 1)
    match plan:
        case P.Reduce(group_by=group_by, aggregates=aggregates, names=names):
            g = len(group_by)
            n = len(plan.schema)
            return Keyed(
                plan,
                (group_by,),
                P.Reduce(gets[0], group_by, aggregates, names),
                P.Reduce(tagged[0], (*group_by, *versions), aggregates, names),
                (*range(g), *range(g + 2, n + 2)),
                ((g, g + 1),),
            )
        case P.Distinct() | P.Threshold():
            every = tuple(range(width))
            kind = type(plan)
            return Keyed(plan, (every,), kind(gets[0]), kind(tagged[0]), every, (versions,))
        case P.TopK(group_by=group_by, order_by=order_by, limit=limit, offset=offset):
            return Keyed(
                plan,
                (group_by,),
                P.TopK(gets[0], group_by, order_by, limit, offset),
                P.TopK(tagged[0], (*group_by, *versions), order_by, limit, offset),
                tuple(range(width)),
                (versions,),
            )
        case P.Join(equivalences=classes, kind=kind, residual=residual) if kind != "inner":
            return _outer(plan, gets, tagged, classes, kind, residual)
        case W.Window(partition_by=by, order_by=order_by, functions=functions, names=names):
            added = range(width + 2, width + 2 + len(functions))  # after the versions
            return Keyed(
                plan,
                (by,),
                W.Window(gets[0], by, order_by, functions, names),
                W.Window(tagged[0], (*by, *versions), order_by, functions, names),
                (*range(width), *added),
                (versions,),
            )
    raise PlanError(f"{type(plan).__name__} is not a keyed operator")


def _outer(
    plan: P.Join,
    gets: tuple[P.Get, ...],
    tagged: tuple[P.Get, ...],
    classes: tuple[tuple[int, ...], ...],
    kind: str,
    residual: object,
) -> Keyed:
    """An outer join keyed by its equivalences: the right input's columns move two places
    right to make room for the left input's version columns, which must equal the right's."""
    left, right = (len(p.schema) for p in plan.inputs_)
    keys: tuple[list[int], list[int]] = ([], [])
    for klass in classes:
        lo = [i for i in klass if i < left]
        hi = [i - left for i in klass if i >= left]
        if lo and hi:
            keys[0].append(lo[0])
            keys[1].append(hi[0])

    def moved(i: int) -> int:
        return i if i < left else i + 2

    shifted = tuple(tuple(map(moved, klass)) for klass in classes)
    shifted += ((left, left + 2 + right), (left + 1, left + 3 + right))
    moved_residual = map_columns(residual, moved) if residual is not None else None
    return Keyed(
        plan,
        (tuple(keys[0]), tuple(keys[1])),
        P.Join(gets, classes, kind, residual),  # type: ignore[arg-type]
        P.Join(tagged, shifted, kind, moved_residual),  # type: ignore[arg-type]
        (*range(left), *range(left + 2, left + 2 + right)),
        ((left, left + 1), (left + 2 + right, left + 3 + right)),
    )
