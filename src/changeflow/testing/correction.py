"""The test oracle of the Correction buffer: a dict from time to consolidated updates.

Same operations as :class:`changeflow.compute.correction.Correction`, on Python triples
``(data, time, diff)``; the buffer is tested and measured against it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable

from changeflow.errors import FrontierViolation

Update = tuple[Hashable, int, int]


class CorrectionReference:
    """Updates by time; ``since`` clamps times on insert and advances them on demand."""

    def __init__(self) -> None:
        self.by_time: dict[int, dict[Hashable, int]] = defaultdict(dict)
        self.since: int | None = 0  # None: the empty frontier, nothing is kept

    def insert(self, updates: Iterable[Update]) -> None:
        if self.since is None:
            return
        for data, time, diff in updates:
            slot = self.by_time[max(time, self.since)]
            total = slot.get(data, 0) + diff
            if total:
                slot[data] = total
            else:
                slot.pop(data, None)

    def insert_negated(self, updates: Iterable[Update]) -> None:
        self.insert((d, t, -r) for d, t, r in updates)

    def updates_before(self, upper: int | None) -> list[Update]:
        """Consolidated updates at times before ``upper`` (None: all), in (time, data) order."""
        out = []
        for time in sorted(self.by_time):
            if upper is not None and time >= upper:
                break
            out += [(d, time, r) for d, r in sorted(self.by_time[time].items())]
        return out

    def advance_since(self, since: int | None) -> None:
        if self.since is None or (since is not None and since < self.since):
            raise FrontierViolation(f"since cannot move back from {self.since} to {since}")
        self.since = since
        if since is None:
            self.by_time.clear()
            return
        stale = [t for t in self.by_time if t < since]
        moved = [(d, since, r) for t in stale for d, r in self.by_time.pop(t).items()]
        self.insert(moved)

    def consolidate_at_since(self) -> None:
        """Nothing to do: the dict is always consolidated."""

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_time.values())
