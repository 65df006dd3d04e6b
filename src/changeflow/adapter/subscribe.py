"""SUBSCRIBE: a query's changes as they happen, as Materialize's SUBSCRIBE gives them.

Rows are ``(mz_timestamp, [mz_progressed,] mz_diff, columns…)`` in time order: first the
query's contents at the AS OF time, then each later time's changes. With ``PROGRESS`` a row
with ``mz_progressed`` true and NULL elsewhere says that every change below its timestamp has
been given. ``UP TO t`` ends the subscription once every change below ``t`` is out.

The query runs on the compute layer's operators in this process, fed by subscriptions to its
input shards; each poll first makes its inputs readable at the timeline's latest timestamp
(tables advanced, sources ingested, views stepped), so changes flow while the caller reads.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from changeflow.adapter.environment import Environment
from changeflow.compute import plan as P
from changeflow.compute.dataflow import update_rows
from changeflow.compute.operators import Inputs, build
from changeflow.compute.pads import padded_rows
from changeflow.compute.types import BOOL, INT8, Column, Schema
from changeflow.compute.values import plain
from changeflow.errors import Timeout
from changeflow.storage.read import ReadCapability
from changeflow.storage.txns import WRITER
from changeflow.time import Antichain, to_bound


def columns(schema: Schema, progress: bool) -> Schema:
    """The columns of a subscription's rows."""
    head = [Column("mz_timestamp", INT8, False)]
    if progress:
        head.append(Column("mz_progressed", BOOL, False))
    head.append(Column("mz_diff", INT8, True))
    return (*head, *(Column(c.name, c.type, True, c.scale, c.typmod, c.text_type) for c in schema))


class Subscribe:
    """An open subscription (see the module docstring); iterate it, or :meth:`poll`."""

    def __init__(
        self,
        env: Environment,
        plan: P.Plan,
        timeline: str,
        as_of: int,
        up_to: int | None = None,
        progress: bool = False,
    ) -> None:
        self.env, self.plan, self.timeline = env, plan, timeline
        self.lock = threading.Lock()
        self.as_of, self.up_to, self.progress = as_of, up_to, progress
        self.columns = columns(plan.schema, progress)
        self.inputs = Inputs()
        self.root = build(plan, self.inputs, at=as_of)
        self.frontier = as_of  # every change below this was given
        self.done = up_to is not None and up_to <= as_of
        machine = env.storage.machine
        self.subscriptions = {}
        for shard in sorted(plan.collections()):
            gid = machine.entry(shard).id
            cap = ReadCapability(machine, gid, shard, WRITER, Antichain([as_of]), WRITER)
            self.subscriptions[shard] = env.storage.subscribe_at(cap, timeout=None)
        self.uppers: dict[str, int | None] = dict.fromkeys(self.subscriptions, as_of)
        if not self.subscriptions:  # a constant query: complete at every time
            self.uppers = {}

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while not self.done:
            yield from self.poll(timeout=1.0)

    def poll(self, timeout: float = 0.0) -> list[tuple[Any, ...]]:
        """The rows that are ready, waiting up to ``timeout`` seconds for some; [] if none."""
        deadline = time.monotonic() + timeout
        while not self.done:
            rows = self._step()
            if rows or time.monotonic() >= deadline:
                return rows
            time.sleep(0.05)
        return []

    def _step(self) -> list[tuple[Any, ...]]:
        with self.lock:  # this subscription's own state; the items read lock their steps
            shards = set(self.subscriptions)
            if shards:
                ts = self.env.read_ts(self.timeline, shards)
                with contextlib.suppress(Timeout):  # a view behind: give what is complete
                    self.env.make_readable(shards, ts, deadline=time.monotonic() + 0.05)
            for shard, sub in self.subscriptions.items():
                while (got := sub.next(0.0)) is not None:
                    updates, upper = got
                    self.inputs.feed(shard, update_rows(updates))
                    self.uppers[shard] = to_bound(upper)
        present = [u for u in self.uppers.values() if u is not None]
        meet = min(present) if present else None
        if self.up_to is not None:
            meet = self.up_to if meet is None else min(meet, self.up_to)
        if meet is not None and meet <= self.frontier:
            return []
        out = self.root.step(meet if meet is not None else 2**63 - 1)
        rows = self._rows(out)
        if meet is None or (self.up_to is not None and meet >= self.up_to):
            self.done = True
        else:
            if self.progress:
                rows.append((meet, True, None, *([None] * len(self.plan.schema))))
            self.frontier = meet
        return rows

    def _rows(self, updates: list[tuple[tuple[Any, ...], int, int]]) -> list[tuple[Any, ...]]:
        summed: dict[tuple[int, tuple[Any, ...]], int] = defaultdict(int)
        for row, t, diff in updates:
            row = tuple(plain(v) if isinstance(v, Decimal) else v for v in row)
            summed[(max(t, self.as_of), row)] += diff
        ordered = sorted((k for k, d in summed.items() if d), key=lambda k: k[0])
        mark = (False,) if self.progress else ()
        return padded_rows([(t, *mark, summed[(t, row)], *row) for t, row in ordered], self.columns)
