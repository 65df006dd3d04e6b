"""Held update rows for the columnar reader: appended in bulk, found by hash, read by position.

:class:`HeldRows` keeps integer, floating and boolean columns (and ``_time``, ``_diff``) as
numpy buffers that grow by doubling, so gathering rows by position is a numpy index, not an
Arrow ``take`` over many chunks; columns of other types stay Arrow chunks. :class:`HeldIndex`
maps each live row's 64-bit hash to its position in C hash tables (:class:`HashMap`, one per
value of the hash's top bits), so a message is looked up, and its new rows numbered, in one
pass over its own rows, whatever the number held. Rows taken out stay in the buffers,
unreachable, until they outnumber the live ones; then the buffers are compacted, so memory
stays within twice the live rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pandas._libs.algos import groupsort_indexer  # pandas' C counting sort
from pandas._libs.hashtable import Int64HashTable, Int64Vector  # pandas' C hash map

from changeflow.cdc.messages import freeze
from changeflow.errors import InvalidInput
from changeflow.updates import DIFF, TIME, data_columns

INT, FLOAT, BOOL = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.bool_)


class Collision(Exception):
    """Two different rows hashed alike: rehash with the next seed and retry the message."""


def numeric(column: pa.ChunkedArray | pa.Array, dtype: np.dtype) -> tuple | None:
    """A column as numpy ``(values, valid or None)`` of ``dtype`` (nulls as 0), or None if
    its type is not of that kind."""
    kind = column.type
    if pa.types.is_null(kind):
        return np.zeros(len(column), dtype), np.zeros(len(column), bool)
    if dtype == INT:
        fits = pa.types.is_integer(kind) and kind != pa.uint64()
    elif dtype == FLOAT:
        fits = pa.types.is_floating(kind)
    else:
        fits = pa.types.is_boolean(kind)
    if not fits:
        return None
    target = pa.from_numpy_dtype(dtype)
    if kind != target:
        column = column.cast(target)
    valid = None
    if column.null_count:
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        column = pc.fill_null(column, False if dtype == BOOL else 0)
    return column.to_numpy(zero_copy_only=False), valid


def kind_of(kind: pa.DataType) -> np.dtype | None:
    """The numpy dtype a column of this Arrow type is held as, or None (held as Arrow)."""
    if pa.types.is_integer(kind) and kind != pa.uint64():
        return INT
    if pa.types.is_floating(kind):
        return FLOAT
    if pa.types.is_boolean(kind):
        return BOOL
    return None


def equal_arrays(x: pa.ChunkedArray | pa.Array, y: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Element by element: are ``x`` and ``y`` the same value (nulls and NaNs alike)?"""
    try:
        eq = pc.fill_null(pc.equal(x, y), False)
        both = pc.and_(pc.is_null(x), pc.is_null(y))
        if pa.types.is_floating(x.type) and pa.types.is_floating(y.type):
            both = pc.or_(both, pc.and_(pc.is_nan(x), pc.is_nan(y)))
        return pc.or_(eq, pc.fill_null(both, False)).to_numpy(zero_copy_only=False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        pairs = zip(x.to_pylist(), y.to_pylist(), strict=True)
        return np.fromiter((freeze(u) == freeze(v) for u, v in pairs), bool, len(x))


def equal_numeric(a: tuple, i: np.ndarray, b: tuple, j: np.ndarray) -> np.ndarray:
    """Are ``a[i]`` and ``b[j]`` the same (numpy ``(values, valid)`` pairs; NaNs alike)?"""
    x, y = a[0][i], b[0][j]
    eq = x == y
    if x.dtype == FLOAT:
        eq |= np.isnan(x) & np.isnan(y)
    if a[1] is None and b[1] is None:
        return eq
    va = a[1][i] if a[1] is not None else np.ones(len(i), bool)
    vb = b[1][j] if b[1] is not None else np.ones(len(j), bool)
    return (eq & va & vb) | (~va & ~vb)


def time_order(times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order that sorts ``times`` (stable), and the times in that order: one counting
    pass when they span at most a few times their number (as the times of one report do; the
    sorted times are then written from the counts, not gathered), two 16-bit radix passes
    when they span less than 2^32, else a comparison sort."""
    if not len(times):
        return np.empty(0, np.int64), times
    lo, hi = int(times.min()), int(times.max())
    if hi - lo <= 4 * len(times) + 65_536:
        order, counts = groupsort_indexer((times - lo).astype(np.intp), hi - lo + 1)
        ordered = np.repeat(np.arange(lo, hi + 1, dtype=np.int64), counts[1:])
        return order.astype(np.int64, copy=False), ordered
    if hi - lo >= 1 << 32:
        order = np.argsort(times, kind="stable")
    else:
        t = (times - lo).astype(np.uint32)
        order = np.argsort((t & 0xFFFF).astype(np.uint16), kind="stable")
        order = order[np.argsort((t[order] >> 16).astype(np.uint16), kind="stable")]
    return order, times[order]


def _grow(a: np.ndarray, size: int, fill: object | None = None) -> np.ndarray:
    """``a`` in a buffer of ``size``; the rest filled with ``fill`` (or left as it comes)."""
    out = np.empty(size, a.dtype)
    out[: len(a)] = a
    if fill is not None:
        out[len(a) :] = fill
    return out


class HeldRows:
    """Update rows (data columns, ``_time``, ``_diff``) appended in bulk, read by position."""

    def __init__(self) -> None:
        self.n = 0
        self.names: list[str] = []  # data columns, then _time and _diff
        self.types: dict[str, pa.DataType] = {}
        self.values: dict[str, np.ndarray] = {}  # numpy columns (buffers longer than n)
        self.valid: dict[str, np.ndarray] = {}  # masks of the numpy columns that held a null
        self.chunks: dict[str, list[pa.Array]] = {}  # columns of other types

    def schema(self) -> pa.Schema | None:
        return pa.schema([(c, self.types[c]) for c in self.names]) if self.names else None

    def append(self, table: pa.Table, rows: np.ndarray | None = None) -> int:
        """Hold the rows of ``table`` (``rows``: those, in that order); return the position of
        the first."""
        if not self.names:
            self.names = table.column_names
            for c in self.names:
                self.types[c] = table.schema.field(c).type
                dtype = kind_of(self.types[c])
                if dtype is None:
                    self.chunks[c] = []
                else:
                    self.values[c] = np.empty(0, dtype)
        start, m = self.n, table.num_rows if rows is None else len(rows)
        size = len(self.values[TIME])
        if start + m > size:
            size = max(2 * size, start + m, 1024)
            for c in self.values:
                self.values[c] = _grow(self.values[c][:start], size)
            for c in self.valid:
                self.valid[c] = _grow(self.valid[c][:start], size, True)
        for c in self.names:
            column = table.column(c)
            if c in self.values:
                got = numeric(column, self.values[c].dtype)
                if got is not None:
                    if rows is not None:
                        got = (got[0][rows], None if got[1] is None else got[1][rows])
                    self._put(c, start, got)
                    if column.type != self.types[c] and not pa.types.is_null(column.type):
                        self.types[c] = pa.from_numpy_dtype(self.values[c].dtype)
                    continue
                self._to_arrow(c)
            self._add_chunks(c, column if rows is None else column.take(pa.array(rows)))
        self.n += m
        return start

    def _put(self, c: str, start: int, got: tuple) -> None:
        values, valid = got
        end = start + len(values)
        self.values[c][start:end] = values
        if valid is not None and c not in self.valid:
            self.valid[c] = np.ones(len(self.values[c]), bool)
        if c in self.valid:
            self.valid[c][start:end] = True if valid is None else valid

    def _to_arrow(self, c: str) -> None:
        """Hold column ``c`` as Arrow from now on (a later message gave it another type)."""
        mask = ~self.valid.pop(c)[: self.n] if c in self.valid else None
        values = self.values.pop(c)[: self.n]
        self.chunks[c] = [pa.array(values, mask=mask).cast(self.types[c])]

    def _add_chunks(self, c: str, column: pa.ChunkedArray) -> None:
        chunks = self.chunks[c]
        if column.type != self.types[c]:
            old, new = pa.schema([(c, self.types[c])]), pa.schema([(c, column.type)])
            try:
                common = pa.unify_schemas([old, new], promote_options="permissive").field(c).type
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                raise InvalidInput(
                    f"updates with column {c!r} of type {column.type}; earlier ones had "
                    f"{self.types[c]}"
                ) from None
            self.types[c] = common
            chunks[:] = [x.cast(common) for x in chunks]
            column = column.cast(common)
        chunks.extend(column.chunks)
        if len(chunks) > 64:
            chunks[:] = [pa.concat_arrays(chunks)]

    def column(self, c: str, positions: np.ndarray) -> pa.Array:
        """Column ``c`` of the rows at ``positions``."""
        if c in self.values:
            mask = ~self.valid[c][positions] if c in self.valid else None
            return pa.array(self.values[c][positions], mask=mask).cast(self.types[c])
        whole = pa.chunked_array(self.chunks[c], self.types[c])
        return whole.take(pa.array(positions, pa.int64())).combine_chunks()

    def take(self, positions: np.ndarray, times: np.ndarray | None = None) -> pa.Table:
        """The rows at ``positions``, as a table; ``times``: their ``_time``, known already."""
        columns = [
            pa.array(times) if c == TIME and times is not None else self.column(c, positions)
            for c in self.names
        ]
        return pa.table(columns, names=self.names)

    def ints(self, c: str, positions: np.ndarray | slice) -> np.ndarray:
        """``_time`` or ``_diff`` at ``positions``."""
        return self.values[c][positions]

    def equal(self, positions: np.ndarray, table: pa.Table, rows: np.ndarray) -> np.ndarray:
        """Are the data and time of the held rows at ``positions`` those of ``table``'s
        ``rows``?"""
        same = np.ones(len(rows), bool)
        for c in [*data_columns(table.column_names), TIME]:
            column = table.column(c)
            if c in self.values:
                got = numeric(column, self.values[c].dtype)
                if got is not None:
                    held = (self.values[c], self.valid.get(c))
                    same &= equal_numeric(held, positions, got, rows)
                    continue
            same &= equal_arrays(self.column(c, positions), column.take(pa.array(rows)))
        return same

    def keep(self, positions: np.ndarray) -> None:
        """Keep only the rows at ``positions`` (increasing), renumbered from 0."""
        k = len(positions)
        for v in [*self.values.values(), *self.valid.values()]:
            v[:k] = v[positions]
        for c in self.chunks:
            self.chunks[c] = [self.column(c, positions)]
        self.n = k
        if len(self.values[TIME]) > 4 * k + 4096:  # give back the memory of a larger past
            size = max(2 * k, 1024)
            self.values = {c: v[:size].copy() for c, v in self.values.items()}
            self.valid = {c: v[:size].copy() for c, v in self.valid.items()}


class HashMap:
    """A map from 64-bit hashes to positions: C hash tables, one per value of the top
    ``BITS`` bits, so that each is small enough to stay in the cache while a message's hashes,
    grouped by table, go through it."""

    BITS = 10

    def __init__(self) -> None:
        self.tables = [Int64HashTable() for _ in range(1 << self.BITS)]

    def _groups(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """The order that groups ``hashes`` by table (stable), the group bounds and the tables
        with any."""
        part = (hashes >> np.uint64(64 - self.BITS)).astype(np.intp)
        order, counts = groupsort_indexer(part, 1 << self.BITS)  # one counting pass
        bounds = np.zeros(len(counts), np.int64)
        np.cumsum(counts[1:], out=bounds[1:])  # counts[0] is of the group -1: none here
        return order.astype(np.int64, copy=False), bounds, np.flatnonzero(counts[1:]).tolist()

    def put(self, hashes: np.ndarray, positions: np.ndarray) -> None:
        """Map each of ``hashes`` (distinct, not mapped yet) to its position."""
        order, bounds, used = self._groups(hashes)
        keys, values = hashes[order].view(np.int64), positions[order]
        for p in used:
            a, b = bounds[p], bounds[p + 1]
            self.tables[p].map_keys_to_values(keys[a:b], values[a:b])

    def get(self, hashes: np.ndarray) -> np.ndarray:
        """The position of each hash, or -1."""
        order, bounds, used = self._groups(hashes)
        keys, out = hashes[order].view(np.int64), np.full(len(hashes), -1, np.int64)
        for p in used:
            a, b = bounds[p], bounds[p + 1]
            out[order[a:b]] = self.tables[p].lookup(keys[a:b])
        return out

    def label(self, hashes: np.ndarray, start: int) -> np.ndarray:
        """The position of each mapped hash; each new one is mapped to the next position from
        ``start`` (its copies to the same)."""
        order, bounds, used = self._groups(hashes)
        keys, out = hashes[order].view(np.int64), np.empty(len(hashes), np.int64)
        for p in used:
            a, b, table = bounds[p], bounds[p + 1], self.tables[p]
            before = len(table)
            out[order[a:b]] = table.get_labels(keys[a:b], Int64Vector(), start, -1)
            start += len(table) - before
        return out


class HeldIndex:
    """Held rows, and a hash table from each live row's hash to its position."""

    def __init__(self) -> None:
        self.rows = HeldRows()
        self.map = HashMap()
        self.hashes = np.empty(0, np.uint64)  # of every row held
        self.alive = np.empty(0, bool)
        self.live = 0

    def __len__(self) -> int:
        return self.live

    def held_rows(self) -> int:
        """Rows in the buffers, live or taken out (at most twice the live ones, plus 1024)."""
        return self.rows.n

    def label(self, hashes: np.ndarray) -> np.ndarray:
        """In one pass over the hash table: the position of the held row of each hash, or for
        a hash not held, the position its first row gets if :meth:`add` holds the first rows
        of the new hashes (in order) with ``mapped``. Until then (or :meth:`remap`) the table
        maps hashes that are not held."""
        if not len(hashes):
            return np.empty(0, np.int64)
        return self.map.label(hashes, self.rows.n)

    def remap(self) -> None:
        """Map the live rows' hashes alone (undoing a :meth:`label` not followed by add)."""
        n = self.rows.n
        live = np.flatnonzero(self.alive[:n])
        self.map = HashMap()
        self.map.put(self.hashes[live], live.astype(np.int64))

    def add(
        self,
        rows: pa.Table,
        hashes: np.ndarray,
        mapped: bool = False,
        picked: np.ndarray | None = None,
    ) -> None:
        """Hold ``rows`` (``picked``: those of its rows, in that order): none is held yet;
        their hashes are distinct and not of live rows (``mapped``: :meth:`label` has put them
        in the hash table)."""
        count = len(rows) if picked is None else len(picked)
        if not count:
            return
        start = self.rows.append(rows, picked)
        end = start + count
        if end > len(self.hashes):
            size = max(2 * len(self.hashes), end, 1024)
            self.hashes, self.alive = _grow(self.hashes, size), _grow(self.alive, size, False)
        self.hashes[start:end] = hashes
        self.alive[start:end] = True
        if not mapped:
            self.map.put(hashes, np.arange(start, end, dtype=np.int64))
        self.live += count

    def find(self, rows: pa.Table, hashes: np.ndarray) -> np.ndarray:
        """The position of the live row equal to each of ``rows`` in data and time, or -1."""
        if not self.live or not len(hashes):
            return np.full(len(hashes), -1, np.int64)
        held = self.map.get(hashes)
        hit = np.flatnonzero(held >= 0)
        if len(hit):
            positions = held[hit]
            dead = ~self.alive[positions]
            if dead.any():
                held[hit[dead]] = -1
                hit, positions = hit[~dead], positions[~dead]
            if not self.rows.equal(positions, rows, hit).all():
                raise Collision
        return held

    def diffs(self, positions: np.ndarray) -> np.ndarray:
        return self.rows.ints(DIFF, positions)

    def times(self) -> np.ndarray:
        """The times of the live rows."""
        n = self.rows.n
        return self.rows.ints(TIME, slice(0, n))[self.alive[:n]] if n else np.empty(0, np.int64)

    def remove_before(
        self, end: int | None, hashed: bool = True
    ) -> tuple[pa.Table | None, np.ndarray]:
        """Take out the live rows at times before ``end`` (None: all); return them in time
        order (None if there are none), and (``hashed``) their hashes."""
        n = self.rows.n
        if not self.live:
            return None, np.empty(0, np.uint64)
        alive = self.alive[:n]
        if end is not None:
            alive = alive & (self.rows.ints(TIME, slice(0, n)) < end)
        gone = np.flatnonzero(alive)
        if not len(gone):
            return None, np.empty(0, np.uint64)
        order, times = time_order(self.rows.ints(TIME, gone))
        gone = gone[order]
        out = self.rows.take(gone, times)
        hashes = self.hashes[gone] if hashed else np.empty(0, np.uint64)
        if len(gone) == self.live:  # all of them: no scatter
            self.alive[:n] = False
        else:
            self.alive[gone] = False
        self.live -= len(gone)
        if n > 2 * self.live + 1024:
            self._compact()
        return out, hashes

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.rows.n])
        self.rows.keep(keep)
        k = len(keep)
        self.hashes[:k] = self.hashes[keep]
        self.alive[:k] = True
        self.alive[k:] = False
        if len(self.hashes) > 4 * k + 4096:
            size = max(2 * k, 1024)
            self.hashes, self.alive = self.hashes[:size].copy(), self.alive[:size].copy()
        self.map = HashMap()
        self.map.put(self.hashes[:k], np.arange(k, dtype=np.int64))

    def rehash(self, hasher: Callable[[pa.Table], np.ndarray]) -> None:
        """Hash every live row again (after a collision, with another seed)."""
        if not self.live:
            self.__init__()  # type: ignore[misc]
            return
        rows = self.rows.take(np.flatnonzero(self.alive[: self.rows.n]))
        self.__init__()  # type: ignore[misc]
        self.add(rows, hasher(rows))
