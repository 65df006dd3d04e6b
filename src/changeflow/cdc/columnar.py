"""The columnar CDC v2 reader: the reference reader's answers, a whole message at a time.

:class:`ColumnarReader` takes the same messages as :class:`~changeflow.cdc.reader.CdcReader`,
plus :class:`UpdateTable` (a message of updates as one Arrow table, as a Parquet file holds
them), and reports the same advances with the updates as Arrow tables. Progress statements go
through the reference code unchanged; updates at int times never become Python tuples: a
message's rows are hashed (data and time) with numpy, looked up in a hash table of the held
updates (:mod:`changeflow.cdc.held`) and the novel ones deduplicated within the message the same
way; every hash match is confirmed by comparing the rows, so a 64-bit collision costs a rehash,
never a wrong answer. Counts per time are kept with numpy too. It holds the updates at
unreported times only (and, in audit mode, the reported ones, as the reference does).
Product times take the reference path, tuple by tuple.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Hashable, Sequence
from itertools import compress, repeat
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.cdc.held import Collision, HeldIndex, equal_arrays
from changeflow.cdc.messages import Message, Progress, UpdateTable, freeze, without_gc
from changeflow.cdc.reader import CdcReader
from changeflow.errors import CdcConflict, InvalidInput, InvalidTime, ProtocolViolation
from changeflow.time import Antichain, MutableAntichain, Product, Time, join, time_to_json
from changeflow.updates import DIFF, TIME, data_columns

DATA = "data"  # the one data column of updates whose data are single values
SEEDS = tuple(f"changeflow{k:06d}" for k in range(8))  # hash keys: the next after a collision
MIX = np.uint64(0x9E3779B97F4A7C15)
# Numbers hash alike under every key: the columns are combined with a multiplier of the seed's.
MIXES = tuple(np.uint64((0x9E3779B97F4A7C15 + k * 0x632BE59BD9B4E01A) % 2**64) for k in range(8))
NULL = pd.util.hash_array(np.zeros(1, np.int64))[0] ^ MIX  # a null, whatever the column's type
ColumnarBatch = tuple[pa.Table, Antichain]


class _Counts(MutableAntichain):
    """The outstanding counts, with a bulk update for many int times at once."""

    def subtract(self, times: list[int], k: np.ndarray) -> None:
        """Subtract ``k[i]`` from the count at ``times[i]`` (distinct times)."""
        counts = self._counts
        old = np.fromiter(map(counts.get, times, repeat(0)), np.int64, len(times))
        new = old - k
        zero = new == 0
        counts.update(zip(compress(times, ~zero), new[~zero].tolist(), strict=True))
        for t in compress(times, zero):
            del counts[t]
        if ((old > 0) & (new <= 0)).any():
            self._dirty = True

    def discard_all(self, times: list[int]) -> None:
        """Forget the counts at ``times`` entirely."""
        counts = self._counts
        if max(map(counts.pop, times, repeat(0)), default=0) > 0:  # max pops every one
            self._dirty = True

    def add(self, times: list[int], k: np.ndarray) -> None:
        """Add ``k[i]`` to the count at ``times[i]`` (distinct times)."""
        counts = self._counts
        old = np.fromiter(map(counts.get, times, repeat(0)), np.int64, len(times))
        new = old + k
        zero = new == 0
        counts.update(zip(compress(times, ~zero), new[~zero].tolist(), strict=True))
        for t in compress(times, zero):
            del counts[t]
        rising = list(compress(times, (old <= 0) & (new > 0)))
        if not rising:
            return
        heap = self._heap
        if len(rising) * 8 > len(heap):  # many at once: one heapify beats a push each
            heap.extend(zip(rising, rising, strict=True))  # an int's sort key is itself
            heapq.heapify(heap)
        else:
            for t in rising:
                heapq.heappush(heap, (t, t))
        self._dirty = True


class ColumnarReader(CdcReader):
    """The reference reader's state machine with updates held and matched as Arrow columns.

    :meth:`feed` returns ``(table, frontier)`` advances: the updates as an Arrow table (data
    columns, ``_time``, ``_diff``, in time order); :meth:`triples` turns one into the
    reference's ``(data, time, diff)`` triples. ``columns`` names the data columns of the
    tuples of :class:`Updates` messages; without it each piece of data is one value, held in
    a column ``data``.
    """

    def __init__(self, audit: bool = False, columns: Sequence[str] | None = None) -> None:
        super().__init__(audit)
        self._outstanding = _Counts()
        self._columns = list(columns) if columns is not None else None
        self._names: list[str] | None = list(columns) if columns is not None else None
        self._pending = HeldIndex()
        self._done = HeldIndex()  # reported updates, in audit mode
        self._seed = 0

    # -- public ------------------------------------------------------------------------------

    def feed(self, message: Message | UpdateTable) -> list[ColumnarBatch]:  # type: ignore[override]
        """Take one message; return the ``(updates table, frontier)`` advances it allows."""
        with without_gc():
            if isinstance(message, UpdateTable):
                self._receive_table(message.table)
                self._drain_progress()
                return self._advance()  # type: ignore[return-value]
            return self._feed(message)  # type: ignore[return-value]

    def triples(
        self, table: pa.Table, rows: bool | None = None
    ) -> list[tuple[Hashable, Time, int]]:
        """An advance's updates as the reference reader reports them; ``rows`` makes every
        piece of data a row tuple (as row formats hold it), even of a column named ``data``."""
        names = data_columns(table.column_names)
        data: list[Any]
        if not rows and self._columns is None and names == [DATA]:
            data = [freeze(v) for v in table.column(DATA).to_pylist()]
        else:
            values = (map(freeze, table.column(c).to_pylist()) for c in names)
            data = list(zip(*values, strict=True))
        times = table.column(TIME).to_pylist()
        if pa.types.is_list(table.schema.field(TIME).type):
            times = [Product(t) for t in times]
        return list(zip(data, times, table.column(DIFF).to_pylist(), strict=True))

    def pending_updates(self) -> int:
        return len(self._pending) + sum(len(v) for v in self._updates.values())

    def pending_times(self) -> set[Time]:
        return set(self._pending.times().tolist()) | set(self._updates)

    # -- updates -----------------------------------------------------------------------------

    def _receive_updates(self, updates: Any) -> None:
        """An Updates message: int times as a table; product times by the reference."""
        first = next(iter(updates), None)
        if first is None:
            return
        if isinstance(first[1], Product) or isinstance(self._minimum, Product):
            super()._receive_updates(updates)
            return
        self._receive_table(to_table(updates, self._columns))

    def _receive_table(self, table: pa.Table) -> None:
        if not len(table):
            return
        if pa.types.is_list(table.schema.field(TIME).type):
            names = data_columns(table.column_names)
            if names != [DATA] and self._columns is None:
                self._columns = names  # product updates are reported as tables of these
            super()._receive_updates(self.triples(table))
            return
        table = table.set_column(
            table.schema.get_field_index(TIME), TIME, table.column(TIME).cast(pa.int64())
        ).set_column(table.schema.get_field_index(DIFF), DIFF, table.column(DIFF).cast(pa.int64()))
        # one chunk a column (Parquet gives one per batch of rows): every numpy view of a column
        # below is then free, where each would otherwise concatenate the chunks again
        table = table.combine_chunks()
        if self._minimum is None:
            self._start([0])
        self._check_kind(table.column(TIME)[0].as_py())
        self._check_names(data_columns(table.column_names))
        for _ in SEEDS:
            try:
                return self._receive_rows(table)
            except Collision:
                self._seed += 1
                self._pending.rehash(self._hash)
                self._done.rehash(self._hash)
        raise AssertionError("every hash seed collided")

    def _check_names(self, names: list[str]) -> None:
        if self._names is None:
            self._names = names
        elif names != self._names:
            raise InvalidInput(f"updates with data columns {names}; earlier ones had {self._names}")

    def _receive_rows(self, table: pa.Table) -> None:
        """Drop reported and known rows, check the rest, hold the novel ones and count them."""
        end = self._bound(self.reported)
        times = table.column(TIME).to_numpy()
        late = times < end if end is not None else np.ones(len(times), bool)
        if late.any():
            if self._audit is not None:
                self._check_late_rows(table.filter(late))
            table = table.filter(~late)
            if not len(table):
                return
        diffs = table.column(DIFF).to_numpy()
        zero = np.flatnonzero(diffs == 0)
        if len(zero):
            i = int(zero[0])
            raise ProtocolViolation(
                f"update {self._data(table, i)!r} at time {table.column(TIME)[i].as_py()} has "
                "diff 0: CDC v2 updates carry non-zero integer diffs"
            )
        hashes = self._hash(table)
        n = self._pending.held_rows()
        labels = self._pending.label(hashes)
        try:
            first = self._check_held(table, labels, diffs, n)
            whole = len(first) == len(table) and not (np.diff(first) < 0).any()  # in order
            pick = None if whole else first
            self._pending.add(table, hashes if whole else hashes[first], mapped=True, picked=pick)
        except BaseException:
            self._pending.remap()
            raise
        times = table.column(TIME).to_numpy()
        self._count(times if whole else times[first])

    def _check_held(
        self, table: pa.Table, labels: np.ndarray, diffs: np.ndarray, n: int
    ) -> np.ndarray:
        """Check a message's rows against the held rows (positions ``labels`` below ``n``)
        and against each other (new labels from ``n``, one per distinct hash); return the
        first row of each new (data, time). Equal hashes of unequal rows raise
        :class:`Collision`; two diffs for one (data, time) are a conflict."""
        old = labels < n
        hit = np.flatnonzero(old)
        if len(hit):
            positions = labels[hit]
            if not self._pending.alive[positions].all():
                raise Collision  # a reported row's hash: its (data, time) would be late
            if not self._pending.rows.equal(positions, table, hit).all():
                raise Collision
            known, new = self._pending.diffs(positions), diffs[hit]
            bad = np.flatnonzero(known != new)
            if len(bad):
                self._conflict(table, int(hit[bad[0]]), int(known[bad[0]]), int(new[bad[0]]))
        fresh = np.flatnonzero(~old) if len(hit) else np.arange(len(labels))
        slots = labels[fresh] - n
        first = np.empty(int(slots.max()) + 1 if len(slots) else 0, np.int64)
        first[slots[::-1]] = fresh[::-1]  # the first row of each new hash
        copies = fresh[first[slots] != fresh]
        if len(copies):
            originals = first[labels[copies] - n]
            if not _equal(table.take(copies), table.take(originals)).all():
                raise Collision
            bad = np.flatnonzero(diffs[copies] != diffs[originals])
            if len(bad):
                i = int(copies[bad[0]])
                self._conflict(table, i, int(diffs[originals[bad[0]]]), int(diffs[i]))
        return first

    def _check_late_rows(self, rows: pa.Table) -> None:
        """In audit mode, rows at reported times must be the reported updates."""
        held = self._done.find(rows, self._hash(rows))
        missing = np.flatnonzero(held < 0)
        if len(missing):
            i = int(missing[0])
            t = rows.column(TIME)[i].as_py()
            raise CdcConflict(
                f"update for data {self._data(rows, i)!r} at time {t}, which was already "
                f"complete with {self._audit_counts.get(t, 0)} updates"
            )
        known, new = self._done.diffs(held), rows.column(DIFF).to_numpy()
        bad = np.flatnonzero(known != new)
        if len(bad):
            i = int(bad[0])
            self._conflict(rows, i, int(known[i]), int(new[i]))

    def _count(self, times: np.ndarray) -> None:
        """The reference's counting of novel distinct updates per time, for int times."""
        if not len(times):
            return
        at, k = _tally(times)
        keys = at.tolist()
        received = self._received
        old = np.fromiter(map(received.get, keys, repeat(0)), np.int64, len(keys))
        n = old + k
        said = np.fromiter(map(self._announced.get, keys, repeat(-1)), np.int64, len(keys))
        end = self._bound(self.progress)
        covered = at < end if end is not None else np.ones(len(at), bool)
        count = np.where(said >= 0, said, np.where(covered, 0, -1))
        over = np.flatnonzero((count >= 0) & (n > count))
        if len(over):
            i = int(over[0])
            raise CdcConflict(
                f"time {keys[i]} has more distinct updates ({n[i]}) than its "
                f"progress count ({count[i]}) allows"
            )
        for t in at[(said < 0) & ~covered & (old == 0)].tolist():
            self._early_time(t)
        received.update(zip(keys, n.tolist(), strict=True))
        self._outstanding.subtract(keys, k)

    def _early_time(self, t: int) -> None:
        heapq.heappush(self._early, t)

    # -- progress ----------------------------------------------------------------------------

    def _incorporate(self, p: Progress) -> None:
        """The reference's incorporation of a statement, for int times a column at a time:
        its counts are checked against the announced and received counts with numpy, and
        announced in bulk."""
        pairs = _int_counts(p) if not isinstance(self._minimum, Product) else None
        if pairs is None or self._audit is not None:
            return super()._incorporate(p)
        times, counts = pairs
        covered = self.progress
        within = self._announced_within(p.lower, p.upper, covered)
        if within:  # where p overlaps covered, unreported times, it must agree
            said = np.fromiter(map(self._announced.__getitem__, within), np.int64, len(within))
            given = _counts_at(times, counts, np.array(within, np.int64))
            bad = np.flatnonzero(given != said)
            if len(bad):
                i = int(bad[0])
                raise CdcConflict(
                    f"progress statements disagree about time {within[i]}: "
                    f"count {said[i]} and count {given[i]}"
                )
        start, end = self._bound(covered), self._bound(self.reported)
        beyond = times >= start if start is not None else np.zeros(len(times), bool)
        new = np.flatnonzero(beyond & (counts > 0))
        keys = times[new].tolist()
        received = np.fromiter(map(self._received.get, keys, repeat(0)), np.int64, len(keys))
        over = new[received > counts[new]]  # more received than announced
        late = ~beyond & (counts > 0) & (times >= end if end is not None else False)
        if late.any():  # a covered time announced now, not before
            said = set(self._announced)
            late[late] = [t not in said for t in times[late].tolist()]
        first = min([*over[:1].tolist(), *np.flatnonzero(late)[:1].tolist()], default=None)
        if first is not None:
            t, c = int(times[first]), int(counts[first])
            if late[first]:
                raise CdcConflict(
                    f"progress statements disagree about time {t}: count 0 and count {c}"
                )
            raise CdcConflict(
                f"time {t} has more distinct updates ({self._received[t]}) than its "
                f"progress count ({c}) allows"
            )
        announced = counts[new]
        self._announced.update(zip(keys, announced.tolist(), strict=True))
        self._announced_order.extend(keys)  # increasing: new counts lie beyond all earlier
        self._outstanding.add(keys, announced)
        self.progress = Antichain(join(u, f) for u in p.upper for f in covered)
        self._check_early()

    # -- reporting ---------------------------------------------------------------------------

    def _advance(self) -> list[ColumnarBatch]:  # type: ignore[override]
        if isinstance(self._minimum, Product):
            return [(self._table_of(out), f) for out, f in super()._advance()]
        if self._minimum is None:
            return []
        frontier = self.progress.meet(self._outstanding.frontier())
        if frontier == self.reported:
            return []
        self.reported = frontier
        audit = self._audit is not None
        out, hashes = self._pending.remove_before(self._bound(frontier), hashed=audit)
        if out is not None:
            times, n = _tally(out.column(TIME).to_numpy())
            self._retire(times.tolist(), n)
            if audit:
                self._done.add(out, hashes)
        else:
            out = self._empty()
        self._forget_order_before(frontier)
        return [(out, frontier)]

    def _retire(self, times: list[int], n: np.ndarray) -> None:
        """Forget reported times (increasing); the distinct updates of each must be exactly
        its count. Those before the first that is not are forgotten, then it is refused."""
        announced = self._announced
        expected = np.fromiter(map(announced.get, times, repeat(0)), np.int64, len(times))
        bad = np.flatnonzero(n != expected)
        end = int(bad[0]) if len(bad) else len(times)
        done = times[:end]
        if self._audit is not None:
            self._audit_counts.update(zip(done, n[:end].tolist(), strict=True))
            self._audit_order.extend(done)
        deque(map(self._received.__delitem__, done), maxlen=0)
        popped = [t for t in done if announced.pop(t, None) is not None]
        self._outstanding.discard_all(popped)
        if len(bad):
            t = times[end]
            raise CdcConflict(
                f"time {t} has {n[end]} distinct updates but its progress count is {expected[end]}"
            )

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _bound(frontier: Antichain) -> int | None:
        return frontier.elements[0] if frontier else None

    def _empty(self) -> pa.Table:
        names = self._names or [DATA]
        fields = [pa.field(c, pa.null()) for c in names]
        schema = self._pending.rows.schema()
        if schema is not None:
            fields = [schema.field(c) for c in names]
        schema = pa.schema([*fields, pa.field(TIME, pa.int64()), pa.field(DIFF, pa.int64())])
        return schema.empty_table()

    def _table_of(self, triples: list[tuple[Hashable, Time, int]]) -> pa.Table:
        """Reference triples (product times) as an update table."""
        data = [d for d, _, _ in triples]
        names = self._columns
        columns = (
            {DATA: pa.array(data, pa.null() if not data else None)}
            if names is None
            else {c: [d[i] for d in data] for i, c in enumerate(names)}  # type: ignore[index]
        )
        times = pa.array([list(t) for _, t, _ in triples], pa.list_(pa.int64()))
        return pa.table({**columns, TIME: times, DIFF: pa.array([r for *_, r in triples])})

    def _hash(self, table: pa.Table) -> np.ndarray:
        """A 64-bit hash of each row's data and time."""
        key = SEEDS[self._seed]
        h = column_hash(table.column(TIME), key)
        scratch = np.empty_like(h)
        for c in data_columns(table.column_names):
            h *= MIXES[self._seed]
            h += column_hash(table.column(c), key, scratch)
            np.right_shift(h, np.uint64(29), out=scratch)
            h ^= scratch
        return h

    def _data(self, table: pa.Table, i: int) -> Any:
        row = [freeze(table.column(c)[i].as_py()) for c in data_columns(table.column_names)]
        return row[0] if self._columns is None and len(row) == 1 else tuple(row)

    def _conflict(self, table: pa.Table, i: int, a: int, b: int) -> None:
        raise CdcConflict(
            f"conflicting updates for data {self._data(table, i)!r} at time "
            f"{table.column(TIME)[i].as_py()}: diff {a} and diff {b}"
        )


def to_table(
    updates: Sequence[tuple[Hashable, Time, int]], columns: Sequence[str] | None = None
) -> pa.Table:
    """Update triples as an update table: the data split into ``columns`` (of tuples), or one
    column ``data``; product times as lists. Bad times and diffs are refused as the reference
    refuses them."""
    product = bool(updates) and isinstance(updates[0][1], Product)
    for data, t, r in updates:
        if isinstance(t, Product) != product or not isinstance(t, int | Product):
            raise InvalidTime(f"time {t!r} of data {data!r} is not of the others' lattice")
        if type(r) is not int:
            raise ProtocolViolation(
                f"update {data!r} at time {time_to_json(t)} has diff {r!r}: "
                "CDC v2 updates carry non-zero integer diffs"
            )
    data = [d for d, _, _ in updates]
    try:
        if columns is None:
            arrays = {DATA: pa.array(data)}
        else:
            arrays = {c: pa.array([d[i] for d in data]) for i, c in enumerate(columns)}  # type: ignore[index]
        kind = pa.list_(pa.int64()) if product else pa.int64()
        times = pa.array([list(t) if product else t for _, t, _ in updates], kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
        raise InvalidInput(f"updates the columnar reader cannot hold as columns: {e}") from None
    return pa.table({**arrays, TIME: times, DIFF: [r for _, _, r in updates]})


def _int_counts(p: Progress) -> tuple[np.ndarray, np.ndarray] | None:
    """A statement's int times (increasing) and their counts as numpy arrays; None when its
    times are not all ints (the reference's path then says what is wrong)."""
    if not p.counts:
        return None
    try:
        pairs = np.array(p.counts)
    except (ValueError, OverflowError):
        return None
    if pairs.dtype.kind != "i" or pairs.ndim != 2 or pairs.shape[1] != 2:
        return None
    times, counts = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    if len(times) > 1 and (np.diff(times) <= 0).any():
        order = np.argsort(times, kind="stable")
        times, counts = times[order], counts[order]
    return times, counts


def _counts_at(times: np.ndarray, counts: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The count at each of ``at`` among ``times`` (increasing, distinct) and ``counts``; 0
    where a time is not listed."""
    i = np.minimum(np.searchsorted(times, at), len(times) - 1)
    return np.where(times[i] == at, counts[i], 0)


def _tally(times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct times, increasing, and how many of each: by counting when they span a
    short range (as the times of a message mostly do), else by sorting."""
    lo, hi = int(times.min()), int(times.max())
    if hi - lo > 4 * len(times) + 4096:
        return np.unique(times, return_counts=True)
    counts = np.bincount(times - lo)
    at = np.flatnonzero(counts)
    return at + lo, counts[at]


def column_hash(column: pa.ChunkedArray, key: str, scratch: np.ndarray | None = None) -> np.ndarray:
    """A hash of each value, equal for equal values (nulls alike, whatever the column's type)
    whatever the chunking. ``scratch``: a buffer of the column's length that numbers may use."""
    kind = column.type
    if pa.types.is_null(kind):
        return np.full(len(column), NULL, np.uint64)
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        values = _numbers(column, pa.int64(), 0)
        h = mix(values, scratch)
    elif pa.types.is_floating(kind):
        values = _numbers(column, pa.float64(), 0.0) + 0.0  # -0.0 is 0.0
        values[np.isnan(values)] = np.nan
        h = mix(values, scratch)
    else:
        values = np.empty(len(column), object)
        values[:] = [freeze(v) for v in column.to_pylist()]
        h = pd.util.hash_array(values, hash_key=key, categorize=False)
    if column.null_count:
        h[column.is_null().to_numpy(zero_copy_only=False)] = NULL
    return h


def _numbers(column: pa.ChunkedArray, kind: pa.DataType, blank: float) -> np.ndarray:
    """A column as a numpy array of ``kind``, nulls as ``blank`` (without a copy when it is
    one chunk of that type with no nulls)."""
    if column.type != kind:
        column = column.cast(kind)
    if column.null_count:
        column = pc.fill_null(column, blank)
    if column.num_chunks == 1:
        return column.chunk(0).to_numpy(zero_copy_only=False)
    return column.to_numpy()


def mix(values: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """pandas' hash of 64-bit numbers (``hash_array``: their bits through splitmix64's
    finalizer), computed in place in a copy, with ``scratch`` for the shifts."""
    h = values.view(np.uint64).copy()
    t = np.empty_like(h) if scratch is None else scratch
    for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None)):
        np.right_shift(h, np.uint64(shift), out=t)
        h ^= t
        if factor is not None:
            h *= np.uint64(factor)
    return h


def _equal(a: pa.Table, b: pa.Table) -> np.ndarray:
    """Row by row: are the data and time of ``a`` and ``b`` the same (nulls and NaNs alike)?"""
    same = np.ones(len(a), bool)
    for c in [*data_columns(a.column_names), TIME]:
        same &= equal_arrays(a.column(c), b.column(c))
    return same


def read_all(
    reader: ColumnarReader, messages: Sequence[Message | UpdateTable]
) -> list[tuple[list[tuple[Hashable, Time, int]], Antichain]]:
    """Feed every message; the advances as reference triples (tests and small inputs)."""
    return [(reader.triples(t), f) for m in messages for t, f in reader.feed(m)]
