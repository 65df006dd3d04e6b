"""The two CDC v2 statements: a batch of updates, and progress over an interval of times.

``Updates`` asserts that each ``(data, time)`` changes by exactly ``diff`` (one entry per pair,
no zero diffs). ``Progress`` covers the times in ``[lower, upper)`` and lists every time there
with a non-zero number of distinct updates.
"""

from __future__ import annotations

import gc
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import pyarrow as pa

from changeflow.errors import InvalidTime, ProtocolViolation
from changeflow.time import Antichain, Product, Time, time_to_json


@dataclass(frozen=True, slots=True)
class Updates:
    """A batch of update statements ``(data, time, diff)``; data must be hashable."""

    updates: tuple[tuple[Hashable, Time, int], ...]


@dataclass(frozen=True, slots=True)
class Progress:
    """The number of distinct updates at each time in ``[lower, upper)`` that has any."""

    lower: Antichain
    upper: Antichain
    counts: tuple[tuple[Time, int], ...]

    def validate(self) -> Progress:
        """Check the statement is well formed; return it."""
        try:
            return self._validate()
        except (TypeError, ValueError):
            times = (*self.lower, *self.upper, *(t for t, _ in self.counts))
            if len({len(t) if isinstance(t, Product) else -1 for t in times}) > 1:
                raise InvalidTime(
                    f"progress statement [{self.lower}, {self.upper}) mixes times of different "
                    f"lattices: {[time_to_json(t) for t in times]}"
                ) from None
            raise

    def _validate(self) -> Progress:
        if not self.lower <= self.upper:
            raise ProtocolViolation(
                f"progress statement with lower {self.lower} beyond upper {self.upper}"
            )
        if self._ints_valid():
            return self
        seen: set[Time] = set()  # the reference's checks, which name the first wrong entry
        for t, c in self.counts:
            if t in seen:
                raise ProtocolViolation(
                    f"progress statement [{self.lower}, {self.upper}) "
                    f"lists time {time_to_json(t)} twice"
                )
            seen.add(t)
            if c < 0:
                raise ProtocolViolation(f"progress count {c} at time {time_to_json(t)} is negative")
            if not self.lower.contains_interval(t, self.upper):
                raise ProtocolViolation(
                    f"progress statement [{self.lower}, {self.upper}) "
                    f"counts time {time_to_json(t)}, which lies outside it"
                )
        return self

    def _ints_valid(self) -> bool:
        """Whether the counts are of int times, each listed once, none negative, all inside
        ``[lower, upper)``, checked with numpy; False also when that cannot tell."""
        lower, upper = self.lower.elements, self.upper.elements
        if len(self.counts) < 64 or len(lower) != 1 or len(upper) > 1:
            return False
        if not all(type(t) is int for t in (*lower, *upper)):
            return False
        try:
            pairs = np.array(self.counts)
        except (ValueError, OverflowError):
            return False
        if pairs.dtype.kind != "i" or pairs.ndim != 2 or pairs.shape[1] != 2:
            return False
        times = np.sort(pairs[:, 0])
        inside = times[0] >= lower[0] and (not upper or times[-1] < upper[0])
        return bool(inside and (pairs[:, 1] >= 0).all() and (np.diff(times) > 0).all())


@dataclass(frozen=True)
class UpdateTable:
    """Update statements as one Arrow table: the data columns, ``_time`` (int64) and ``_diff``
    (int64). The columnar form of :class:`Updates`, read by
    :class:`~changeflow.cdc.columnar.ColumnarReader` (the reference reader takes tuples)."""

    table: pa.Table


Message = Union[Updates, Progress]  # noqa: UP007


def freeze(value: Any) -> Hashable:
    """A nested value (lists, records) as hashable tuples, so it can be a piece of data."""
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, freeze(v)) for k, v in value.items())
    return value


@contextmanager
def without_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of acyclic tuples are made.

    Update triples hold no cycles, but each allocation counts towards a collection that would
    traverse every live tuple again; pausing it makes bulk decoding several times faster.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
