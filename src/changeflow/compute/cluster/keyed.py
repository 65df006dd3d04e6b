"""Keyed operators on Spark: Reduce, Distinct, Threshold, TopK, Window and outer joins depend per
key on that key's input rows only. For the keys a step touches, the operator runs (by the Spark
evaluator, the same one hydration and recomputation use) over the key's collection at each
version: before the step, and at each time the step changes it. A version's rows are emitted at
its time and retracted at the key's next version, which is exact at every time.
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
from changeflow.compute.cluster.deltas import Arranged, data, empty, union
from changeflow.compute.cluster.index import Indexed
from changeflow.compute.cluster.local import Update, frame_table
from changeflow.compute.expr import map_columns
from changeflow.compute.spark_eval import positional_frame
from changeflow.compute.spark_expr import name
from changeflow.compute.types import INT8, Schema
from changeflow.compute.types import Column as Col
from changeflow.compute.values import arrow_values
from changeflow.errors import PlanError
from changeflow.updates import DIFF, TIME

BEFORE = -1  # the version of a key before the step
LAST = -2  # "no next version": the key's last version in the step
_V, _NX = "_v", "_nx"


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
        arranged: Sequence[Arranged],
        small: bool,
        at: int | None,
        local: tuple[DataFrame, list[DataFrame | None]] | None = None,
        indexes: Sequence[Indexed | None] = (),
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
            arranged = [a() if callable(a) else a for a in arranged]
            versions = self._versions(deltas, small)
            frames = {
                f"_in{i}": self._at_versions(i, deltas[i], arranged[i], versions, schemas[i])
                for i in range(len(deltas))
            }
        else:
            versions, changed = local
            looked = indexes or [None] * len(deltas)
            frames = {
                f"_in{i}": self._hashed(i, changed[i], arranged[i], versions, schemas[i], looked[i])
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
        old: Arranged,
        versions: DataFrame,
        schema: Schema,
        index: Indexed | None = None,
    ) -> DataFrame:
        """:meth:`_at_versions` for versions with no NULL key and the ``changed`` rows at
        their versions made in the driver: the versions are hashed to the arrangement's
        partitions (it is partitioned by its key), so nothing else moves; or they look their
        key up in its ``index``."""
        width = len(schema)
        keys = [f"_k{n}" for n in range(len(self.keys[side]))]
        same = [F.col(name(c)) == F.col(k) for k, c in zip(keys, self.keys[side], strict=True)]
        on = fold(lambda a, b: a & b, same)
        versioned = [F.col(_V).alias(name(width)), F.col(_NX).alias(name(width + 1))]
        picked = [changed]
        found = None
        if index is not None and self._same_key_types(side):
            struct = index.side() or empty(versions.sparkSession, schema, False).schema
            found = index.probe(versions, keys, struct, 0, {DIFF: DIFF})
        if found is not None:
            found = found.where(on)
            picked.append(found.select(*data(width), *versioned, DIFF))
        elif old is not None:
            old = old() if callable(old) else old
            found = old.join(versions.hint("shuffle_hash"), on)
            picked.append(found.select(*data(width), *versioned, DIFF))
        return _or_empty(picked, versions.sparkSession, schema)

    def _same_key_types(self, side: int) -> bool:
        """Are input ``side``'s key columns of the types of the first input's (which the
        versions' keys have)?"""
        inputs = self.plan.inputs()
        mine = [inputs[side].schema[c].type for c in self.keys[side]]
        return mine == [inputs[0].schema[c].type for c in self.keys[0]]


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
