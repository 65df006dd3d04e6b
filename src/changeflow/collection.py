"""The plain-Python reference model: updates, collection versions and the partial TVC.

An update is a triple ``(data, time, diff)``; a collection version is a ``{data: multiplicity}``
dict without zeros. :class:`PTVC` is the formalism's ``[updates, since, upper]`` with ``append``,
``compact`` and ``read``; every optimised path is tested against it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from changeflow.errors import FrontierViolation
from changeflow.time import Antichain, Time, advance_by, check_time, sort_key

Update = tuple[Hashable, Time, int]
CollectionVersion = dict[Hashable, int]


def consolidate(updates: Iterable[Update]) -> list[Update]:
    """Sum diffs per ``(data, time)`` and drop zeros, in ``(time, data)`` order."""
    sums: dict[tuple[Hashable, Time], int] = defaultdict(int)
    for data, time, diff in updates:
        sums[(data, time)] += diff
    out = [(d, t, r) for (d, t), r in sums.items() if r]
    out.sort(key=lambda u: (sort_key(u[1]), repr(u[0])))
    return out


def read(updates: Iterable[Update], t: Time) -> CollectionVersion:
    """The collection version at ``t``: every update at a time at or before ``t``, applied."""
    version: dict[Hashable, int] = defaultdict(int)
    for data, time, diff in updates:
        if time <= t:
            version[data] += diff
    return {d: m for d, m in version.items() if m}


def diff(t: Time, cv1: CollectionVersion, cv2: CollectionVersion) -> list[Update]:
    """The minimal updates at ``t`` that turn ``cv1`` into ``cv2``."""
    out = []
    for data in cv1.keys() | cv2.keys():
        delta = cv2.get(data, 0) - cv1.get(data, 0)
        if delta:
            out.append((data, t, delta))
    return out


@dataclass
class PTVC:
    """A partial TVC: updates that read correctly at times in ``[since, upper)``."""

    updates: list[Update] = field(default_factory=list)
    since: Antichain = field(default_factory=lambda: Antichain([0]))
    upper: Antichain = field(default_factory=lambda: Antichain([0]))
    name: str = "collection"

    @classmethod
    def empty(cls, minimum: Time = 0, name: str = "collection") -> PTVC:
        """The empty pTVC ``[{}, {t0}, {t0}]``."""
        return cls([], Antichain([minimum]), Antichain([minimum]), name)

    def append(self, updates: Iterable[Update], new_upper: Antichain) -> None:
        """Add every update in ``[upper, new_upper)`` and advance ``upper`` to ``new_upper``."""
        if not self.upper <= new_upper:
            raise FrontierViolation(
                f"{self.name}: append would move upper back from {self.upper} to {new_upper}"
            )
        batch = list(updates)
        for data, time, _ in batch:
            check_time(time)
            if not self.upper.contains_interval(time, new_upper):
                raise FrontierViolation(
                    f"{self.name}: update {data!r} at time {time!r} is outside "
                    f"[upper {self.upper}, new upper {new_upper})"
                )
        self.updates = consolidate([*self.updates, *batch])
        self.upper = new_upper

    def compact(self, new_since: Antichain) -> None:
        """Advance ``since`` to ``new_since``, sliding times forward with ``advance_by``."""
        if not self.since <= new_since:
            raise FrontierViolation(
                f"{self.name}: compaction would move since back from {self.since} to {new_since}"
            )
        if not new_since:
            self.updates = []
        else:
            self.updates = consolidate((d, advance_by(t, new_since), r) for d, t, r in self.updates)
        self.since = new_since

    def read(self, t: Time) -> CollectionVersion:
        """The collection version at ``t``; an error unless ``t`` is in ``[since, upper)``."""
        if not self.since.contains_interval(t, self.upper):
            raise FrontierViolation(
                f"{self.name}: cannot read at time {t!r}: "
                f"readable times are [since {self.since}, upper {self.upper})"
            )
        return read(self.updates, t)

    def distinct_times(self) -> int:
        return len({t for _, t, _ in self.updates})
