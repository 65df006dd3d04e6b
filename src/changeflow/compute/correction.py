"""The Correction buffer: updates a sink holds until they are written, read by upper.

Updates are kept columnar, in *chains*: consolidated Arrow record batches (*chunks*, at most
``chunk_rows`` each) sorted by ``(time, data)``. Chains live in three places:

- the *bucket chain*: times at or beyond the *boundary* (the largest read upper so far),
  partitioned into buckets of exponentially growing time ranges, each a list of chains in which
  every chain holds at least ``chain_proportionality`` times as many updates as the next. A read
  peels off only the buckets below its upper, so far-future updates (a temporal filter's
  retractions) are never touched by reads near the present;
- ``pending_low``: chains of times below the boundary (mostly the negated read-back);
- ``emitted``: the one chain that the last read returned.

Small inserts collect in a stage until a chunk is full. Updates are removed only by inserting
their negation. Times before ``since`` are clamped on insert and advanced on read.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.errors import FrontierViolation
from changeflow.storage.frames import frame_schema, sortable, to_frame
from changeflow.time import Antichain, Bound, show_bound, to_bound
from changeflow.updates import DIFF, TIME


class Chain:
    """Consolidated updates in ``(time, data)`` order, as chunks of bounded size."""

    __slots__ = ("chunks", "times", "lasts", "count")

    def __init__(self, chunks: Iterable[pa.RecordBatch] = ()) -> None:
        self.chunks = [c for c in chunks if c.num_rows]
        self.times = [c.column(TIME).to_numpy() for c in self.chunks]
        self.lasts = [int(t[-1]) for t in self.times]
        self.count = sum(c.num_rows for c in self.chunks)

    @classmethod
    def from_table(cls, table: pa.Table, chunk_rows: int) -> Chain:
        return cls(table.to_batches(max_chunksize=chunk_rows))

    @property
    def first(self) -> int:
        return int(self.times[0][0])

    @property
    def last(self) -> int:
        return self.lasts[-1]

    def split(self, upper: Bound) -> tuple[Chain, Chain]:
        """The updates before ``upper`` and the rest; whole chunks are shared, and at most the
        one chunk that straddles ``upper`` is sliced (without copying)."""
        if upper is None or not self.count or self.last < upper:
            return self, Chain()
        if self.first >= upper:
            return Chain(), self
        i = bisect_left(self.lasts, upper)  # the first chunk with a time at or beyond upper
        k = int(np.searchsorted(self.times[i], upper, "left"))
        below = [*self.chunks[:i], self.chunks[i].slice(0, k)]
        above = [self.chunks[i].slice(k), *self.chunks[i + 1 :]]
        return Chain(below), Chain(above)

    def table(self, schema: pa.Schema) -> pa.Table:
        return pa.Table.from_batches(self.chunks, schema)


@dataclass
class Bucket:
    """Chains of times in ``[lo, hi)``, largest first (the chain invariant)."""

    lo: int
    hi: Bound
    chains: list[Chain] = field(default_factory=list)


class Correction:
    """See the module docstring. ``schema`` is the data columns' Arrow schema."""

    def __init__(
        self, schema: pa.Schema, chunk_rows: int = 8192, chain_proportionality: int = 3
    ) -> None:
        self.schema = schema
        self.frame = frame_schema(schema)
        self.keys = [TIME, *schema.names]
        self.chunk_rows = chunk_rows
        self.proportionality = chain_proportionality
        self.since: Bound = 0
        self.boundary = 0
        self.buckets = [Bucket(0, None)]
        self.pending_low: list[Chain] = []
        self.emitted = Chain()
        self.stage: list[pa.Table] = []
        self.staged = 0

    # -- the operations --------------------------------------------------------------------

    def insert(self, updates: Any) -> None:
        """Add updates (an update frame or ``(data, time, diff)`` triples)."""
        self._stage(to_frame(updates, self.schema, "correction"), negate=False)

    def insert_negated(self, updates: Any) -> None:
        """Add the negation of ``updates``: how updates leave the buffer."""
        self._stage(to_frame(updates, self.schema, "correction"), negate=True)

    def updates_before(self, upper: int | Antichain | None) -> pa.Table:
        """The consolidated updates at times before ``upper``, in ``(time, data)`` order, with
        times advanced to ``since``. Nothing is removed."""
        self._consolidate_before(to_bound(upper, "a read's upper"))
        return self.emitted.table(self.frame)

    def written(self) -> None:
        """The updates the last read returned are in the output now: they leave the buffer
        (as their negation read back would take them out)."""
        self.emitted = Chain()

    def advance_since(self, since: int | Antichain | None) -> None:
        """Let times before ``since`` advance to it (on reads); never backwards."""
        since = to_bound(since, "the correction's since")
        if self.since is None or (since is not None and since < self.since):
            raise FrontierViolation(
                f"correction: since cannot move back from {show_bound(self.since)} to "
                f"{show_bound(since)}"
            )
        self.since = since
        if since is None:  # nothing can be read any more: keep nothing
            self.buckets = [Bucket(self.boundary, None)]
            self.pending_low, self.emitted, self.stage, self.staged = [], Chain(), [], 0

    def consolidate_at_since(self) -> None:
        """Merge every update at or before ``since`` into one chain, advanced to ``since``."""
        if self.since is not None:
            self._consolidate_before(self.since + 1)

    def __len__(self) -> int:
        """How many updates are held (staged ones included, before consolidation)."""
        return self.staged + sum(c.count for c in self._chains())

    def _chains(self) -> list[Chain]:
        return [*self.pending_low, self.emitted, *(c for b in self.buckets for c in b.chains)]

    # -- staging and routing ---------------------------------------------------------------

    def _stage(self, table: pa.Table, negate: bool) -> None:
        if self.since is None or not table.num_rows:
            return
        if negate:
            table = table.set_column(
                len(self.schema) + 1, self.frame.field(DIFF), pc.negate(table.column(DIFF))
            )
        if self.since:  # clamp times before since to it
            times = pc.max_element_wise(table.column(TIME), self.since)
            table = table.set_column(len(self.schema), self.frame.field(TIME), times)
        self.stage.append(table)
        self.staged += table.num_rows
        if self.staged >= self.chunk_rows:
            self._flush()

    def _flush(self) -> None:
        if not self.stage:
            return
        table = pa.concat_tables(self.stage) if len(self.stage) > 1 else self.stage[0]
        self.stage, self.staged = [], 0
        self._route(self._merge_tables(table))

    def _route(self, chain: Chain) -> None:
        """Put a chain where its times belong: pending_low or the buckets."""
        low, chain = chain.split(self.boundary)
        if low.count:
            self.pending_low.append(low)
            self._restore(self.pending_low)
        at = bisect_right([b.lo for b in self.buckets], chain.first) - 1 if chain.count else 0
        while chain.count:
            bucket = self.buckets[at]
            piece, chain = chain.split(bucket.hi)
            if piece.count:
                bucket.chains.append(piece)
                self._restore(bucket.chains)
            at += 1

    def _restore(self, chains: list[Chain]) -> None:
        """Merge the last chains until each holds ``proportionality`` times the next."""
        while len(chains) > 1 and chains[-2].count < self.proportionality * chains[-1].count:
            merged = self._merge([chains.pop(), chains.pop()], None)
            if merged.count:
                chains.append(merged)
        if chains and not chains[-1].count:
            chains.pop()

    # -- reading ---------------------------------------------------------------------------

    def _consolidate_before(self, upper: Bound) -> None:
        """Make ``emitted`` the consolidated updates before ``upper``, advanced to ``since``."""
        if self.since is None:
            self.emitted = Chain()
            return
        staged = self._unstage(upper)
        collected = self._peel(upper)
        rest = []
        for chain in [*self.pending_low, self.emitted]:
            below, above = chain.split(upper)
            collected.append(below)
            rest.append(above)
        self.pending_low, self.emitted = [], Chain()
        for chain in rest:
            if chain.count:
                self._route(chain)
        merged = self._merge(collected, self.since, staged)
        self.emitted, later = merged.split(upper)
        if later.count:  # advanced to a since at or beyond upper: not readable yet
            self._route(later)

    def _unstage(self, upper: Bound) -> list[pa.Table]:
        """Take the staged updates before ``upper`` (they go straight into the read's merge)."""
        if not self.stage:
            return []
        table = pa.concat_tables(self.stage) if len(self.stage) > 1 else self.stage[0]
        if upper is None:
            self.stage, self.staged = [], 0
            return [table]
        before = pc.less(table.column(TIME), upper)
        self.stage, self.staged = [], 0
        later = table.filter(pc.invert(before))
        if later.num_rows:  # routed now, so the stage never holds the future across reads
            self._route(self._merge_tables(later))
        return [table.filter(before)]

    def _peel(self, upper: Bound) -> list[Chain]:
        """Take the chains before ``upper`` out of the buckets; the boundary moves to upper.

        The bucket that straddles ``upper`` is split into exponentially growing buckets from
        ``upper`` on, so later reads near the present stay away from far-future updates.
        """
        if upper is not None and upper <= self.boundary:
            return []
        peeled: list[Chain] = []
        while self.buckets and (upper is None or _before(self.buckets[0].hi, upper)):
            peeled += self.buckets.pop(0).chains
        if upper is None:
            self.buckets = [Bucket(self.boundary, None)]
            return peeled
        straddling = self.buckets.pop(0)
        rest: list[Chain] = []
        for chain in straddling.chains:
            below, above = chain.split(upper)
            peeled.append(below)
            rest.append(above)
        self.buckets[:0] = _exponential(upper, straddling.hi)
        self.boundary = upper
        for chain in rest:
            if chain.count:
                self._route(chain)
        return peeled

    # -- merging -----------------------------------------------------------------------------

    def _merge(
        self, chains: list[Chain], since: Bound, tables: list[pa.Table] | None = None
    ) -> Chain:
        """One chain of ``chains`` (and unsorted ``tables``), with times advanced to ``since``.

        Chains that follow one another in time (the common case) are concatenated: no copy.
        """
        chains = sorted((c for c in chains if c.count), key=lambda c: c.first)
        tables = [t for t in tables or () if t.num_rows]
        in_order = all(a.last < b.first for a, b in zip(chains, chains[1:], strict=False))
        current = not chains or since is None or chains[0].first >= since
        if not tables and in_order and current:
            return Chain([chunk for c in chains for chunk in c.chunks])
        parts = [pa.Table.from_batches(c.chunks, self.frame) for c in chains] + tables
        if not parts:
            return Chain()
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        if since is not None:
            times = pc.max_element_wise(table.column(TIME), since)
            table = table.set_column(len(self.schema), self.frame.field(TIME), times)
        return self._merge_tables(table)

    def _merge_tables(self, table: pa.Table) -> Chain:
        """Sort by ``(time, data)``, then consolidate runs of equal ``(time, data)``.

        One sort of the whole input: stale times advanced to since need no sub-chains, and a
        sort in C++ followed by vectorised run sums beats any merge written in Python.
        """
        if table.num_rows and table.column(TIME).num_chunks > 1:
            table = table.combine_chunks()  # Arrow sorts one chunk about twice as fast as many
        view = sortable(table)
        order = pc.sort_indices(view, [(k, "ascending") for k in self._sort_keys(table)])
        same = view is table  # no nested columns: one take serves both
        table = table.take(order)
        view = table if same else view.take(order)
        n = table.num_rows
        if not n:
            return Chain()
        starts = np.ones(n, dtype=bool)
        starts[1:] = False
        for key in self.keys:
            starts[1:] |= _changes(view.column(key))
        at = np.flatnonzero(starts)
        sums = np.add.reduceat(table.column(DIFF).to_numpy(), at)
        keep = sums != 0
        if len(at) == n and keep.all():  # every row its own run: the sorted table as it is
            return Chain.from_table(table, self.chunk_rows)
        runs = table.take(pa.array(at[keep]))
        runs = runs.set_column(len(self.schema) + 1, self.frame.field(DIFF), pa.array(sums[keep]))
        return Chain.from_table(runs, self.chunk_rows)

    def _sort_keys(self, table: pa.Table) -> list[str]:
        """The keys to sort ``table`` by: ``(time, data)``, without the time where every
        update has the same one (a hydration's step), as the order is the same without it."""
        if table.num_rows:
            low, high = pc.min_max(table.column(TIME)).values()
            if low == high:
                return self.keys[1:] or self.keys
        return self.keys

    # -- checks --------------------------------------------------------------------------------

    def check_invariants(self) -> None:
        """Assert the structure's invariants (for tests)."""
        assert self.buckets[0].lo == self.boundary and self.buckets[-1].hi is None
        for a, b in zip(self.buckets, self.buckets[1:], strict=False):
            assert a.hi == b.lo, "buckets are contiguous"
        for bucket in self.buckets:
            for a, b in zip(bucket.chains, bucket.chains[1:], strict=False):
                assert a.count >= self.proportionality * b.count, "the chain invariant"
            for chain in bucket.chains:
                assert chain.first >= bucket.lo and (bucket.hi is None or chain.last < bucket.hi)
        for chain in self.pending_low:
            assert chain.last < self.boundary, "pending_low is below the boundary"
        for chain in self._chains():
            _check_chain(chain, self)


def _check_chain(chain: Chain, correction: Correction) -> None:
    for chunk in chain.chunks:
        assert 0 < chunk.num_rows <= correction.chunk_rows
    if not chain.count:
        return
    table = chain.table(correction.frame)
    assert pc.all(pc.not_equal(table.column(DIFF), 0)).as_py(), "no zero diffs"
    order = pc.sort_indices(table, [(k, "ascending") for k in correction.keys])
    assert order.equals(pa.array(range(table.num_rows), pa.uint64())), "sorted by (time, data)"
    groups = table.group_by(correction.keys, use_threads=False).aggregate([])
    assert groups.num_rows == table.num_rows, "consolidated"


def _changes(column: pa.ChunkedArray) -> np.ndarray:
    """Where each value differs from the one before it (nulls equal nulls)."""
    kind = column.type
    if column.null_count == 0 and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        values = column.to_numpy()
        return values[1:] != values[:-1]
    a, b = column.slice(1), column.slice(0, len(column) - 1)
    differ = pc.fill_null(pc.not_equal(a, b), True)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.and_(differ, pc.invert(both_null)).to_numpy(zero_copy_only=False)


def _exponential(lo: int, hi: Bound) -> list[Bucket]:
    """Buckets ``[lo, lo + 1), [lo + 1, lo + 3), [lo + 3, lo + 7), …`` up to ``hi``."""
    buckets, width = [], 1
    while hi is None or lo < hi:
        end = lo + width
        if (hi is not None and end >= hi) or end > 2**63:
            buckets.append(Bucket(lo, hi))
            break
        buckets.append(Bucket(lo, end))
        lo, width = end, width * 2
    return buckets


def _before(hi: Bound, upper: int) -> bool:
    """Is every time below ``hi`` before ``upper``?"""
    return hi is not None and hi <= upper
