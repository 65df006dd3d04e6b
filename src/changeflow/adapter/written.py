"""A transaction's own writes, as its later statements read them: a write's key check
(:mod:`~changeflow.adapter.keyed`) and an UPDATE or DELETE (:func:`with_own_writes`) see the
table as the transaction leaves it. Each table's written frames are counted once as they come
and indexed by the keys of its constraints, so a transaction of many statements (a pipeline's
implicit one) costs each statement its own rows, not all the rows written before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from changeflow.adapter.arrangements import point
from changeflow.adapter.conflicts import linear
from changeflow.adapter.rows import counted, evaluate_once
from changeflow.compute import plan as P

if TYPE_CHECKING:
    from changeflow.adapter.constraints import Unique
    from changeflow.adapter.environment import Environment

Row = tuple[Any, ...]
Counted = dict[Row, int]


class Written:
    """One table's rows written by a transaction (summed), and for each constraint the rows
    of each key."""

    def __init__(self) -> None:
        self.frames = 0  # the transaction's frames of the table counted so far
        self.rows: Counted = {}
        self.by_key: dict[tuple[Unique, Row], set[Row]] = {}
        self.unique: tuple[Unique, ...] = ()

    def update(self, frames: list[pa.Table], unique: tuple[Unique, ...] = ()) -> Written:
        """Count the frames written since the last call (all of them again if the
        constraints changed); this."""
        if unique != self.unique:
            self.frames, self.rows, self.by_key, self.unique = 0, {}, {}, unique
        for frame in frames[self.frames :]:
            for row, c in counted(frame).items():
                total = self.rows.get(row, 0) + c
                if total:
                    self.rows[row] = total
                else:
                    self.rows.pop(row, None)
                for u in unique:
                    if (k := u.key(row)) is not None:
                        self.by_key.setdefault((u, k), set()).add(row)
        self.frames = len(frames)
        return self

    def with_keys(self, keys: set[tuple[Unique, Row]]) -> Counted:
        """The written rows (with their counts) whose key of a constraint is in ``keys``."""
        found = {r for k in keys for r in self.by_key.get(k, ())}
        return {r: self.rows[r] for r in found if r in self.rows}


def written(
    cache: dict[str, Written], writes: dict[str, list[pa.Table]], shard: str, unique: tuple = ()
) -> Written:
    """The transaction's :class:`Written` of ``shard``, brought up to date with ``writes``."""
    return cache.setdefault(shard, Written()).update(writes.get(shard, []), unique)


def with_own_writes(
    env: Environment,
    plan: P.Plan,
    ts: int,
    rows: Counted,
    cache: dict[str, Written],
    writes: dict[str, list[pa.Table]],
    timeout: float = 30.0,
) -> Counted:
    """``plan``'s rows over its inputs as a transaction leaves them: ``rows`` (what it gives
    at ``ts``) with the transaction's earlier ``writes`` (shard -> update frames) added, so a
    second UPDATE of a row in one transaction changes what the first made of it. A linear
    plan adds what it makes of the written rows (those its equalities can pass, where it
    fixes columns of its one input); another is evaluated again on the whole inputs."""
    shards = plan.collections()
    mine = {s: written(cache, writes, s).rows for s in shards if writes.get(s)}
    if not mine:
        return rows
    if linear(plan):
        fixed = point(plan)
        if fixed is not None and fixed.shard in mine:
            mine[fixed.shard] = {
                r: c
                for r, c in mine[fixed.shard].items()
                if all(r[i] == v for i, v in fixed.equal.items())
            }
        out = dict(rows)
        for row, c in evaluate_once(plan, {s: mine.get(s, {}) for s in shards}, ts).items():
            out[row] = out.get(row, 0) + c
        return {r: c for r, c in out.items() if c}
    inputs: dict[str, Counted] = {}
    for get in gets_once(plan):
        whole = dict(env.evaluate(get, ts, timeout))
        for row, c in mine.get(get.name, {}).items():
            whole[row] = whole.get(row, 0) + c
        inputs[get.name] = {r: c for r, c in whole.items() if c}
    return evaluate_once(plan, inputs, ts)


def gets_once(plan: P.Plan) -> list[P.Get]:
    """The inputs ``plan`` reads, one Get each."""
    from changeflow.adapter.environment import gets

    return list({g.name: g for g in gets(plan)}.values())
