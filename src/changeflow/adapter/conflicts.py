"""Conflicts only where they are real: a read-then-write transaction (UPDATE, DELETE, INSERT …
SELECT in a transaction) conflicts with a concurrent commit only if that commit changed what
the transaction read, not merely because it wrote the same table.

The transaction remembers each plan it evaluated and the rows it got at its read timestamp.
At commit, if a table it read was written since, the write log asks :func:`reads_unchanged`
whether the plans still give those rows just below the commit's timestamp. A plan that is
linear in its inputs (Get, Filter, Map, Project, Union, Negate) gives the same rows iff it
maps the tables' changes since the read to nothing, so only the changed rows are evaluated;
any other plan (joins, aggregates, subqueries) is evaluated again in full and compared.
:func:`reads_unaffected` asks the same of the writes committed before it in one group; a
read whose filter fixes columns that none of those writes' rows match is unaffected without
its operators being built.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from changeflow.compute import plan as P

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment

Counted = dict[tuple[Any, ...], int]
Read = tuple[P.Plan, "Counted | None"]  # None: rows not kept (a query's), found again if needed
LINEAR = (P.Get, P.Filter, P.Map, P.Project, P.Union, P.Negate)


def linear(plan: P.Plan) -> bool:
    """Is ``plan`` a sum of its inputs' rows, row by row (so changes map to changes)?"""
    return isinstance(plan, LINEAR) and all(linear(p) for p in plan.inputs())


def reads_unchanged(
    env: Environment,
    reads: Iterable[Read],
    read_ts: int,
    upper: int,
    moved: set[str],
) -> bool:
    """Does every plan of ``reads`` give, at ``upper - 1``, the rows it gave at ``read_ts``?
    ``moved``: the tables written in ``(read_ts, upper)`` (their uppers are at ``upper``);
    every other input is unchanged there."""
    from changeflow.adapter.rows import evaluate_once
    from changeflow.errors import FrontierViolation

    for plan, before in reads:
        shards = plan.collections()
        if not shards & moved:
            continue
        if linear(plan):
            changes: dict[str, Counted] = {}
            for shard in shards:
                got = env.changes(shard, read_ts, upper) if shard in moved else {}
                if got is None:
                    return False  # compacted past the read: cannot tell
                changes[shard] = got
            if evaluate_once(plan, changes, upper - 1):
                return False
        else:
            try:
                if before is None:
                    before = env.evaluate(plan, read_ts)
                if env.evaluate(plan, upper - 1) != before:
                    return False
            except FrontierViolation:
                return False  # compacted past the read: cannot tell
    return True


def reads_unaffected(reads: Iterable[Read], written: dict[str, pa.Table]) -> bool:
    """Does every plan of ``reads`` give what it gave once the update frames ``written``
    (shard -> frame) are added to its inputs? A plan that is not linear and reads one of those
    shards is taken to be affected (its transaction then waits for a later group)."""
    from changeflow.adapter.rows import counted, evaluate_once

    changes: dict[str, Counted] = {}
    for plan, _ in reads:
        shards = plan.collections()
        if not shards & written.keys():
            continue
        if not linear(plan):
            return False
        if passes_none(plan, written):
            continue
        for s in shards & written.keys() - changes.keys():
            changes[s] = counted(written[s])
        inputs = {s: changes.get(s, {}) for s in shards}
        if evaluate_once(plan, inputs, 0):
            return False
    return True


def passes_none(plan: P.Plan, frames: dict[str, pa.Table]) -> bool:
    """Does the filter above ``plan``'s only input let none of the updates of ``frames`` (shard
    -> update frame) through, by the values of the columns it fixes? Then a linear plan maps
    them to nothing, without building its operators. False where it cannot tell."""
    from changeflow.adapter.arrangements import any_passes, point

    fixed = point(plan)
    if fixed is None or fixed.shard not in frames:
        return False
    return not any_passes(frames[fixed.shard], fixed)
